package template_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/template"
)

// gsmBasicTable is GSM 03.38's basic table, code by code; "\x1b" marks the
// escape, which no text character encodes to.
var gsmBasicTable = []rune("@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà")

// gsmExtTable is the extension table: character to code after the escape.
var gsmExtTable = map[rune]byte{'\f': 0x0A, '^': 0x14, '{': 0x28, '}': 0x29, '\\': 0x2F,
	'[': 0x3C, '~': 0x3D, ']': 0x3E, '|': 0x40, '€': 0x65}

func TestGSM7Tables(t *testing.T) {
	require.Len(t, gsmBasicTable, 128)
	for code, r := range gsmBasicTable {
		if code == 0x1B {
			require.False(t, template.IsGSM7(string(r)), "the escape itself is not a text character")
			continue
		}
		require.True(t, template.IsGSM7(string(r)), "%q", r)
		enc, err := template.EncodeGSM7(string(r))
		require.NoError(t, err)
		require.Equal(t, []byte{byte(code)}, enc, "%q", r)
		dec, err := template.DecodeGSM7(enc)
		require.NoError(t, err)
		require.Equal(t, string(r), dec)
	}
	for r, code := range gsmExtTable {
		require.True(t, template.IsGSM7(string(r)), "%q", r)
		enc, err := template.EncodeGSM7(string(r))
		require.NoError(t, err)
		require.Equal(t, []byte{0x1B, code}, enc, "%q", r)
		dec, err := template.DecodeGSM7(enc)
		require.NoError(t, err)
		require.Equal(t, string(r), dec)
	}
}

func TestIsGSM7(t *testing.T) {
	cases := []struct {
		text string
		want bool
	}{
		{"", true},
		{"Hello, World! 100% @home #1 $5 (ok) _x_ ;:'\"?", true},
		{"Ünïcödé? no: ï is not GSM", false},
		{"Üñ Äö ß É ¿¡ § ¤ £ ¥", true},
		{"ΔΦΓΛΩΠΨΣΘΞ", true},
		{"Price: 5€ [a] {b} ~c^ |d| \\e\f", true},
		{"`backtick`", false},
		{"Привет", false},
		{"smile 😀", false},
		{"tab\there", false},
		{"ç lower-case c cedilla", false},
		{"Ç upper-case", true},
		{"\x1b", false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, template.IsGSM7(tc.text), "%q", tc.text)
	}
}

// units counts a text independently of the package: septets (two per
// extension character) or UTF-16 code units.
func units(enc template.Encoding, s string) int {
	n := 0
	for _, r := range s {
		switch {
		case enc == template.EncodingUCS2:
			n += utf16.RuneLen(r)
		case gsmExtTable[r] != 0:
			n += 2
		default:
			n++
		}
	}
	return n
}

func TestSegment(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	cyr := func(n int) string { return strings.Repeat("я", n) }
	euro := func(n int) string { return strings.Repeat("€", n) }
	smile := func(n int) string { return strings.Repeat("😀", n) }
	cases := []struct {
		name  string
		text  string
		enc   template.Encoding
		units int
		parts []int // code points per part
	}{
		{"empty", "", template.EncodingGSM7, 0, []int{0}},
		{"gsm 1", "a", template.EncodingGSM7, 1, []int{1}},
		{"gsm 160", a(160), template.EncodingGSM7, 160, []int{160}},
		{"gsm 161", a(161), template.EncodingGSM7, 161, []int{153, 8}},
		{"gsm 306", a(306), template.EncodingGSM7, 306, []int{153, 153}},
		{"gsm 307", a(307), template.EncodingGSM7, 307, []int{153, 153, 1}},
		{"gsm 1600", a(1600), template.EncodingGSM7, 1600, []int{153, 153, 153, 153, 153, 153, 153, 153, 153, 153, 70}},
		{"extension counts two: 80 fit", euro(80), template.EncodingGSM7, 160, []int{80}},
		{"extension counts two: 81 split", euro(81), template.EncodingGSM7, 162, []int{76, 5}},
		{"escape pair never split", a(152) + "€" + a(10), template.EncodingGSM7, 164, []int{152, 11}},
		{"escape pair fills a part", a(151) + "€" + a(10), template.EncodingGSM7, 163, []int{152, 10}},
		{"ucs2 70", cyr(70), template.EncodingUCS2, 70, []int{70}},
		{"ucs2 71", cyr(71), template.EncodingUCS2, 71, []int{67, 4}},
		{"ucs2 134", cyr(134), template.EncodingUCS2, 134, []int{67, 67}},
		{"ucs2 135", cyr(135), template.EncodingUCS2, 135, []int{67, 67, 1}},
		{"one non-gsm char makes ucs2", a(100) + "я", template.EncodingUCS2, 101, []int{67, 34}},
		{"extension char is one unit in ucs2", euro(69) + "я", template.EncodingUCS2, 70, []int{70}},
		{"surrogate pairs count two: 35 fit", smile(35), template.EncodingUCS2, 70, []int{35}},
		{"surrogate pairs count two: 36 split", smile(36), template.EncodingUCS2, 72, []int{33, 3}},
		{"surrogate pair never split", cyr(66) + "😀" + cyr(5), template.EncodingUCS2, 73, []int{66, 6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seg := template.Segment(tc.text)
			require.Equal(t, tc.enc, seg.Encoding)
			require.Equal(t, tc.units, seg.Units)
			require.Equal(t, len(tc.parts), seg.Segments)
			require.Len(t, seg.Parts, seg.Segments)
			got := make([]int, len(seg.Parts))
			for i, p := range seg.Parts {
				got[i] = utf8.RuneCountInString(p)
				limit := map[template.Encoding][2]int{template.EncodingGSM7: {160, 153}, template.EncodingUCS2: {70, 67}}[seg.Encoding]
				max := limit[1]
				if seg.Segments == 1 {
					max = limit[0]
				}
				require.LessOrEqual(t, units(seg.Encoding, p), max, "part %d", i)
			}
			require.Equal(t, tc.parts, got)
			require.Equal(t, tc.text, strings.Join(seg.Parts, ""))

			enc, n := template.CountSegments(tc.text)
			require.Equal(t, tc.enc, enc)
			require.Equal(t, seg.Segments, n)
		})
	}
}

