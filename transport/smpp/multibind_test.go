package smpp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"github.com/stretchr/testify/require"
)

// withBinds sets Config.Binds.
func withBinds(n int) func(*smpp.Config) { return func(cfg *smpp.Config) { cfg.Binds = n } }

// waitBindsUp waits until n sessions of c are bound.
func waitBindsUp(t *testing.T, c *smpp.Client, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.State().BindsUp == n }, 5*time.Second, time.Millisecond,
		"%d sessions bound", n)
}

// TestBindsSpreadSubmits: a Client with Binds 3 keeps three sessions
// bound to the SMSC, and texts sent one after the other go over all of
// them; each session's count in State is what went over its connection.
func TestBindsSpreadSubmits(t *testing.T) {
	srv := startSim(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	px := startProxy(t, listenTCP(t), srv.Addr())
	rs := newSink()
	c := newClient(t, px.addr(), rs.handle, withBinds(3))
	waitBindsUp(t, c, 3)
	require.Equal(t, 3, srv.Stats().Connections)
	require.Equal(t, uint64(3), srv.Stats().Binds)
	require.True(t, c.Stats().Bound)

	const n = 30
	ids := sendN(t, c, n)
	st := c.State()
	require.Equal(t, 3, st.Binds)
	require.Equal(t, 3, st.BindsUp)
	require.Equal(t, 3*smpp.DefaultWindow, st.Window)
	require.Equal(t, uint64(n), st.Submits)
	require.Zero(t, st.SubmitErrors)
	require.Len(t, st.Sessions, 3)
	var total int64
	for i, ss := range st.Sessions {
		require.True(t, ss.Bound, "session %d", i)
		require.False(t, ss.Since.IsZero())
		pc := px.byClient(ss.LocalAddr)
		require.Equal(t, int64(ss.Submits), pc.submits.Load(), "session %d: counted as the SMSC saw", i)
		require.GreaterOrEqual(t, ss.Submits, uint64(n/6), "session %d carries its share", i)
		total += pc.submits.Load()
	}
	require.Equal(t, int64(n), total)
	require.Equal(t, uint64(n), srv.Stats().Submits)
	got := map[string]bool{}
	for _, r := range rs.wait(t, n) {
		got[r.ProviderID] = true
	}
	for _, id := range ids {
		require.True(t, got[id], "receipt of %s", id)
	}
}

// TestBindsWindowPerSession: Window is per session. With 3 sessions of 2
// and an SMSC that holds every submit, 6 are written, 2 on each
// connection, and the other sends wait; once the SMSC answers, all go
// through and the SMSC never had more than 6 outstanding.
func TestBindsWindowPerSession(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	px := startProxy(t, listenTCP(t), srv.Addr())
	c := newClient(t, px.addr(), nil, withBinds(3), func(cfg *smpp.Config) {
		cfg.Window = 2
		cfg.SubmitTimeout = time.Minute
	})
	waitBindsUp(t, c, 3)
	srv.Stall(smscsim.StallSubmits)

	var errs []error
	done := make(chan struct{})
	go func() { defer close(done); errs = sendAll(t, c, 8, time.Minute, "windowed") }()
	require.Eventually(t, func() bool { return srv.Stats().Held == 6 }, 5*time.Second, time.Millisecond)
	st := c.State()
	require.Equal(t, 6, st.Window)
	require.Equal(t, 6, st.WindowInUse)
	for i, ss := range st.Sessions {
		require.Equal(t, 2, ss.WindowInUse, "session %d", i)
		require.Equal(t, int64(2), px.byClient(ss.LocalAddr).submits.Load(), "session %d: a full window, no more", i)
	}

	srv.Resume()
	<-done
	requireNoErrors(t, errs)
	require.Equal(t, uint64(8), srv.Stats().Submits)
	require.Equal(t, 6, srv.Stats().MaxInFlight)
	require.Zero(t, c.Stats().WindowInUse)
}

// TestBindsSessionDropLeavesOthersSending: one session's connection is
// cut and kept from binding again. The Client stays ready, the other two
// sessions carry every send meanwhile, and the lost one binds again on
// its own once it can, then takes its share.
func TestBindsSessionDropLeavesOthersSending(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	px := startProxy(t, listenTCP(t), srv.Addr())
	c := newClient(t, px.addr(), nil, withBinds(3))
	waitBindsUp(t, c, 3)

	victim := px.byClient(c.State().Sessions[0].LocalAddr)
	px.setMax(2)
	victim.close()
	require.Eventually(t, func() bool {
		st := c.State()
		return st.BindsUp == 2 && !st.Sessions[0].Bound && st.BindFailures >= 2
	}, 5*time.Second, time.Millisecond, "the lost session tries to bind again, and is refused")
	st := c.State()
	require.Error(t, st.LastSessionLost.Err)
	require.False(t, st.LastSessionLost.At.IsZero())
	require.Error(t, st.LastBindError.Err)
	require.NoError(t, c.WaitReady(ctxTimeout(t, time.Second)), "ready with two sessions of three")

	before := victim.submits.Load()
	sendN(t, c, 12)
	require.Equal(t, before, victim.submits.Load())
	live := px.live()
	require.Len(t, live, 2)
	for _, pc := range live {
		require.GreaterOrEqual(t, pc.submits.Load(), int64(3), "both remaining sessions send")
	}
	require.Zero(t, c.Stats().Rebinds)

	px.setMax(-1)
	waitBindsUp(t, c, 3)
	require.Equal(t, uint64(1), c.Stats().Rebinds)
	require.Equal(t, uint64(4), srv.Stats().Binds)
	sendN(t, c, 9)
	rebound := px.byClient(c.State().Sessions[0].LocalAddr)
	require.NotSame(t, victim, rebound)
	require.Positive(t, rebound.submits.Load(), "the rebound session takes its share")
	require.Equal(t, uint64(21), srv.Stats().Submits)
}

// TestBindsReadyWhileOneIsBound: the Client is ready while at least one of
// its sessions is bound, and only then.
func TestBindsReadyWhileOneIsBound(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	px := startProxy(t, listenTCP(t), srv.Addr())
	px.setMax(1)
	c := newClient(t, px.addr(), nil, withBinds(2))
	require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
	require.Eventually(t, func() bool { return c.State().BindFailures >= 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, 1, c.State().BindsUp)
	_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "one of two"})
	require.NoError(t, err)

	px.setMax(0)
	px.live()[0].close()
	require.Eventually(t, func() bool { return !c.Stats().Bound }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, c.WaitReady(ctxTimeout(t, 20*time.Millisecond)), context.DeadlineExceeded, "not ready with none bound")

	px.setMax(-1)
	require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
	waitBindsUp(t, c, 2)
}

