package smpp_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/template"
	"github.com/heraldhq/herald/transport/smpp"
)

// moSM is a mobile-originated deliver_sm from 447700900123 to Herald with
// raw user data in the given data coding.
func moSM(seq int32, esm byte, coding data.Encoding, raw []byte) *pdu.DeliverSM {
	d := pdu.NewDeliverSM().(*pdu.DeliverSM)
	d.SetSequenceNumber(seq)
	d.EsmClass = esm
	_ = d.SourceAddr.SetAddress("447700900123")
	_ = d.DestAddr.SetAddress("Herald")
	_ = d.Message.SetMessageDataWithEncoding(raw, coding)
	return d
}

type inboundSink struct {
	mu    sync.Mutex
	parts []delivery.InboundPart
	fail  error
}

func (s *inboundSink) handle(_ context.Context, p delivery.InboundPart) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.parts = append(s.parts, p)
	return nil
}

// Mobile-originated parts reach the handler over a real session decoded
// from their data coding (GSM-7 with extension characters, UCS-2, Latin-1)
// with their concatenation from an 8- or 16-bit user data header or the
// sar_ TLVs; a part the handler could not store is answered with a
// temporary error, for the SMSC to send it again.
func TestInboundParts(t *testing.T) {
	gsm, err := template.EncodeGSM7("Price: 5€ [ok]")
	require.NoError(t, err)
	withUDH := func(seq int32, udh []byte, coding data.Encoding, raw []byte) *pdu.DeliverSM {
		return moSM(seq, data.SM_UDH_GSM, coding, append(append([]byte(nil), udh...), raw...))
	}
	sar := moSM(5, 0, data.GSM7BIT, []byte("part two"))
	sar.RegisterOptionalParam(pdu.Field{Tag: pdu.Tag(0x020C), Data: []byte{0x01, 0x02}})
	sar.RegisterOptionalParam(pdu.Field{Tag: pdu.Tag(0x020E), Data: []byte{2}})
	sar.RegisterOptionalParam(pdu.Field{Tag: pdu.Tag(0x020F), Data: []byte{2}})
	payload := moSM(6, data.SM_UDH_GSM, data.UCS2, nil)
	payload.RegisterOptionalParam(pdu.Field{Tag: pdu.TagMessagePayload, Data: append([]byte{5, 0, 3, 9, 3, 1}, template.EncodeUCS2("Привет 👋")...)})

	tests := []struct {
		pdu  *pdu.DeliverSM
		want delivery.InboundPart
	}{
		{moSM(1, 0, data.GSM7BIT, gsm), delivery.InboundPart{Text: "Price: 5€ [ok]", Count: 1, Seq: 1}},
		{moSM(2, 0, data.UCS2, template.EncodeUCS2("Да, спасибо")), delivery.InboundPart{Text: "Да, спасибо", Count: 1, Seq: 1}},
		{moSM(3, 0, data.LATIN1, []byte{'C', 'a', 'f', 0xE9}), delivery.InboundPart{Text: "Café", Count: 1, Seq: 1}},
		{withUDH(4, []byte{5, 0, 3, 0x2A, 2, 1}, data.GSM7BIT, []byte("Hello ")), delivery.InboundPart{Text: "Hello ", Ref: 0x2A, Count: 2, Seq: 1}},
		{withUDH(7, []byte{6, 8, 4, 0x01, 0x02, 3, 3}, data.GSM7BIT, []byte("end")), delivery.InboundPart{Text: "end", Ref: 0x0102, Count: 3, Seq: 3}},
		{sar, delivery.InboundPart{Text: "part two", Ref: 0x0102, Count: 2, Seq: 2}},
		{payload, delivery.InboundPart{Text: "Привет 👋", Ref: 9, Count: 3, Seq: 1}},
	}
	s := newScripted(t)
	sink := &inboundSink{}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := tracetest.NewSpanRecorder()
	c := newClient(t, s.l.Addr().String(), nil, func(cfg *smpp.Config) {
		cfg.InboundHandler = sink.handle
		cfg.Now = func() time.Time { return now }
		cfg.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	})
	p := s.accept()
	for _, tt := range tests {
		p.write(tt.pdu)
		resp, ok := p.readSkipping().(*pdu.DeliverSMResp)
		require.True(t, ok)
		require.Equal(t, tt.pdu.GetSequenceNumber(), resp.GetSequenceNumber())
		require.Equal(t, data.ESME_ROK, resp.CommandStatus)
	}
	require.Len(t, sink.parts, len(tests))
	for i, tt := range tests {
		want := tt.want
		want.From, want.To, want.At = "447700900123", "Herald", now
		require.Equal(t, want, sink.parts[i], "part %d", i)
	}
	require.Equal(t, uint64(len(tests)), c.Stats().MOMessages)

	sink.fail = errors.New("store down")
	p.write(moSM(9, 0, data.GSM7BIT, []byte("STOP")))
	resp, ok := p.readSkipping().(*pdu.DeliverSMResp)
	require.True(t, ok)
	require.Equal(t, data.ESME_RX_T_APPN, resp.CommandStatus, "not stored: the SMSC sends it again")
	require.Len(t, sink.parts, len(tests))

	// Each part is a span of its own, one that was not stored an error.
	spans := rec.Ended()
	require.Len(t, spans, len(tests)+1)
	for i, sp := range spans {
		require.Equal(t, "smpp deliver_sm inbound", sp.Name())
		require.False(t, sp.Parent().IsValid())
		if i == len(tests) {
			require.Equal(t, codes.Error, sp.Status().Code)
		} else {
			require.Equal(t, codes.Unset, sp.Status().Code)
		}
	}
}
