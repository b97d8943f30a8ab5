package smpp_test

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"github.com/stretchr/testify/require"
)

// scripted is a hand-driven SMSC: each test reads and writes PDUs itself.
type scripted struct {
	t *testing.T
	l net.Listener
}

type peer struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func newScripted(t *testing.T) *scripted {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return &scripted{t: t, l: l}
}

// accept takes the next connection and answers its bind_transceiver.
func (s *scripted) accept() *peer {
	s.t.Helper()
	_ = s.l.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	nc, err := s.l.Accept()
	require.NoError(s.t, err)
	s.t.Cleanup(func() { _ = nc.Close() })
	p := &peer{t: s.t, nc: nc, r: bufio.NewReader(nc)}
	req, ok := p.read().(*pdu.BindRequest)
	require.True(s.t, ok)
	require.Equal(s.t, pdu.Transceiver, req.BindingType)
	require.Equal(s.t, "herald", req.SystemID)
	require.Equal(s.t, "secret", req.Password)
	p.write(req.GetResponse())
	return p
}

func (p *peer) read() pdu.PDU {
	p.t.Helper()
	_ = p.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := pdu.Parse(p.r)
	require.NoError(p.t, err)
	return got
}

// readSkipping reads the next PDU that is not an enquire_link, answering
// those.
func (p *peer) readSkipping() pdu.PDU {
	p.t.Helper()
	for {
		got := p.read()
		if el, ok := got.(*pdu.EnquireLink); ok {
			p.write(el.GetResponse())
			continue
		}
		return got
	}
}

func (p *peer) write(x pdu.PDU) {
	p.t.Helper()
	b := pdu.NewBuffer(nil)
	x.Marshal(b)
	_, err := p.nc.Write(b.Bytes())
	require.NoError(p.t, err)
}

// closed reports whether the client closed the connection (reading
// through anything it still sent).
func (p *peer) closed(within time.Duration) bool {
	_ = p.nc.SetReadDeadline(time.Now().Add(within))
	for {
		if _, err := pdu.Parse(p.r); err != nil {
			ne, ok := err.(net.Error)
			return !ok || !ne.Timeout()
		}
	}
}

func deliverSM(seq int32, esm byte, text string) *pdu.DeliverSM {
	d := pdu.NewDeliverSM().(*pdu.DeliverSM)
	d.SetSequenceNumber(seq)
	d.EsmClass = esm
	_ = d.SourceAddr.SetAddress("447700900123")
	_ = d.DestAddr.SetAddress("Herald")
	_ = d.Message.SetMessageDataWithEncoding([]byte(text), data.GSM7BIT)
	return d
}

func TestEnquireLinkUnansweredEndsSession(t *testing.T) {
	s := newScripted(t)
	c := newClient(t, s.l.Addr().String(), nil, func(cfg *smpp.Config) { cfg.EnquireLink = 20 * time.Millisecond })
	p := s.accept()
	_, ok := p.read().(*pdu.EnquireLink)
	require.True(t, ok, "enquire_link every interval")
	require.True(t, p.closed(2*time.Second), "an unanswered enquire_link ends the session")
	p2 := s.accept()
	el, ok := p2.read().(*pdu.EnquireLink)
	require.True(t, ok)
	p2.write(el.GetResponse())
	el2, ok := p2.read().(*pdu.EnquireLink)
	require.True(t, ok)
	require.NotEqual(t, el.GetSequenceNumber(), el2.GetSequenceNumber())
	require.Equal(t, uint64(1), c.Stats().Rebinds)
}

func TestSMSCUnbind(t *testing.T) {
	s := newScripted(t)
	c := newClient(t, s.l.Addr().String(), nil)
	p := s.accept()
	u := pdu.NewUnbind()
	u.SetSequenceNumber(77)
	p.write(u)
	resp, ok := p.readSkipping().(*pdu.UnbindResp)
	require.True(t, ok)
	require.Equal(t, int32(77), resp.GetSequenceNumber())
	require.True(t, p.closed(2*time.Second))
	s.accept()
	require.Eventually(t, func() bool { return c.Stats().Rebinds == 1 && c.Stats().Bound }, 2*time.Second, 2*time.Millisecond)
}