// TestBindsReceiptsFromEverySession: receipts and mobile-originated
// messages are read, handled and acknowledged on whichever session the
// SMSC sends them.
func TestBindsReceiptsFromEverySession(t *testing.T) {
	s := newScripted(t)
	rs := newSink()
	mo := &inboundSink{}
	c := newClient(t, s.l.Addr().String(), rs.handle, withBinds(3), func(cfg *smpp.Config) { cfg.InboundHandler = mo.handle })
	peers := []*peer{s.accept(), s.accept(), s.accept()}
	waitBindsUp(t, c, 3)
	for i, p := range peers {
		d := deliverSM(int32(10+i), data.SM_SMSC_DLV_RCPT_TYPE, fmt.Sprintf("id:%d stat:DELIVRD err:000", 100+i))
		p.write(d)
		resp, ok := p.readSkipping().(*pdu.DeliverSMResp)
		require.True(t, ok, "session %d", i)
		require.Equal(t, d.GetSequenceNumber(), resp.GetSequenceNumber())
		require.Equal(t, data.ESME_ROK, resp.CommandStatus)
		require.Equal(t, fmt.Sprint(100+i), rs.wait(t, 1)[0].ProviderID)

		p.write(deliverSM(int32(20+i), 0, fmt.Sprintf("reply %d", i)))
		resp, ok = p.readSkipping().(*pdu.DeliverSMResp)
		require.True(t, ok, "session %d", i)
		require.Equal(t, data.ESME_ROK, resp.CommandStatus)
	}
	mo.mu.Lock()
	require.Len(t, mo.parts, 3)
	for i, part := range mo.parts {
		require.Equal(t, fmt.Sprintf("reply %d", i), part.Text)
	}
	mo.mu.Unlock()
	require.Equal(t, uint64(3), c.Stats().Receipts)
	require.Equal(t, uint64(3), c.Stats().MOMessages)
}

// TestMaxPerSecondAcrossSessions: MaxPerSecond caps the whole Client, not
// each session: 30 sends at 50 a second over 3 sessions take at least
// the half second the bucket allows, however they are spread.
func TestMaxPerSecondAcrossSessions(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	px := startProxy(t, listenTCP(t), srv.Addr())
	c := newClient(t, px.addr(), nil, withBinds(3), func(cfg *smpp.Config) { cfg.MaxPerSecond = 50 })
	waitBindsUp(t, c, 3)
	start := time.Now()
	requireNoErrors(t, sendAll(t, c, 30, 10*time.Second, "paced"))
	// A bucket of 5 tokens, then 50/s: the last 25 take at least 500ms.
	require.GreaterOrEqual(t, time.Since(start), 450*time.Millisecond)
	st := srv.Stats()
	require.Equal(t, uint64(30), st.Submits)
	require.GreaterOrEqual(t, st.LastSubmit.Sub(st.FirstSubmit), 400*time.Millisecond, "the SMSC saw the pace")
	for _, pc := range px.live() {
		require.Positive(t, pc.submits.Load(), "every session sent")
	}
}

