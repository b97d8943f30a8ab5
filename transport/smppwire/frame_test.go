package smppwire_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"github.com/stretchr/testify/require"
)

// header encodes a PDU header declaring length n.
func header(n uint32, id data.CommandIDType, seq uint32) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint32(b[0:], n)
	binary.BigEndian.PutUint32(b[4:], uint32(id))
	binary.BigEndian.PutUint32(b[12:], seq)
	return b
}

// encodeSeq encodes p with sequence number seq.
func encodeSeq(p pdu.PDU, seq int32) []byte {
	p.SetSequenceNumber(seq)
	return smppwire.Encode(p)
}

// submitSM is a submit_sm asking for a receipt.
func submitSM(t testing.TB, to, text string) *pdu.SubmitSM {
	sm := pdu.NewSubmitSM().(*pdu.SubmitSM)
	sm.SourceAddr = pdu.NewAddressWithTonNpi(5, 0)
	require.NoError(t, sm.SourceAddr.SetAddress("Herald"))
	sm.DestAddr = pdu.NewAddressWithTonNpi(1, 1)
	require.NoError(t, sm.DestAddr.SetAddress(to))
	sm.RegisteredDelivery = data.SM_SMSC_RECEIPT_REQUESTED
	require.NoError(t, sm.Message.SetMessageDataWithEncoding([]byte(text), data.GSM7BIT))
	return sm
}

// TestReadFrameBounds: a command_length outside 16..MaxPDULen is refused
// after the header, without reading or allocating the body it declares;
// an accepted length on a stream that ends early is an unexpected EOF.
func TestReadFrameBounds(t *testing.T) {
	tests := []struct {
		name    string
		length  uint32
		framing bool
	}{
		{"zero", 0, true},
		{"shorter than a header", 15, true},
		{"header only", 16, false},
		{"the longest accepted", smppwire.MaxPDULen, false},
		{"one past the longest", smppwire.MaxPDULen + 1, true},
		{"2 GiB", 0x7FFFFFFF, true},
		{"negative as int32", 0xFFFFFFF0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream := append(header(tt.length, data.SUBMIT_SM, 1), "trailing bytes"...)
			r := bufio.NewReader(bytes.NewReader(stream))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := smppwire.ReadFrame(r)
			runtime.ReadMemStats(&after)
			require.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(smppwire.MaxPDULen+1<<20),
				"allocated for one PDU (slack for the runtime and other goroutines)")
			if tt.framing {
				require.ErrorIs(t, err, smppwire.ErrFraming)
				rest, _ := io.ReadAll(r)
				require.Equal(t, "trailing bytes", string(rest), "nothing past the header was read")
				return
			}
			if tt.length == 16 {
				require.NoError(t, err)
				require.Len(t, f.Raw, 16)
				require.Equal(t, int32(16), f.Header.CommandLength)
				require.Equal(t, uint32(1), f.Seq())
				require.Empty(t, f.CString(), "no body")
				return
			}
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		})
	}
}

// TestReadFrameEOF: a stream that ends between PDUs is io.EOF.
func TestReadFrameEOF(t *testing.T) {
	r := bufio.NewReader(bytes.NewReader(header(16, data.ENQUIRE_LINK, 1)))
	_, err := smppwire.ReadFrame(r)
	require.NoError(t, err)
	_, err = smppwire.ReadFrame(r)
	require.ErrorIs(t, err, io.EOF)
}

// TestDecode: a frame decodes to the PDU encoded; a command gosmpp does
// not know and a body it cannot read are errors.
func TestDecode(t *testing.T) {
	sm := submitSM(t, "447700900000", "hello")
	f, err := smppwire.ReadFrame(bufio.NewReader(bytes.NewReader(encodeSeq(sm, 7))))
	require.NoError(t, err)
	p, err := f.Decode()
	require.NoError(t, err)
	got, ok := p.(*pdu.SubmitSM)
	require.True(t, ok)
	require.Equal(t, int32(7), got.GetSequenceNumber())
	require.Equal(t, "447700900000", got.DestAddr.Address())

	_, err = smppwire.Frame{Header: pdu.Header{CommandLength: 16, CommandID: 0x0000_0FFF}, Raw: header(16, 0x0000_0FFF, 1)}.Decode()
	require.Error(t, err, "unknown command")

	short := header(17, data.SUBMIT_SM, 1)
	short = append(short, 0)
	f, err = smppwire.ReadFrame(bufio.NewReader(bytes.NewReader(short)))
	require.NoError(t, err)
	_, err = f.Decode()
	require.Error(t, err, "a submit_sm with one octet of body")
}

