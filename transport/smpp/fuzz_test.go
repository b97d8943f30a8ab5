package smpp_test

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/template"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"github.com/stretchr/testify/require"
)

// FuzzReadReceipt feeds arbitrary bytes to the session's reader as an
// SMSC would send them (the framing itself is smppwire's FuzzReadFrame).
// Properties: nothing panics reading a submit_sm_resp's id or a receipt;
// a deliver_sm read as a receipt has an id, a state, an err and a time.
func FuzzReadReceipt(f *testing.F) {
	sms, err := smpp.SubmitFrames(delivery.SMS{From: "Herald", To: "447700900000", Text: strings.Repeat("long text ", 40)})
	require.NoError(f, err)
	resp := pdu.NewSubmitSMResp().(*pdu.SubmitSMResp)
	resp.MessageID = "00000000002A"
	rcpt := deliverSM(3, data.SM_SMSC_DLV_RCPT_TYPE, "id:2A sub:001 dlvrd:001 submit date:2511221340 done date:2511221341 stat:DELIVRD err:000 text:hi")
	rcpt.RegisterOptionalParam(pdu.Field{Tag: pdu.TagReceiptedMessageID, Data: []byte("2A\x00")})
	rcpt.RegisterOptionalParam(pdu.Field{Tag: pdu.TagMessageStateOption, Data: []byte{2}})
	rcpt.RegisterOptionalParam(pdu.Field{Tag: pdu.TagNetworkErrorCode, Data: []byte{3, 0, 34}})
	f.Add(sms[0])
	f.Add(append(sms[1], sms[2]...))
	f.Add(smppwire.Encode(resp))
	f.Add(smppwire.Encode(rcpt))
	f.Add(smppwire.Encode(pdu.NewBindRequest(pdu.Transceiver).GetResponse()))
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bufio.NewReader(bytes.NewReader(stream))
		for range 64 {
			fr, err := smppwire.ReadFrame(r)
			if err != nil {
				return
			}
			p, err := fr.Decode()
			if err != nil {
				continue
			}
			if _, ok := p.(*pdu.SubmitSMResp); ok {
				_ = fr.CString()
			}
			if d, ok := p.(*pdu.DeliverSM); ok && smpp.IsReceipt(d.EsmClass) {
				rc, err := smpp.ReceiptOf(d, time.Unix(0, 0))
				if err == nil {
					require.NotEmpty(t, rc.ProviderID)
					require.NotEmpty(t, rc.State)
					require.NotEmpty(t, rc.Err)
					require.False(t, rc.At.IsZero())
				}
			}
		}
	})
}

// FuzzSubmitRoundTrip: every submit_sm Herald builds for a text reads back
// through the session's framing and gosmpp's decoder to the same
// addresses, sequence number, receipt request and concatenation header,
// encodes again to the same bytes, and its parts' user data decode and
// join to the text sent. A text Herald refuses is refused permanently.
func FuzzSubmitRoundTrip(f *testing.F) {
	f.Add("Herald", "447700900000", "hello")
	f.Add("Herald", "447700900000", strings.Repeat("Herald long GSM text. ", 19))
	f.Add("Shop", "1", strings.Repeat("a", 66)+"😀"+strings.Repeat("ü😀é", 30))
	f.Add("Shop", "12345678901234567890", strings.Repeat("a", 152)+"€"+strings.Repeat("{x}[y]~^|\\", 20))
	f.Add("", "447700900000", "x")
	f.Add("Herald", "44770090000a", "x")
	f.Fuzz(func(t *testing.T, from, to, text string) {
		frames, err := smpp.SubmitFrames(delivery.SMS{From: from, To: to, Text: text})
		if err != nil {
			require.True(t, delivery.IsPermanent(err), "%v", err)
			return
		}
		seg := template.Segment(text)
		require.Len(t, frames, len(seg.Parts))
		var joined []byte
		var ref byte
		for i, fr := range frames {
			rf, err := smppwire.ReadFrame(bufio.NewReader(bytes.NewReader(fr)))
			require.NoError(t, err)
			require.Equal(t, fr, rf.Raw)
			p, err := rf.Decode()
			require.NoError(t, err)
			sm, ok := p.(*pdu.SubmitSM)
			require.True(t, ok)
			require.Equal(t, int32(i+1), sm.GetSequenceNumber())
			require.Equal(t, from, sm.SourceAddr.Address())
			require.Equal(t, [2]byte{5, 0}, [2]byte{sm.SourceAddr.Ton(), sm.SourceAddr.Npi()})
			require.Equal(t, to, sm.DestAddr.Address())
			require.Equal(t, [2]byte{1, 1}, [2]byte{sm.DestAddr.Ton(), sm.DestAddr.Npi()})
			require.Equal(t, byte(1), sm.RegisteredDelivery)
			require.Equal(t, fr, smppwire.Encode(sm), "encode(decode(x)) == x")
			raw, err := sm.Message.GetMessageData()
			require.NoError(t, err)
			joined = append(joined, raw...)
			total, index, r, concat := sm.Message.UDH().GetConcatInfo()
			require.Equal(t, len(frames) > 1, concat)
			if concat {
				require.Equal(t, byte(len(frames)), total)
				require.Equal(t, byte(i+1), index)
				if i == 0 {
					ref = r
				}
				require.Equal(t, ref, r, "one reference for every part")
			}
		}
		var got string
		if seg.Encoding == template.EncodingUCS2 {
			got, err = template.DecodeUCS2(joined)
		} else {
			got, err = template.DecodeGSM7(joined)
		}
		require.NoError(t, err)
		if utf8.ValidString(text) {
			require.Equal(t, text, got)
		}
	})
}