// TestBindTransmitter: a transmitter Client binds with bind_transmitter
// and sends, but the SMSC delivers no receipt to it: the receipt waits
// for a transceiver bound with the same account.
func TestBindTransmitter(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	px := startProxy(t, listenTCP(t), srv.Addr())
	tx := newSink()
	c := newClient(t, px.addr(), tx.handle, func(cfg *smpp.Config) { cfg.BindType = smpp.BindTransmitter })
	res, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "sent by a transmitter"})
	require.NoError(t, err)
	require.Equal(t, uint32(data.BIND_TRANSMITTER), px.live()[0].bindID.Load())
	require.Equal(t, smpp.BindTransmitter, c.State().BindType)
	require.Eventually(t, func() bool { return srv.Stats().ReceiptsPending == 1 }, 5*time.Second, time.Millisecond)
	require.Zero(t, srv.Stats().ReceiptsSent, "no deliver_sm to a transmitter")

	trx := newSink()
	other := newClient(t, srv.Addr(), trx.handle)
	require.Equal(t, "DELIVRD", trx.waitFor(t, res.PartIDs[0]).State, "a transceiver takes it")
	require.Equal(t, uint64(1), other.Stats().Receipts)
	require.Zero(t, c.Stats().Receipts)
	tx.mu.Lock()
	require.Empty(t, tx.got)
	tx.mu.Unlock()
}

// TestAddressTONNPI: the TON and NPI of the addresses are the configured
// ones, 0 included; those left nil keep their defaults.
func TestAddressTONNPI(t *testing.T) {
	tests := []struct {
		name     string
		mod      func(*smpp.Config)
		from, to [2]byte
	}{
		{"defaults", func(*smpp.Config) {}, [2]byte{5, 0}, [2]byte{1, 1}},
		{"all set", func(cfg *smpp.Config) {
			cfg.SourceTON, cfg.SourceNPI = new(uint8(1)), new(uint8(1))
			cfg.DestTON, cfg.DestNPI = new(uint8(0)), new(uint8(0))
		}, [2]byte{1, 1}, [2]byte{0, 0}},
		{"destination TON only", func(cfg *smpp.Config) { cfg.DestTON = new(uint8(2)) }, [2]byte{5, 0}, [2]byte{2, 1}},
	}
	srv := startSim(t, smscsim.Config{})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, srv.Addr(), nil, tt.mod)
			to := fmt.Sprintf("4477009002%02d", i)
			_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: to, Text: "addressing"})
			require.NoError(t, err)
			msgs := srv.MessagesTo(to)
			require.Len(t, msgs, 1)
			p := msgs[0].Parts[0]
			require.Equal(t, tt.from, [2]byte{p.FromTON, p.FromNPI})
			require.Equal(t, tt.to, [2]byte{p.ToTON, p.ToNPI})
		})
	}
}

// TestMultiBindConfig: Binds and BindType are validated, their defaults
// show in State, and State encodes to JSON for an admin API.
func TestMultiBindConfig(t *testing.T) {
	_, err := smpp.New(smpp.Config{Addr: "127.0.0.1:1", Binds: -1})
	require.Error(t, err)
	_, err = smpp.New(smpp.Config{Addr: "127.0.0.1:1", BindType: smpp.BindType(7)})
	require.ErrorContains(t, err, "bind type")

	for in, want := range map[string]smpp.BindType{"": smpp.BindTransceiver, "TRX": smpp.BindTransceiver, "transmitter": smpp.BindTransmitter, " tx ": smpp.BindTransmitter} {
		got, err := smpp.ParseBindType(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err = smpp.ParseBindType("receiver")
	require.Error(t, err)
	var bt struct{ Type smpp.BindType }
	require.NoError(t, json.Unmarshal([]byte(`{"Type":"transmitter"}`), &bt))
	require.Equal(t, smpp.BindTransmitter, bt.Type)
	require.Error(t, json.Unmarshal([]byte(`{"Type":"receiver"}`), &bt))

	c := newClient(t, freeAddr(t), nil)
	require.Eventually(t, func() bool { return c.State().LastBindError.Err != nil }, 5*time.Second, time.Millisecond)
	st := c.State()
	require.Equal(t, 1, st.Binds)
	require.Zero(t, st.BindsUp)
	require.Equal(t, smpp.DefaultWindow, st.Window)
	require.False(t, st.TLS)
	require.Len(t, st.Sessions, 1)
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, "transceiver", got["bind_type"])
	require.Nil(t, got["last_submit_error"])
	lastBind, ok := got["last_bind_error"].(map[string]any)
	require.True(t, ok, "%s", b)
	require.Contains(t, lastBind["error"], "connection refused")
	require.NotEmpty(t, lastBind["at"])
}

// TestStateLastSubmitError: a refused submit shows in State with its
// time, next to the counts.
func TestStateLastSubmitError(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{Status: 0x0B}})
	c := newClient(t, srv.Addr(), nil, withBinds(2))
	before := time.Now()
	_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "refused"})
	require.True(t, delivery.IsPermanent(err))
	st := c.State()
	require.Equal(t, uint64(1), st.Submits)
	require.Equal(t, uint64(1), st.SubmitErrors)
	var se *delivery.SendError
	require.ErrorAs(t, st.LastSubmitError.Err, &se)
	require.Equal(t, "0x0000000B", se.Code)
	require.False(t, st.LastSubmitError.At.Before(before))
	require.Nil(t, st.LastBindError.Err)
}
