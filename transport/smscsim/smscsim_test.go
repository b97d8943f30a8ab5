package smscsim_test

import (
	"bufio"
	"context"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/heraldhq/herald/template"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"github.com/stretchr/testify/require"
)

// esme is a raw SMPP client built on gosmpp's PDUs.
type esme struct {
	t   *testing.T
	nc  net.Conn
	r   *bufio.Reader
	seq int32
}

func start(t *testing.T, cfg smscsim.Config) *smscsim.Server {
	t.Helper()
	srv := smscsim.New(cfg)
	require.NoError(t, srv.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func dial(t *testing.T, srv *smscsim.Server) *esme {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &esme{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (e *esme) write(p pdu.PDU) int32 {
	e.t.Helper()
	e.seq++
	p.SetSequenceNumber(e.seq)
	b := pdu.NewBuffer(nil)
	p.Marshal(b)
	_, err := e.nc.Write(b.Bytes())
	require.NoError(e.t, err)
	return e.seq
}

// respond writes a response, keeping its sequence number.
func (e *esme) respond(p pdu.PDU) {
	e.t.Helper()
	b := pdu.NewBuffer(nil)
	p.Marshal(b)
	_, err := e.nc.Write(b.Bytes())
	require.NoError(e.t, err)
}

// read returns the next PDU's header and, when it has a body, the PDU.
func (e *esme) read() (pdu.Header, pdu.PDU) {
	e.t.Helper()
	_ = e.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hb [16]byte
	_, err := readFull(e.r, hb[:])
	require.NoError(e.t, err)
	h := pdu.ParseHeader(hb)
	body := make([]byte, h.CommandLength)
	copy(body, hb[:])
	_, err = readFull(e.r, body[16:])
	require.NoError(e.t, err)
	if h.CommandLength == 16 && h.CommandStatus != data.ESME_ROK {
		return h, nil
	}
	p, err := pdu.CreatePDUFromCmdID(h.CommandID)
	require.NoError(e.t, err)
	require.NoError(e.t, p.Unmarshal(pdu.NewBuffer(body)))
	return h, p
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (e *esme) bind(t pdu.BindingType, systemID, password string) pdu.Header {
	req := pdu.NewBindRequest(t)
	req.SystemID, req.Password = systemID, password
	seq := e.write(req)
	h, _ := e.read()
	require.Equal(e.t, seq, h.SequenceNumber)
	return h
}

func submit(to, text string, regDelivery byte) *pdu.SubmitSM {
	sm := pdu.NewSubmitSM().(*pdu.SubmitSM)
	sm.SourceAddr = pdu.NewAddressWithTonNpi(5, 0)
	_ = sm.SourceAddr.SetAddress("Herald")
	sm.DestAddr = pdu.NewAddressWithTonNpi(1, 1)
	_ = sm.DestAddr.SetAddress(to)
	sm.RegisteredDelivery = regDelivery
	b, err := template.EncodeGSM7(text)
	if err != nil {
		panic(err)
	}
	_ = sm.Message.SetMessageDataWithEncoding(b, data.GSM7BIT)
	return sm
}

func TestBindChecks(t *testing.T) {
	srv := start(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	tests := []struct {
		name       string
		bt         pdu.BindingType
		id, pw     string
		status     data.CommandStatusType
		wantRespID data.CommandIDType
	}{
		{"transceiver", pdu.Transceiver, "herald", "secret", data.ESME_ROK, data.BIND_TRANSCEIVER_RESP},
		{"transmitter", pdu.Transmitter, "herald", "secret", data.ESME_ROK, data.BIND_TRANSMITTER_RESP},
		{"receiver", pdu.Receiver, "herald", "secret", data.ESME_ROK, data.BIND_RECEIVER_RESP},
		{"wrong system id", pdu.Transceiver, "other", "secret", data.ESME_RINVSYSID, data.BIND_TRANSCEIVER_RESP},
		{"wrong password", pdu.Transmitter, "herald", "nope", data.ESME_RINVPASWD, data.BIND_TRANSMITTER_RESP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := dial(t, srv)
			h := e.bind(tt.bt, tt.id, tt.pw)
			require.Equal(t, tt.wantRespID, h.CommandID)
			require.Equal(t, tt.status, h.CommandStatus)
			if tt.status != data.ESME_ROK {
				require.Equal(t, int32(16), h.CommandLength, "an error response has no body")
				_ = e.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, err := e.r.ReadByte()
				require.Error(t, err, "the connection is closed")
				return
			}
			require.Equal(t, data.ESME_RALYBND, e.bind(tt.bt, tt.id, tt.pw).CommandStatus)
		})
	}
	require.Equal(t, uint64(3), srv.Stats().Binds)
	require.Equal(t, uint64(5), srv.Stats().BindFailures, "two refused, three binds twice")
}

func TestSubmitNeedsTransmitter(t *testing.T) {
	srv := start(t, smscsim.Config{})
	e := dial(t, srv)
	e.write(submit("447700900000", "x", 1))
	h, _ := e.read()
	require.Equal(t, data.SUBMIT_SM_RESP, h.CommandID)
	require.Equal(t, data.ESME_RINVBNDSTS, h.CommandStatus, "not bound")
	e.bind(pdu.Receiver, "r", "")
	e.write(submit("447700900000", "x", 1))
	h, _ = e.read()
	require.Equal(t, data.ESME_RINVBNDSTS, h.CommandStatus, "a receiver cannot submit")
	require.Zero(t, srv.Stats().Submits)
}

var receiptText = regexp.MustCompile(`^id:([0-9A-F]{12}) sub:001 dlvrd:(00[01]) submit date:(\d{10}) done date:(\d{10}) stat:([A-Z]{7}) err:(\d{3}) text:(.*)$`)

func TestReceipts(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	srv := start(t, smscsim.Config{Now: func() time.Time { return now }, ReceiptDelay: 5 * time.Millisecond})
	e := dial(t, srv)
	e.bind(pdu.Transceiver, "herald", "")
	tests := []struct {
		to, stat, err, dlvrd string
		state                byte
	}{
		{"447700900000", "DELIVRD", "000", "001", 2},
		{"447700900001", "UNDELIV", "001", "000", 5},
		{"447700900002", "EXPIRED", "002", "000", 3},
		{"447700900003", "REJECTD", "003", "000", 8},
	}
	for _, tt := range tests {
		seq := e.write(submit(tt.to, "Çà va? A long text beyond twenty", 1))
		h, p := e.read()
		require.Equal(t, seq, h.SequenceNumber)
		resp := p.(*pdu.SubmitSMResp)
		require.Regexp(t, `^[0-9A-F]{12}$`, resp.MessageID)

		h, p = e.read()
		require.Equal(t, data.DELIVER_SM, h.CommandID)
		d := p.(*pdu.DeliverSM)
		require.Equal(t, byte(data.SM_SMSC_DLV_RCPT_TYPE), d.EsmClass)
		require.Equal(t, tt.to, d.SourceAddr.Address(), "from the handset")
		require.Equal(t, "Herald", d.DestAddr.Address())
		raw, _ := d.Message.GetMessageData()
		m := receiptText.FindStringSubmatch(string(raw))
		require.NotNil(t, m, string(raw))
		require.Equal(t, resp.MessageID, m[1])
		require.Equal(t, tt.dlvrd, m[2])
		require.Equal(t, "2603040506", m[3])
		require.Equal(t, "2603040506", m[4])
		require.Equal(t, tt.stat, m[5])
		require.Equal(t, tt.err, m[6])
		require.Equal(t, "?? va? A long text b", m[7])
		id := d.OptionalParameters[pdu.TagReceiptedMessageID]
		require.Equal(t, resp.MessageID, id.String())
		require.Equal(t, []byte{tt.state}, d.OptionalParameters[pdu.TagMessageStateOption].Data)
		e.respond(d.GetResponse())
	}
	require.Eventually(t, func() bool { return srv.Stats().ReceiptsAcked == 4 }, 2*time.Second, time.Millisecond)
	st := srv.Stats()
	require.Zero(t, st.ReceiptsPending)
	require.False(t, st.FirstSubmit.IsZero(), "the first submit's time is kept")
	require.False(t, st.LastSubmit.Before(st.FirstSubmit), "the last submit is not before the first")
}

func TestReceiptRequests(t *testing.T) {
	srv := start(t, smscsim.Config{})
	e := dial(t, srv)
	e.bind(pdu.Transceiver, "herald", "")
	e.write(submit("447700900000", "none asked", 0))
	e.write(submit("447700900000", "failure only, delivered", 2))
	e.write(submit("447700900001", "failure only, failed", 2))
	got := map[data.CommandIDType]int{}
	for range 4 {
		h, p := e.read()
		got[h.CommandID]++
		if d, ok := p.(*pdu.DeliverSM); ok {
			raw, _ := d.Message.GetMessageData()
			require.Contains(t, string(raw), "stat:UNDELIV")
		}
	}
	require.Equal(t, map[data.CommandIDType]int{data.SUBMIT_SM_RESP: 3, data.DELIVER_SM: 1}, got)
}

func TestRefusedReceiptSentAgain(t *testing.T) {
	srv := start(t, smscsim.Config{ResendDelay: 10 * time.Millisecond})
	e := dial(t, srv)
	e.bind(pdu.Transceiver, "herald", "")
	e.write(submit("447700900000", "x", 1))
	e.read()
	var first string
	for i, status := range []data.CommandStatusType{data.ESME_RX_T_APPN, data.ESME_RSYSERR, data.ESME_ROK} {
		h, p := e.read()
		require.Equal(t, data.DELIVER_SM, h.CommandID)
		id := p.(*pdu.DeliverSM).OptionalParameters[pdu.TagReceiptedMessageID]
		if i == 0 {
			first = id.String()
		}
		require.Equal(t, first, id.String(), "the same receipt")
		resp := p.GetResponse().(*pdu.DeliverSMResp)
		resp.CommandStatus = status
		e.respond(resp)
	}
	require.Eventually(t, func() bool { return srv.Stats().ReceiptsAcked == 1 }, 2*time.Second, time.Millisecond)
	st := srv.Stats()
	require.Equal(t, uint64(2), st.ReceiptsRefused)
	require.Equal(t, uint64(3), st.ReceiptsSent)
}

func TestReceiptsFollowTheSystemID(t *testing.T) {
	srv := start(t, smscsim.Config{})
	tx := dial(t, srv)
	tx.bind(pdu.Transmitter, "herald", "")
	other := dial(t, srv)
	other.bind(pdu.Receiver, "someone-else", "")
	rx := dial(t, srv)
	rx.bind(pdu.Receiver, "herald", "")
	tx.write(submit("447700900000", "x", 1))
	h, _ := tx.read()
	require.Equal(t, data.SUBMIT_SM_RESP, h.CommandID)
	h, _ = rx.read()
	require.Equal(t, data.DELIVER_SM, h.CommandID, "the receiver of the same system_id gets it")
}

func TestThrottleFaults(t *testing.T) {
	tests := []struct {
		name   string
		faults smscsim.Faults
		want   []bool // throttled, submit by submit
	}{
		{"every third", smscsim.Faults{ThrottleEvery: 3}, []bool{false, false, true, false, false, true}},
		{"half", smscsim.Faults{ThrottleFraction: 0.5}, []bool{false, true, false, true, false, true}},
		{"all", smscsim.Faults{ThrottleFraction: 1}, []bool{true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, smscsim.Config{Faults: tt.faults})
			e := dial(t, srv)
			e.bind(pdu.Transmitter, "herald", "")
			for i, want := range tt.want {
				e.write(submit("447700900000", "x", 0))
				h, _ := e.read()
				require.Equal(t, want, h.CommandStatus == data.ESME_RTHROTTLED, "submit %d", i+1)
			}
		})
	}
}

func TestUnknownCommand(t *testing.T) {
	srv := start(t, smscsim.Config{})
	e := dial(t, srv)
	e.bind(pdu.Transceiver, "herald", "")
	seq := e.write(pdu.NewQuerySM())
	h, _ := e.read()
	require.Equal(t, data.GENERIC_NACK, h.CommandID)
	require.Equal(t, data.ESME_RINVCMDID, h.CommandStatus)
	require.Equal(t, seq, h.SequenceNumber)
	seq = e.write(pdu.NewEnquireLink())
	h, _ = e.read()
	require.Equal(t, data.ENQUIRE_LINK_RESP, h.CommandID)
	require.Equal(t, seq, h.SequenceNumber)
	seq = e.write(pdu.NewUnbind())
	h, _ = e.read()
	require.Equal(t, data.UNBIND_RESP, h.CommandID)
	require.Equal(t, seq, h.SequenceNumber)
}

func TestListenAndServe(t *testing.T) {
	srv := smscsim.New(smscsim.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, "127.0.0.1:0") }()
	require.Eventually(t, func() bool { return srv.Addr() != "" }, 2*time.Second, time.Millisecond)
	e := dial(t, srv)
	require.Equal(t, data.ESME_ROK, e.bind(pdu.Transceiver, "x", "").CommandStatus)
	cancel()
	require.NoError(t, <-done)
	_ = e.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := e.r.ReadByte()
	require.Error(t, err, "connections closed with the server")
}

func TestUnansweredReceiptMovesToTheNextSession(t *testing.T) {
	srv := start(t, smscsim.Config{ResendDelay: 10 * time.Millisecond})
	e := dial(t, srv)
	e.bind(pdu.Transceiver, "herald", "")
	e.write(submit("447700900002", "x", 1))
	e.read()
	_, p := e.read()
	first := p.(*pdu.DeliverSM).OptionalParameters[pdu.TagReceiptedMessageID]
	require.NoError(t, e.nc.Close())

	e2 := dial(t, srv)
	e2.bind(pdu.Transceiver, "herald", "")
	h, p := e2.read()
	require.Equal(t, data.DELIVER_SM, h.CommandID)
	again := p.(*pdu.DeliverSM).OptionalParameters[pdu.TagReceiptedMessageID]
	require.Equal(t, first.String(), again.String())
	e2.respond(p.GetResponse())
	require.Eventually(t, func() bool { return srv.Stats().ReceiptsPending == 0 }, 2*time.Second, time.Millisecond)
}

func TestParseStall(t *testing.T) {
	tests := []struct {
		in   string
		want smscsim.Stall
		err  bool
	}{
		{"", 0, false},
		{"submits", smscsim.StallSubmits, false},
		{"Submits, enquire_links", smscsim.StallSubmits | smscsim.StallEnquireLinks, false},
		{"binds,receipts", smscsim.StallBinds | smscsim.StallReceipts, false},
		{"all", smscsim.StallAll, false},
		{"submits,everything", 0, true},
	}
	for _, tt := range tests {
		got, err := smscsim.ParseStall(tt.in)
		if tt.err {
			require.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
		again, err := smscsim.ParseStall(got.String())
		require.NoError(t, err)
		require.Equal(t, got, again, "String reads back")
	}
}

// TestStallHoldsAndResumes: a stalled Server keeps the connection open and
// answers other requests (a query_sm's generic_nack overtakes the held
// ones); Resume answers what it held, in order, and the receipts follow.
func TestStallHoldsAndResumes(t *testing.T) {
	srv := start(t, smscsim.Config{Record: true})
	e := dial(t, srv)
	e.bind(pdu.Transceiver, "herald", "")
	srv.Stall(smscsim.StallSubmits | smscsim.StallEnquireLinks | smscsim.StallReceipts)
	var seqs []int32
	for _, to := range []string{"447700900010", "447700900011", "447700900012"} {
		seqs = append(seqs, e.write(submit(to, "held", 1)))
	}
	elSeq := e.write(pdu.NewEnquireLink())
	require.Eventually(t, func() bool { return srv.Stats().Held == 4 }, 2*time.Second, time.Millisecond)
	st := srv.Stats()
	require.Equal(t, 3, st.InFlight)
	require.Zero(t, st.Submits, "nothing accepted yet")
	require.Equal(t, smscsim.StallSubmits|smscsim.StallEnquireLinks|smscsim.StallReceipts, st.Stalled)

	nackSeq := e.write(pdu.NewQuerySM())
	h, _ := e.read()
	require.Equal(t, data.GENERIC_NACK, h.CommandID, "the held requests are not answered")
	require.Equal(t, nackSeq, h.SequenceNumber)

	srv.Resume()
	var got []data.CommandIDType
	var gotSeqs []int32
	answered := map[string]bool{}
	for receipts := 0; receipts < 3 || len(got) < 4; {
		h, p := e.read()
		switch h.CommandID {
		case data.DELIVER_SM:
			f := p.(*pdu.DeliverSM).OptionalParameters[pdu.TagReceiptedMessageID]
			id := f.String()
			require.True(t, answered[id], "a receipt comes after its submit_sm_resp")
			e.respond(p.GetResponse())
			receipts++
			continue
		case data.SUBMIT_SM_RESP:
			answered[p.(*pdu.SubmitSMResp).MessageID] = true
		}
		got = append(got, h.CommandID)
		gotSeqs = append(gotSeqs, h.SequenceNumber)
	}
	require.Equal(t, []data.CommandIDType{data.SUBMIT_SM_RESP, data.SUBMIT_SM_RESP, data.SUBMIT_SM_RESP, data.ENQUIRE_LINK_RESP}, got)
	require.Equal(t, append(seqs, elSeq), gotSeqs, "in the order they came")
	require.Eventually(t, func() bool { return srv.Stats().ReceiptsAcked == 3 }, 2*time.Second, time.Millisecond)
	st = srv.Stats()
	require.Zero(t, st.Held)
	require.Zero(t, st.InFlight)
	require.Equal(t, 3, st.MaxInFlight)
	require.Equal(t, uint64(3), st.Submits)
	require.Len(t, srv.Messages(), 3)
}

// TestStalledBind: a held bind is answered on Resume.
func TestStalledBind(t *testing.T) {
	srv := start(t, smscsim.Config{Stall: smscsim.StallBinds})
	e := dial(t, srv)
	req := pdu.NewBindRequest(pdu.Transceiver)
	req.SystemID = "herald"
	bindSeq := e.write(req)
	nackSeq := e.write(pdu.NewQuerySM())
	h, _ := e.read()
	require.Equal(t, data.GENERIC_NACK, h.CommandID)
	require.Equal(t, nackSeq, h.SequenceNumber)
	require.Zero(t, srv.Stats().Binds)
	srv.Resume()
	h, _ = e.read()
	require.Equal(t, data.BIND_TRANSCEIVER_RESP, h.CommandID)
	require.Equal(t, bindSeq, h.SequenceNumber)
	require.Equal(t, data.ESME_ROK, h.CommandStatus)
	require.Equal(t, uint64(1), srv.Stats().Binds)
}

// TestHeldRequestsDroppedWithTheConnection: requests held when their
// connection ends are never served.
func TestHeldRequestsDroppedWithTheConnection(t *testing.T) {
	srv := start(t, smscsim.Config{Record: true, Stall: smscsim.StallSubmits})
	e := dial(t, srv)
	e.bind(pdu.Transceiver, "herald", "")
	e.write(submit("447700900000", "lost", 1))
	e.write(submit("447700900000", "lost", 1))
	require.Eventually(t, func() bool { return srv.Stats().Held == 2 }, 2*time.Second, time.Millisecond)
	srv.DropConnections()
	require.Eventually(t, func() bool { return srv.Stats().Connections == 0 }, 2*time.Second, time.Millisecond)
	st := srv.Stats()
	require.Zero(t, st.Held)
	require.Zero(t, st.InFlight)
	srv.Resume()
	require.Zero(t, srv.Stats().Submits)
	require.Empty(t, srv.Parts())
}

// TestResendAcked: with ResendAcked the receipts acknowledged on a
// connection come again, once, on the next session.
func TestResendAcked(t *testing.T) {
	srv := start(t, smscsim.Config{ResendAcked: true, ResendDelay: time.Millisecond})
	e := dial(t, srv)
	e.bind(pdu.Transceiver, "herald", "")
	e.write(submit("447700900000", "x", 1))
	e.read()
	_, p := e.read()
	first := p.(*pdu.DeliverSM).OptionalParameters[pdu.TagReceiptedMessageID]
	e.respond(p.GetResponse())
	require.Eventually(t, func() bool { return srv.Stats().ReceiptsAcked == 1 }, 2*time.Second, time.Millisecond)
	require.NoError(t, e.nc.Close())

	e2 := dial(t, srv)
	e2.bind(pdu.Transceiver, "herald", "")
	h, p := e2.read()
	require.Equal(t, data.DELIVER_SM, h.CommandID)
	again := p.(*pdu.DeliverSM).OptionalParameters[pdu.TagReceiptedMessageID]
	require.Equal(t, first.String(), again.String(), "the acknowledged receipt came again")
	e2.respond(p.GetResponse())
	require.Eventually(t, func() bool { return srv.Stats().ReceiptsAcked == 2 }, 2*time.Second, time.Millisecond)
	srv.DropConnections()
	require.Eventually(t, func() bool { return srv.Stats().Connections == 0 }, 2*time.Second, time.Millisecond)
	st := srv.Stats()
	require.Equal(t, uint64(1), st.ReceiptsReplayed, "a receipt is replayed once")
	require.Zero(t, st.ReceiptsPending)
	require.Equal(t, uint64(2), st.ReceiptsSent)
}

// TestOnSubmit: the hook sees every answered submit_sm, accepted or not,
// before its answer is written.
func TestOnSubmit(t *testing.T) {
	seen := make(chan smscsim.Part, 4)
	srv := start(t, smscsim.Config{OnSubmit: func(p smscsim.Part) { seen <- p }})
	e := dial(t, srv)
	e.bind(pdu.Transmitter, "herald", "")
	tests := []struct {
		name   string
		faults smscsim.Faults
		to     string
		status data.CommandStatusType
	}{
		{"accepted", smscsim.Faults{}, "447700900000", data.ESME_ROK},
		{"refused", smscsim.Faults{Status: uint32(data.ESME_RINVDSTADR)}, "447700900001", data.ESME_RINVDSTADR},
	}
	for _, tt := range tests {
		srv.SetFaults(tt.faults)
		e.write(submit(tt.to, tt.name, 0))
		h, p := e.read()
		require.Equal(t, tt.status, h.CommandStatus, tt.name)
		select {
		case got := <-seen:
			require.Equal(t, tt.to, got.To, tt.name)
			require.Equal(t, tt.name, got.Text, tt.name)
			require.Equal(t, uint32(tt.status), got.Status, tt.name)
			if tt.status == data.ESME_ROK {
				require.Equal(t, p.(*pdu.SubmitSMResp).MessageID, got.MessageID)
			} else {
				require.Empty(t, got.MessageID)
			}
		default:
			t.Fatalf("%s: the hook was not called before the answer", tt.name)
		}
	}
}
