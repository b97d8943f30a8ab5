package template

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// Encoding is the character encoding of an SMS.
type Encoding string

// SMS encodings.
const (
	// EncodingGSM7 is the GSM 03.38 7-bit default alphabet with its
	// extension table (data_coding 0 in SMPP).
	EncodingGSM7 Encoding = "GSM-7"
	// EncodingUCS2 is UCS-2, sent as UTF-16BE so that characters outside
	// the Basic Multilingual Plane travel as surrogate pairs (data_coding 8).
	EncodingUCS2 Encoding = "UCS-2"
)

// Segment sizes: a single SMS carries 140 octets, 160 GSM-7 septets or 70
// UTF-16 code units; each part of a concatenated SMS gives 6 octets to the
// concatenation header and carries 153 septets or 67 code units.
const (
	GSM7SingleSeptets = 160
	GSM7PartSeptets   = 153
	UCS2SingleUnits   = 70
	UCS2PartUnits     = 67
)

// Segmentation is how a text travels as SMS.
type Segmentation struct {
	// Encoding is GSM-7 when every character is in the GSM 03.38 basic or
	// extension table, else UCS-2.
	Encoding Encoding
	// Units is the length of the whole text in septets (GSM-7, an
	// extension character counting two) or UTF-16 code units (UCS-2).
	Units int
	// Segments is the number of SMS billed: len(Parts).
	Segments int
	// Parts are the texts of the segments, in order; concatenated they
	// give the original text. An escape pair (GSM-7) or a surrogate pair
	// (UCS-2) is never split between two parts.
	Parts []string
}

// Segment chooses the encoding of text and splits it into SMS segments:
// one segment of up to 160 septets (70 code units), or parts of up to 153
// septets (67 code units). The empty text is one empty segment.
func Segment(text string) Segmentation {
	enc, units := measure(text)
	single, perPart := GSM7SingleSeptets, GSM7PartSeptets
	if enc == EncodingUCS2 {
		single, perPart = UCS2SingleUnits, UCS2PartUnits
	}
	if units <= single {
		return Segmentation{Encoding: enc, Units: units, Segments: 1, Parts: []string{text}}
	}
	parts := make([]string, 0, (units+perPart-1)/perPart+1)
	start, cur := 0, 0
	for i, r := range text {
		w := unitWidth(enc, r)
		if cur+w > perPart {
			parts = append(parts, text[start:i])
			start, cur = i, 0
		}
		cur += w
	}
	parts = append(parts, text[start:])
	return Segmentation{Encoding: enc, Units: units, Segments: len(parts), Parts: parts}
}

// PerSegment is how many septets (GSM-7) or UTF-16 units (UCS-2) one of
// the segments holds: 160 or 70 for a text that fits one, 153 or 67 for
// the parts of a longer one.
func (s Segmentation) PerSegment() int {
	switch {
	case s.Encoding == EncodingUCS2 && s.Segments > 1:
		return UCS2PartUnits
	case s.Encoding == EncodingUCS2:
		return UCS2SingleUnits
	case s.Segments > 1:
		return GSM7PartSeptets
	}
	return GSM7SingleSeptets
}

// Left is the room left in the last segment, in the text's own units,
// before another segment is needed.
func (s Segmentation) Left() int {
	used := 0
	if len(s.Parts) > 0 {
		for _, r := range s.Parts[len(s.Parts)-1] {
			used += unitWidth(s.Encoding, r)
		}
	}
	return s.PerSegment() - used
}

// CountSegments returns the encoding and the number of segments of text,
// as Segment does, without allocating.
func CountSegments(text string) (Encoding, int) {
	enc, units := measure(text)
	single, perPart := GSM7SingleSeptets, GSM7PartSeptets
	if enc == EncodingUCS2 {
		single, perPart = UCS2SingleUnits, UCS2PartUnits
	}
	if units <= single {
		return enc, 1
	}
	n, cur := 1, 0
	for _, r := range text {
		w := unitWidth(enc, r)
		if cur+w > perPart {
			n++
			cur = 0
		}
		cur += w
	}
	return enc, n
}