// TestHeaderOnlyAndWithCString: the PDUs built without gosmpp are the
// bytes gosmpp encodes for them.
func TestHeaderOnlyAndWithCString(t *testing.T) {
	require.Equal(t, encodeSeq(pdu.NewEnquireLinkResp(), 9),
		smppwire.HeaderOnly(data.ENQUIRE_LINK_RESP, data.ESME_ROK, 9))
	require.Equal(t, encodeSeq(pdu.NewUnbind(), 3),
		smppwire.HeaderOnly(data.UNBIND, data.ESME_ROK, 3))

	resp := pdu.NewSubmitSMResp().(*pdu.SubmitSMResp)
	resp.MessageID = "00000000002A"
	b := smppwire.WithCString(data.SUBMIT_SM_RESP, data.ESME_ROK, 4, "00000000002A")
	require.Equal(t, encodeSeq(resp, 4), b)
	f, err := smppwire.ReadFrame(bufio.NewReader(bytes.NewReader(b)))
	require.NoError(t, err)
	require.Equal(t, "00000000002A", f.CString())
	require.Equal(t, uint32(4), f.Seq())

	empty := smppwire.WithCString(data.DELIVER_SM_RESP, data.ESME_RX_T_APPN, 5, "")
	f, err = smppwire.ReadFrame(bufio.NewReader(bytes.NewReader(empty)))
	require.NoError(t, err)
	require.Equal(t, data.ESME_RX_T_APPN, f.Header.CommandStatus)
	require.Empty(t, f.CString())
}

// FuzzReadFrame feeds arbitrary bytes to the reader, as either end of a
// connection would receive them. Properties: nothing panics (framing,
// gosmpp's decoders, the C-octet string of a response); every frame is
// exactly the bytes its command_length declares, at most MaxPDULen; a
// refused length stops the stream right after its header.
func FuzzReadFrame(f *testing.F) {
	sm := submitSM(f, "447700900000", "hello")
	f.Add(encodeSeq(sm, 1))
	long := submitSM(f, "447700900002", "part one of two")
	long.EsmClass |= data.SM_UDH_GSM
	long.Message.SetUDH(pdu.UDH{pdu.NewIEConcatMessage(2, 1, 42)})
	f.Add(append(encodeSeq(long, 2), encodeSeq(long, 3)...))
	resp := pdu.NewSubmitSMResp().(*pdu.SubmitSMResp)
	resp.MessageID = "00000000002A"
	f.Add(encodeSeq(resp, 1))
	rcpt := pdu.NewDeliverSM().(*pdu.DeliverSM)
	rcpt.EsmClass = data.SM_SMSC_DLV_RCPT_TYPE
	require.NoError(f, rcpt.Message.SetMessageDataWithEncoding([]byte("id:2A sub:001 dlvrd:001 submit date:2511221340 done date:2511221341 stat:DELIVRD err:000 text:hi"), data.GSM7BIT))
	rcpt.RegisterOptionalParam(pdu.Field{Tag: pdu.TagReceiptedMessageID, Data: []byte("2A\x00")})
	rcpt.RegisterOptionalParam(pdu.Field{Tag: pdu.TagMessageStateOption, Data: []byte{2}})
	f.Add(encodeSeq(rcpt, 3))
	bind := pdu.NewBindRequest(pdu.Transceiver)
	bind.SystemID = "herald"
	f.Add(encodeSeq(bind, 1))
	f.Add(smppwire.Encode(bind.GetResponse()))
	f.Add(header(16, data.ENQUIRE_LINK, 9))
	f.Add(header(0x7FFFFFFF, data.DELIVER_SM, 1))
	f.Add(header(17, data.DELIVER_SM, 1))
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bufio.NewReader(bytes.NewReader(stream))
		off := 0
		for range 64 {
			fr, err := smppwire.ReadFrame(r)
			if errors.Is(err, smppwire.ErrFraming) {
				n := fr.Header.CommandLength
				require.True(t, n < 16 || n > smppwire.MaxPDULen, "refused %d", n)
				rest, _ := io.ReadAll(r)
				require.Equal(t, len(stream)-off-16, len(rest), "nothing past the header was read")
				return
			}
			if err != nil {
				return
			}
			require.Len(t, fr.Raw, int(fr.Header.CommandLength))
			require.LessOrEqual(t, len(fr.Raw), smppwire.MaxPDULen)
			require.Equal(t, stream[off:off+len(fr.Raw)], fr.Raw)
			off += len(fr.Raw)
			_ = fr.CString()
			_, _ = fr.Decode()
		}
	})
}
