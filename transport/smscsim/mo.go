package smscsim

import (
	"errors"
	"strings"
	"time"

	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"

	"github.com/heraldhq/herald/template"
)

// Limits of one mobile-originated part's user data: 160 GSM-7 septets or
// 70 UCS-2 characters alone, 153 or 67 after a concatenation header.
const (
	moGSMSingle, moGSMPart = 160, 153
	moUCSSingle, moUCSPart = 70, 67
)

// SendMO sends an SMS from the handset from to the sender id to, as a
// person would reply: deliver_sm (esm_class 0) to a receiving session,
// GSM-7 when the text allows and UCS-2 otherwise, in several parts with a
// concatenation header (8-bit reference) when it does not fit in one. Each
// part is sent again, like a receipt, until the session acknowledges it.
// It fails when the text is empty or needs more than 255 parts.
func (s *Server) SendMO(from, to, text string) error {
	if text == "" {
		return errors.New("smscsim: an empty text")
	}
	var parts [][]byte
	coding := data.GSM7BIT
	if enc, err := template.EncodeGSM7(text); err == nil {
		parts = splitSeptets(enc, moGSMSingle, moGSMPart)
	} else {
		coding = data.UCS2
		parts = splitUnits(text, moUCSSingle, moUCSPart)
	}
	if len(parts) > 255 {
		return errors.New("smscsim: a text of more than 255 parts")
	}
	var src, dst pdu.Address
	if err := src.SetAddress(strings.TrimPrefix(from, "+")); err != nil {
		return err
	}
	src.SetTon(data.GSM_TON_INTERNATIONAL)
	src.SetNpi(data.GSM_NPI_E164)
	if err := dst.SetAddress(to); err != nil {
		return err
	}
	ref := byte(s.moRef.Add(1))
	now := time.Now()
	for i, p := range parts {
		r := &receipt{handset: src, sender: dst, mo: p, coding: coding}
		if len(parts) > 1 {
			r.udh = []byte{5, 0, 3, ref, byte(len(parts)), byte(i + 1)}
		}
		s.sched.add(r, now)
	}
	s.sched.wake()
	return nil
}

// splitSeptets cuts GSM-7 septets into parts, never between an escape and
// the character it announces.
func splitSeptets(b []byte, single, part int) [][]byte {
	if len(b) <= single {
		return [][]byte{b}
	}
	var out [][]byte
	for len(b) > 0 {
		n := min(part, len(b))
		if n < len(b) && b[n-1] == 0x1B {
			n--
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// splitUnits encodes text as UCS-2 parts, never inside a surrogate pair.
func splitUnits(text string, single, part int) [][]byte {
	b := template.EncodeUCS2(text)
	if len(b) <= 2*single {
		return [][]byte{b}
	}
	var out [][]byte
	for len(b) > 0 {
		n := min(2*part, len(b))
		if n < len(b) && b[n-2] >= 0xD8 && b[n-2] <= 0xDB { // a high surrogate last
			n -= 2
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}