// measure returns the encoding of s and its length in that encoding's
// units.
func measure(s string) (Encoding, int) {
	septets, units16 := 0, 0
	gsm := true
	for _, r := range s {
		if gsm {
			if _, ext, ok := gsm7Code(r); !ok {
				gsm = false
			} else if ext {
				septets += 2
			} else {
				septets++
			}
		}
		units16 += utf16Len(r)
	}
	if gsm {
		return EncodingGSM7, septets
	}
	return EncodingUCS2, units16
}

func unitWidth(enc Encoding, r rune) int {
	if enc == EncodingUCS2 {
		return utf16Len(r)
	}
	if _, ext, _ := gsm7Code(r); ext {
		return 2
	}
	return 1
}

func utf16Len(r rune) int {
	if r > 0xFFFF {
		return 2
	}
	return 1
}

// IsGSM7 reports whether every character of s is in the GSM 03.38 basic
// table or its extension table (`^ { } \ [ ~ ] | €` and form feed).
func IsGSM7(s string) bool {
	for _, r := range s {
		if _, _, ok := gsm7Code(r); !ok {
			return false
		}
	}
	return true
}

// gsmEscape introduces a character of the extension table.
const gsmEscape = 0x1B

// EncodeGSM7 encodes s as unpacked GSM-7: one septet per byte, an
// extension character as the escape 0x1B followed by its code. It fails on
// the first character outside the GSM 03.38 tables.
func EncodeGSM7(s string) ([]byte, error) {
	out := make([]byte, 0, len(s)+8)
	for i, r := range s {
		code, ext, ok := gsm7Code(r)
		if !ok {
			return nil, fmt.Errorf("encode GSM-7: character %q at byte %d is not in the GSM 03.38 alphabet", r, i)
		}
		if ext {
			out = append(out, gsmEscape)
		}
		out = append(out, code)
	}
	return out, nil
}

// DecodeGSM7 decodes unpacked GSM-7 septets (as EncodeGSM7 makes them).
// An escape followed by a code outside the extension table decodes as the
// basic character of that code, as GSM 03.38 asks; a byte over 0x7F, a
// trailing escape and two escapes in a row are errors.
func DecodeGSM7(septets []byte) (string, error) {
	out := make([]byte, 0, len(septets)+len(septets)/2)
	for i := 0; i < len(septets); i++ {
		c := septets[i]
		if c > 0x7F {
			return "", fmt.Errorf("decode GSM-7: byte 0x%02X at %d is not a septet", c, i)
		}
		if c == gsmEscape {
			i++
			if i == len(septets) {
				return "", fmt.Errorf("decode GSM-7: escape at the end of the text")
			}
			c = septets[i]
			if c > 0x7F || c == gsmEscape {
				return "", fmt.Errorf("decode GSM-7: byte 0x%02X at %d does not follow an escape", c, i)
			}
			if r, ok := gsm7ExtRune(c); ok {
				out = utf8.AppendRune(out, r)
				continue
			}
		}
		out = utf8.AppendRune(out, gsm7BasicRune(c))
	}
	return string(out), nil
}

// EncodeUCS2 encodes s as UTF-16BE (UCS-2 with surrogate pairs for
// characters beyond U+FFFF). Invalid UTF-8 is encoded as U+FFFD.
func EncodeUCS2(s string) []byte {
	out := make([]byte, 0, 2*len(s))
	for _, r := range s {
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			out = append(out, byte(r1>>8), byte(r1), byte(r2>>8), byte(r2))
			continue
		}
		out = append(out, byte(r>>8), byte(r))
	}
	return out
}

