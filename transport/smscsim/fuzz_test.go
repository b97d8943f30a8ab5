package smscsim_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"github.com/stretchr/testify/require"
)

func encodePDU(p pdu.PDU, seq int32) []byte {
	p.SetSequenceNumber(seq)
	return smppwire.Encode(p)
}

func rawHeader(n uint32, id data.CommandIDType) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint32(b[0:], n)
	binary.BigEndian.PutUint32(b[4:], uint32(id))
	return b
}

// FuzzReadSubmit feeds arbitrary bytes to the simulator's reader as a
// client would send them (the framing itself is smppwire's
// FuzzReadFrame). Properties: nothing panics (recording a part, building
// its receipt, reassembling concatenated texts); the receipt of an accepted submit_sm is a deliver_sm
// from its destination to its source whose text reads back (with Herald's
// receipt parser) to the message id and the outcome its destination
// chooses, and whose receipted_message_id is the id.
func FuzzReadSubmit(f *testing.F) {
	bind := pdu.NewBindRequest(pdu.Transceiver)
	bind.SystemID = "herald"
	f.Add(encodePDU(bind, 1))
	f.Add(encodePDU(submit("447700900000", "hello", 1), 2))
	f.Add(encodePDU(submit("447700900001", "undelivered", 1), 3))
	f.Add(encodePDU(submit("447700900003", "on failure", 2), 4))
	long := submit("447700900002", "part one of two", 1)
	long.EsmClass |= data.SM_UDH_GSM
	long.Message.SetUDH(pdu.UDH{pdu.NewIEConcatMessage(2, 1, 42)})
	f.Add(append(encodePDU(long, 5), encodePDU(long, 6)...))
	f.Add(rawHeader(0x7FFFFFFF, data.SUBMIT_SM))
	f.Add(rawHeader(20, data.SUBMIT_SM))
	now := time.Date(2025, 11, 22, 13, 40, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bufio.NewReader(bytes.NewReader(stream))
		var parts []smscsim.Part
		defer func() { _ = smscsim.Reassemble(parts) }()
		for range 64 {
			fr, err := smppwire.ReadFrame(r)
			if err != nil {
				return
			}
			if _, err := fr.Decode(); err != nil || fr.Header.CommandID != data.SUBMIT_SM {
				continue
			}
			part, rcpt, err := smscsim.AcceptSubmit(fr, "00000000002A", now, true)
			require.NoError(t, err)
			parts = append(parts, part)
			if rcpt == nil {
				continue
			}
			rf, err := smppwire.ReadFrame(bufio.NewReader(bytes.NewReader(rcpt)))
			require.NoError(t, err)
			p, err := rf.Decode()
			require.NoError(t, err)
			d, ok := p.(*pdu.DeliverSM)
			require.True(t, ok)
			require.Equal(t, byte(data.SM_SMSC_DLV_RCPT_TYPE), d.EsmClass)
			require.Equal(t, part.To, d.SourceAddr.Address())
			require.Equal(t, part.From, d.DestAddr.Address())
			text, err := d.Message.GetMessageData()
			require.NoError(t, err)
			got, err := smpp.ParseReceiptText(string(text), time.UTC)
			require.NoError(t, err, "%q", text)
			require.Equal(t, "2a", got.ProviderID)
			require.Equal(t, now, got.At)
			want := "DELIVRD"
			switch {
			case strings.HasSuffix(part.To, "0001"):
				want = "UNDELIV"
			case strings.HasSuffix(part.To, "0002"):
				want = "EXPIRED"
			case strings.HasSuffix(part.To, "0003"):
				want = "REJECTD"
			}
			require.Equal(t, want, got.State)
			require.Equal(t, "00000000002A\x00", string(d.OptionalParameters[pdu.TagReceiptedMessageID].Data))
		}
	})
}