func TestCountingDoesNotAllocate(t *testing.T) {
	long := strings.Repeat("Grüße aus Herald € ", 40)
	require.Zero(t, testing.AllocsPerRun(50, func() { template.CountSegments(long) }))
	require.Zero(t, testing.AllocsPerRun(50, func() { template.IsGSM7(long) }))
	almost := long + "{{x} {{ y}} {{}}"
	require.Zero(t, testing.AllocsPerRun(50, func() { template.HasPlaceholders(almost) }))
}

func TestEncodeGSM7(t *testing.T) {
	cases := []struct {
		text string
		want []byte
	}{
		{"", []byte{}},
		{"@£$", []byte{0x00, 0x01, 0x02}},
		{"Hi!", []byte{'H', 'i', '!'}},
		{"5€", []byte{'5', 0x1B, 0x65}},
		{"{x}", []byte{0x1B, 0x28, 'x', 0x1B, 0x29}},
		{"_§¿à", []byte{0x11, 0x5F, 0x60, 0x7F}},
		{"a\nb\rc\fd", []byte{'a', 0x0A, 'b', 0x0D, 'c', 0x1B, 0x0A, 'd'}},
	}
	for _, tc := range cases {
		got, err := template.EncodeGSM7(tc.text)
		require.NoError(t, err, "%q", tc.text)
		require.Equal(t, tc.want, got, "%q", tc.text)
		back, err := template.DecodeGSM7(got)
		require.NoError(t, err)
		require.Equal(t, tc.text, back)
	}
	for _, bad := range []string{"я", "a`b", "😀", "\t"} {
		_, err := template.EncodeGSM7(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestDecodeGSM7(t *testing.T) {
	got, err := template.DecodeGSM7([]byte{0x1B, 'A'})
	require.NoError(t, err)
	require.Equal(t, "A", got, "an unknown extension code falls back to the basic table")
	for _, bad := range [][]byte{{0x80}, {'a', 0x1B}, {0x1B, 0x1B, 'a'}, {0x1B, 0x90}} {
		_, err := template.DecodeGSM7(bad)
		require.Error(t, err, "% X", bad)
	}
}

func TestEncodeUCS2(t *testing.T) {
	cases := []struct {
		text string
		want []byte
	}{
		{"", []byte{}},
		{"A", []byte{0x00, 0x41}},
		{"я€", []byte{0x04, 0x4F, 0x20, 0xAC}},
		{"😀", []byte{0xD8, 0x3D, 0xDE, 0x00}},
		{"a😀b", []byte{0x00, 0x61, 0xD8, 0x3D, 0xDE, 0x00, 0x00, 0x62}},
	}
	for _, tc := range cases {
		got := template.EncodeUCS2(tc.text)
		require.Equal(t, tc.want, got, "%q", tc.text)
		back, err := template.DecodeUCS2(got)
		require.NoError(t, err)
		require.Equal(t, tc.text, back)
	}
	require.Equal(t, []byte{0xFF, 0xFD}, template.EncodeUCS2("\xff"), "invalid UTF-8 becomes U+FFFD")
	_, err := template.DecodeUCS2([]byte{0x00})
	require.Error(t, err)
}

func ExampleSegment() {
	for _, text := range []string{
		"Your code is 4711.",
		strings.Repeat("Herald ", 23) + "!",
		"Ваш код: 4711",
		"Price: 10€ " + strings.Repeat("x", 150),
	} {
		seg := template.Segment(text)
		fmt.Printf("%s, %d units, %d segment(s):", seg.Encoding, seg.Units, seg.Segments)
		for _, p := range seg.Parts {
			fmt.Printf(" %d", utf8.RuneCountInString(p))
		}
		fmt.Println(" characters")
	}
	// Output:
	// GSM-7, 18 units, 1 segment(s): 18 characters
	// GSM-7, 162 units, 2 segment(s): 153 9 characters
	// UCS-2, 13 units, 1 segment(s): 13 characters
	// GSM-7, 162 units, 2 segment(s): 152 9 characters
}

// TestSegmentationRoom: the room of a segment and what is left in the last
// one, in the text's own units: a GSM-7 extension character counts two in
// a GSM-7 text and one in a UCS-2 text, whose last part may hold only
// GSM-7 characters.
func TestSegmentationRoom(t *testing.T) {
	for _, c := range []struct {
		text      string
		per, left int
	}{
		{"", 160, 160},
		{strings.Repeat("a", 160), 160, 0},
		{strings.Repeat("a", 161), 153, 145},
		{strings.Repeat("€", 81), 153, 143}, // 76 in the first part, 5 (10 septets) in the last
		{"Привет", 70, 64},
		{strings.Repeat("ж", 67) + "{{}}", 67, 63}, // the braces are one unit each in UCS-2
	} {
		seg := template.Segment(c.text)
		if seg.PerSegment() != c.per || seg.Left() != c.left {
			t.Errorf("%q: PerSegment %d, Left %d; want %d, %d", c.text, seg.PerSegment(), seg.Left(), c.per, c.left)
		}
	}
}