// DecodeUCS2 decodes UTF-16BE bytes. An odd length is an error; an
// unpaired surrogate decodes as U+FFFD.
func DecodeUCS2(b []byte) (string, error) {
	if len(b)%2 != 0 {
		return "", fmt.Errorf("decode UCS-2: odd length %d", len(b))
	}
	units := make([]uint16, len(b)/2)
	for i := range units {
		units[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	return string(utf16.Decode(units)), nil
}

// gsmBasic is the GSM 03.38 basic table in code order; index 0x1B (the
// escape) holds a NUL that no text character maps to.
const gsmBasic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x00ÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"

// gsm7BasicRune returns the character of a basic-table code (0x00-0x7F).
func gsm7BasicRune(code byte) rune {
	i := 0
	for _, r := range gsmBasic {
		if i == int(code) {
			return r
		}
		i++
	}
	return utf8.RuneError
}

// gsm7ExtRune returns the character of an extension-table code.
func gsm7ExtRune(code byte) (rune, bool) {
	switch code {
	case 0x0A:
		return '\f', true
	case 0x14:
		return '^', true
	case 0x28:
		return '{', true
	case 0x29:
		return '}', true
	case 0x2F:
		return '\\', true
	case 0x3C:
		return '[', true
	case 0x3D:
		return '~', true
	case 0x3E:
		return ']', true
	case 0x40:
		return '|', true
	case 0x65:
		return '€', true
	}
	return 0, false
}

// gsm7Code returns the GSM 03.38 code of r, whether it is in the
// extension table (sent after an escape), and whether r can be encoded.
func gsm7Code(r rune) (code byte, ext bool, ok bool) {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return byte(r), false, true
	}
	switch r {
	case ' ', '!', '"', '#', '%', '&', '\'', '(', ')', '*', '+', ',', '-', '.', '/',
		':', ';', '<', '=', '>', '?', '\n', '\r':
		return byte(r), false, true
	case '@':
		return 0x00, false, true
	case '£':
		return 0x01, false, true
	case '$':
		return 0x02, false, true
	case '¥':
		return 0x03, false, true
	case 'è':
		return 0x04, false, true
	case 'é':
		return 0x05, false, true
	case 'ù':
		return 0x06, false, true
	case 'ì':
		return 0x07, false, true
	case 'ò':
		return 0x08, false, true
	case 'Ç':
		return 0x09, false, true
	case 'Ø':
		return 0x0B, false, true
	case 'ø':
		return 0x0C, false, true
	case 'Å':
		return 0x0E, false, true
	case 'å':
		return 0x0F, false, true
	case 'Δ':
		return 0x10, false, true
	case '_':
		return 0x11, false, true
	case 'Φ':
		return 0x12, false, true
	case 'Γ':
		return 0x13, false, true
	case 'Λ':
		return 0x14, false, true
	case 'Ω':
		return 0x15, false, true
	case 'Π':
		return 0x16, false, true
	case 'Ψ':
		return 0x17, false, true
	case 'Σ':
		return 0x18, false, true
	case 'Θ':
		return 0x19, false, true
	case 'Ξ':
		return 0x1A, false, true
	case 'Æ':
		return 0x1C, false, true
	case 'æ':
		return 0x1D, false, true
	case 'ß':
		return 0x1E, false, true
	case 'É':
		return 0x1F, false, true
	case '¤':
		return 0x24, false, true
	case '¡':
		return 0x40, false, true
	case 'Ä':
		return 0x5B, false, true
	case 'Ö':
		return 0x5C, false, true
	case 'Ñ':
		return 0x5D, false, true
	case 'Ü':
		return 0x5E, false, true
	case '§':
		return 0x5F, false, true
	case '¿':
		return 0x60, false, true
	case 'ä':
		return 0x7B, false, true
	case 'ö':
		return 0x7C, false, true
	case 'ñ':
		return 0x7D, false, true
	case 'ü':
		return 0x7E, false, true
	case 'à':
		return 0x7F, false, true
	case '\f':
		return 0x0A, true, true
	case '^':
		return 0x14, true, true
	case '{':
		return 0x28, true, true
	case '}':
		return 0x29, true, true
	case '\\':
		return 0x2F, true, true
	case '[':
		return 0x3C, true, true
	case '~':
		return 0x3D, true, true
	case ']':
		return 0x3E, true, true
	case '|':
		return 0x40, true, true
	case '€':
		return 0x65, true, true
	}
	return 0, false, false
}
