package smpp

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/template"
)

// The TLVs of a message's segments (SMPP 3.4, 5.3.2.22-24).
const (
	tagSarMsgRefNum     = 0x020C
	tagSarTotalSegments = 0x020E
	tagSarSegmentSeqnum = 0x020F
)

// The information elements of a concatenated message in a user data
// header: with an 8-bit and with a 16-bit reference.
const (
	ieConcat8  = 0x00
	ieConcat16 = 0x08
)

// inboundOf reads a deliver_sm that is not a receipt: the sender, the
// destination, its part of a concatenated message (from the user data
// header or the sar_ TLVs), and its text decoded from its data coding.
func inboundOf(d *pdu.DeliverSM, now time.Time) delivery.InboundPart {
	p := delivery.InboundPart{From: d.SourceAddr.Address(), To: d.DestAddr.Address(), Count: 1, Seq: 1, At: now}
	raw, _ := d.Message.GetMessageData()
	udh := d.Message.UDH()
	if f, ok := d.OptionalParameters[pdu.TagMessagePayload]; ok && len(f.Data) > 0 {
		raw = f.Data
		udh = nil
		if d.EsmClass&data.SM_UDH_GSM != 0 { // the header is in the payload
			var h pdu.UDH
			if n, err := h.UnmarshalBinary(raw); err == nil && n <= len(raw) {
				udh, raw = h, raw[n:]
			}
		}
	}
	if ref, count, seq, ok := concatOf(udh); ok {
		p.Ref, p.Count, p.Seq = ref, count, seq
	} else if ref, count, seq, ok := sarOf(d); ok {
		p.Ref, p.Count, p.Seq = ref, count, seq
	}
	var coding byte
	if enc := d.Message.Encoding(); enc != nil {
		coding = enc.DataCoding()
	}
	p.Text = decodeMO(coding, raw)
	return p
}

// concatOf reads the concatenation element of a user data header.
func concatOf(h pdu.UDH) (ref, count, seq int, ok bool) {
	if ie, found := h.FindInfoElement(ieConcat16); found && len(ie.Data) == 4 {
		return int(ie.Data[0])<<8 | int(ie.Data[1]), int(ie.Data[2]), int(ie.Data[3]), true
	}
	if ie, found := h.FindInfoElement(ieConcat8); found && len(ie.Data) == 3 {
		return int(ie.Data[0]), int(ie.Data[1]), int(ie.Data[2]), true
	}
	return 0, 0, 0, false
}

// sarOf reads the sar_ TLVs.
func sarOf(d *pdu.DeliverSM) (ref, count, seq int, ok bool) {
	r, okR := d.OptionalParameters[pdu.Tag(tagSarMsgRefNum)]
	c, okC := d.OptionalParameters[pdu.Tag(tagSarTotalSegments)]
	s, okS := d.OptionalParameters[pdu.Tag(tagSarSegmentSeqnum)]
	if !okR || !okC || !okS || len(r.Data) != 2 || len(c.Data) != 1 || len(s.Data) != 1 {
		return 0, 0, 0, false
	}
	return int(r.Data[0])<<8 | int(r.Data[1]), int(c.Data[0]), int(s.Data[0]), true
}

// decodeMO decodes a mobile-originated text by its SMPP data_coding: the
// SMSC's default alphabet (GSM-7, one septet a byte), IA5 (ASCII, or GSM-7
// when it carries GSM control codes),
// Latin-1 and UCS-2, and the GSM message-class codings (0xF0-0xFF). Any
// other coding, or bytes its alphabet does not have, is read as Latin-1,
// which keeps every byte visible.
func decodeMO(coding byte, raw []byte) string {
	switch {
	case coding == data.GSM7BITCoding, coding&0xF4 == 0xF0:
		if s, err := template.DecodeGSM7(raw); err == nil {
			return s
		}
	case coding == data.ASCIICoding:
		// Some SMSCs send the GSM alphabet under IA5: control bytes (the
		// escape of € and [, @ as 0x00) give it away.
		if hasControl(raw) {
			if s, err := template.DecodeGSM7(raw); err == nil {
				return s
			}
		}
		if isASCII(raw) {
			return string(raw)
		}
	case coding == data.UCS2Coding:
		if s, err := template.DecodeUCS2(raw); err == nil {
			return s
		}
	}
	return latin1(raw)
}

// hasControl reports whether b holds a control byte other than tab, line
// feed and carriage return.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return true
		}
	}
	return false
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// latin1 reads b as ISO-8859-1: each byte is the character of its code.
func latin1(b []byte) string {
	var s strings.Builder
	s.Grow(len(b) + len(b)/2)
	for _, c := range b {
		s.WriteRune(rune(c))
	}
	return s.String()
}