func TestDeliverSMAnswers(t *testing.T) {
	payload := func(seq int32, text string) *pdu.DeliverSM {
		d := deliverSM(seq, data.SM_SMSC_DLV_RCPT_TYPE, "")
		d.RegisterOptionalParam(pdu.Field{Tag: pdu.TagMessagePayload, Data: []byte(text)})
		return d
	}
	tests := []struct {
		name   string
		pdu    *pdu.DeliverSM
		status data.CommandStatusType
		want   *delivery.Receipt
	}{
		{"mobile-originated", deliverSM(1, 0, "STOP"), data.ESME_ROK, nil},
		{"unreadable receipt", deliverSM(2, data.SM_SMSC_DLV_RCPT_TYPE, "garbage"), data.ESME_RX_P_APPN, nil},
		{
			"receipt in message_payload", payload(3, "id:00FF sub:001 dlvrd:000 submit date:2511221340 done date:2511221342 stat:UNDELIV err:034 text:"),
			data.ESME_ROK, &delivery.Receipt{ProviderID: "ff", State: "UNDELIV", Err: "034", At: time.Date(2025, 11, 22, 13, 42, 0, 0, time.UTC)},
		},
		{
			"intermediate notification", deliverSM(4, 0x20, "id:9 stat:ENROUTE err:000"),
			data.ESME_ROK, &delivery.Receipt{ProviderID: "9", State: "ENROUTE", Err: "000", At: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
		},
	}
	s := newScripted(t)
	rs := newSink()
	c := newClient(t, s.l.Addr().String(), rs.handle, func(cfg *smpp.Config) {
		cfg.Now = func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }
	})
	p := s.accept()
	for _, tt := range tests {
		p.write(tt.pdu)
		resp, ok := p.readSkipping().(*pdu.DeliverSMResp)
		require.True(t, ok, tt.name)
		require.Equal(t, tt.pdu.GetSequenceNumber(), resp.GetSequenceNumber(), tt.name)
		require.Equal(t, tt.status, resp.CommandStatus, tt.name)
		if tt.want != nil {
			r := rs.wait(t, 1)[0]
			require.Equal(t, *tt.want, r, tt.name)
		}
	}
	st := c.Stats()
	require.Equal(t, uint64(1), st.MOMessages)
	require.Equal(t, uint64(1), st.BadReceipts)
	require.Equal(t, uint64(2), st.Receipts)
}

func TestGenericNackFailsSubmit(t *testing.T) {
	s := newScripted(t)
	c := newClient(t, s.l.Addr().String(), nil)
	p := s.accept()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Send(context.Background(), delivery.SMS{From: "Herald", To: "447700900000", Text: "x"})
		errc <- err
	}()
	sm, ok := p.readSkipping().(*pdu.SubmitSM)
	require.True(t, ok)
	// an answer to a sequence number never sent is ignored
	stray := pdu.NewSubmitSMResp().(*pdu.SubmitSMResp)
	stray.SetSequenceNumber(sm.GetSequenceNumber() + 1000)
	stray.MessageID = "stray"
	p.write(stray)
	nack := pdu.NewGenericNack()
	nack.SetSequenceNumber(sm.GetSequenceNumber())
	nack.(*pdu.GenericNack).CommandStatus = data.ESME_RINVCMDLEN
	p.write(nack)
	err := <-errc
	var se *delivery.SendError
	require.ErrorAs(t, err, &se)
	require.True(t, se.Permanent)
	require.Equal(t, "0x00000002", se.Code)
	require.True(t, c.Stats().Bound, "the session survives")
}

// TestIDFormats: an SMSC that answers submits with hexadecimal ids and
// writes its receipt texts in decimal (the receipted_message_id TLV
// repeating the hexadecimal id) has its receipts matched to the part ids
// Send returned once SubmitIDFormat and ReceiptIDFormat say so; a network
// error code TLV stands for the err a receipt text lacks.
func TestIDFormats(t *testing.T) {
	s := newScripted(t)
	rs := newSink()
	c := newClient(t, s.l.Addr().String(), rs.handle, func(cfg *smpp.Config) {
		cfg.SubmitIDFormat, cfg.ReceiptIDFormat = smpp.IDHex, smpp.IDDecimal
	})
	p := s.accept()
	sent := make(chan delivery.SMSResult, 1)
	go func() {
		res, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900123", Text: "hello"})
		require.NoError(t, err)
		sent <- res
	}()
	sub, ok := p.readSkipping().(*pdu.SubmitSM)
	require.True(t, ok)
	resp := sub.GetResponse().(*pdu.SubmitSMResp)
	resp.MessageID = "0001E240" // 123456
	p.write(resp)
	res := <-sent
	require.Equal(t, []string{"123456"}, res.PartIDs)

	p.write(deliverSM(7, data.SM_SMSC_DLV_RCPT_TYPE, "id:123456 sub:001 dlvrd:001 submit date:2511221340 done date:2511221342 stat:DELIVRD err:000 text:hello"))
	_, ok = p.readSkipping().(*pdu.DeliverSMResp)
	require.True(t, ok)
	require.Equal(t, "123456", rs.wait(t, 1)[0].ProviderID, "decimal receipt text")

	tlv := deliverSM(8, data.SM_SMSC_DLV_RCPT_TYPE, "")
	tlv.RegisterOptionalParam(pdu.Field{Tag: pdu.TagReceiptedMessageID, Data: []byte("1e240\x00")})
	tlv.RegisterOptionalParam(pdu.Field{Tag: pdu.TagMessageStateOption, Data: []byte{5}})
	tlv.RegisterOptionalParam(pdu.Field{Tag: pdu.TagNetworkErrorCode, Data: []byte{3, 0, 34}})
	p.write(tlv)
	_, ok = p.readSkipping().(*pdu.DeliverSMResp)
	require.True(t, ok)
	r := rs.wait(t, 1)[0]
	require.Equal(t, "123456", r.ProviderID, "hexadecimal receipted_message_id")
	require.Equal(t, "UNDELIV", r.State)
	require.Equal(t, "034", r.Err, "network_error_code")
}