// FuzzParseReceiptText: any text either is not a receipt or gives a
// normalised id, an err and a done date in the location asked for.
func FuzzParseReceiptText(f *testing.F) {
	for _, s := range []string{
		"id:0000000001AB sub:001 dlvrd:001 submit date:2511221340 done date:2511221341 stat:DELIVRD err:000 text:Hello",
		"ID:98765 SUB:001 DLVRD:000 SUBMIT DATE:251122134005 DONE DATE:251122134159 STAT:UNDELIV ERR:001 TEXT:x",
		"stat:REJECTD err:003 id:77 text:id:1 stat:DELIVRD",
		"id: stat:DELIVRD",
		"id :5 done  date : 2511221341",
		"id:\x00\t\n",
	} {
		f.Add(s)
	}
	loc := time.FixedZone("SMSC", 3*3600)
	f.Fuzz(func(t *testing.T, text string) {
		r, err := smpp.ParseReceiptText(text, loc)
		if err != nil {
			require.ErrorIs(t, err, smpp.ErrNotReceipt)
			return
		}
		require.NotEmpty(t, r.ProviderID)
		require.Equal(t, r.ProviderID, smpp.NormalizeMessageID(r.ProviderID), "the id is normalised")
		require.NotEmpty(t, r.Err)
		if !r.At.IsZero() {
			require.Equal(t, loc, r.At.Location())
		}
	})
}

// receiptStates are the states the simulator writes.
var receiptStates = []string{"DELIVRD", "UNDELIV", "EXPIRED", "REJECTD", "ENROUTE", "DELETED", "ACCEPTD", "UNKNOWN"}

// FuzzReceiptRoundTrip: a receipt the simulator formats reads back to the
// same id, state, err and done date, from its text alone and from a
// deliver_sm carrying it, with or without the receipted_message_id and
// message_state TLVs.
func FuzzReceiptRoundTrip(f *testing.F) {
	f.Add("00000000002A", uint8(0), uint16(0), int64(29_000_000), "hello")
	f.Add("abc-1", uint8(1), uint16(34), int64(0), "id:1 stat:DELIVRD")
	f.Add("7", uint8(7), uint16(999), int64(-1_000_000), "😀 text: done date:0101010101")
	f.Fuzz(func(t *testing.T, id string, state uint8, code uint16, minutes int64, text string) {
		if id == "" || len(id) > 64 || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) {
			return // message ids are at most 64 characters (SMPP 3.4); the simulator writes printable ASCII
		}
		// two-digit years read back as 1969..2068
		lo, hi := time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2068, 12, 31, 23, 59, 0, 0, time.UTC)
		span := int64(hi.Sub(lo) / time.Minute)
		done := lo.Add(time.Duration(((minutes%span)+span)%span) * time.Minute)
		fields := smscsim.ReceiptFields{
			ID: id, Submitted: done.Add(-time.Minute), Done: done,
			Stat: receiptStates[int(state)%len(receiptStates)], Err: fmt.Sprintf("%03d", code%1000), Text: text,
		}
		s := smscsim.FormatReceipt(fields)
		want := delivery.Receipt{ProviderID: smpp.NormalizeMessageID(id), State: fields.Stat, Err: fields.Err, At: done}

		r, err := smpp.ParseReceiptText(s, time.UTC)
		require.NoError(t, err, s)
		require.Equal(t, want, r, s)

		for _, tlvs := range []bool{false, true} {
			d := deliverSM(1, data.SM_SMSC_DLV_RCPT_TYPE, s)
			if tlvs {
				d.RegisterOptionalParam(pdu.Field{Tag: pdu.TagReceiptedMessageID, Data: append([]byte(id), 0)})
				d.RegisterOptionalParam(pdu.Field{Tag: pdu.TagMessageStateOption, Data: []byte{stateCode(fields.Stat)}})
			}
			rf, err := smppwire.ReadFrame(bufio.NewReader(bytes.NewReader(smppwire.Encode(d))))
			require.NoError(t, err)
			p, err := rf.Decode()
			require.NoError(t, err)
			r, err := smpp.ReceiptOf(p.(*pdu.DeliverSM), time.Unix(0, 0))
			require.NoError(t, err)
			require.Equal(t, want, r, "tlvs %v: %s", tlvs, s)
		}
	})
}

// stateCode is the message_state of a receipt state.
func stateCode(stat string) byte {
	for i, s := range []string{"", "ENROUTE", "DELIVRD", "EXPIRED", "DELETED", "UNDELIV", "ACCEPTD", "UNKNOWN", "REJECTD"} {
		if s == stat {
			return byte(i)
		}
	}
	return 0
}
