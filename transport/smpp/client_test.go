package smpp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/template"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/stretchr/testify/require"
)

func TestSendTexts(t *testing.T) {
	srv := startSim(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	rs := newSink()
	c := newClient(t, srv.Addr(), rs.handle)

	long := strings.Repeat("Herald long GSM text. ", 19)[:400] // 400 septets: 3 parts
	emoji := strings.Repeat("a", 66) + "😀" + strings.Repeat("ü😀é", 30)
	ext := strings.Repeat("a", 152) + "€" + strings.Repeat("{x}[y]~^|\\", 20)
	tests := []struct {
		name  string
		to    string
		text  string
		dc    byte
		parts int
	}{
		{"short GSM-7", "447700900101", "Hello from Herald @ £5", 0, 1},
		{"long GSM-7", "447700900102", long, 0, 3},
		{"UCS-2 with emoji", "447700900103", emoji, 8, 0},
		{"extension characters", "447700900104", ext, 0, 0},
		{"short UCS-2", "447700900105", "Привет", 8, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.parts
			if want == 0 {
				want = template.Segment(tt.text).Segments
				require.Greater(t, want, 1)
			}
			res, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: tt.to, Text: tt.text})
			require.NoError(t, err)
			require.Len(t, res.PartIDs, want)

			msgs := srv.MessagesTo(tt.to)
			require.Len(t, msgs, 1)
			m := msgs[0]
			require.Equal(t, tt.text, m.Text, "the simulator reassembles the original text")
			require.Equal(t, want > 1, m.Concatenated)
			require.Equal(t, tt.dc, m.DataCoding)
			require.Len(t, m.Parts, want)

			seqs := map[uint32]bool{}
			ids := map[string]bool{}
			for i, p := range m.Parts {
				require.Equal(t, "Herald", p.From)
				require.Equal(t, [2]byte{5, 0}, [2]byte{p.FromTON, p.FromNPI})
				require.Equal(t, [2]byte{1, 1}, [2]byte{p.ToTON, p.ToNPI})
				require.Equal(t, byte(1), p.RegisteredDelivery)
				require.Equal(t, tt.dc, p.DataCoding)
				require.False(t, seqs[p.Seq], "every part has its own sequence number")
				seqs[p.Seq] = true
				require.Equal(t, smpp.NormalizeMessageID(p.MessageID), res.PartIDs[i], "PartIDs in part order")
				ids[res.PartIDs[i]] = true
				require.NotContains(t, p.Text, "\uFFFD", "no part splits a surrogate pair")
				if tt.dc == 0 {
					require.LessOrEqual(t, len(p.Data), 160)
					require.NotEqual(t, byte(0x1B), p.Data[len(p.Data)-1], "no part ends inside an escape")
				} else {
					require.LessOrEqual(t, len(p.Data), 140)
				}
				if want > 1 {
					require.NotZero(t, p.EsmClass&0x40, "UDHI")
					require.Equal(t, m.Parts[0].Ref, p.Ref, "one reference across parts")
					require.Equal(t, byte(want), p.Total)
					require.Equal(t, byte(i+1), p.Index)
				} else {
					require.Zero(t, p.EsmClass&0x40)
				}
			}
			require.Len(t, ids, want, "one provider id per part")

			got := rs.wait(t, want)
			for _, r := range got {
				require.True(t, ids[r.ProviderID], "receipt %q matches a part id", r.ProviderID)
				require.Equal(t, "DELIVRD", r.State)
				require.Equal(t, "000", r.Err)
				require.WithinDuration(t, time.Now(), r.At, 2*time.Minute)
			}
		})
	}
}

func TestReceiptOutcomes(t *testing.T) {
	for _, tlvs := range []bool{true, false} {
		name := "TLVs"
		if !tlvs {
			name = "text only"
		}
		t.Run(name, func(t *testing.T) {
			srv := startSim(t, smscsim.Config{OmitReceiptTLVs: !tlvs})
			rs := newSink()
			c := newClient(t, srv.Addr(), rs.handle)
			tests := []struct {
				to, state, err string
			}{
				{"447700900000", "DELIVRD", "000"},
				{"447700900001", "UNDELIV", "001"},
				{"447700900002", "EXPIRED", "002"},
				{"447700900003", "REJECTD", "003"},
			}
			for _, tt := range tests {
				res, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: tt.to, Text: "outcome"})
				require.NoError(t, err)
				r := rs.wait(t, 1)[0]
				require.Equal(t, res.PartIDs[0], r.ProviderID)
				require.Equal(t, tt.state, r.State, tt.to)
				require.Equal(t, tt.err, r.Err, tt.to)
			}
		})
	}
}

func TestReceiptAcknowledgedOnlyOnceStored(t *testing.T) {
	srv := startSim(t, smscsim.Config{ResendDelay: 20 * time.Millisecond})
	rs := newSink()
	rs.fail = func(r delivery.Receipt, calls int) error {
		if calls == 1 {
			return errors.New("database unavailable")
		}
		return nil
	}
	c := newClient(t, srv.Addr(), rs.handle)
	res, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "retry my receipt"})
	require.NoError(t, err)
	r := rs.wait(t, 1)[0]
	require.Equal(t, res.PartIDs[0], r.ProviderID)
	rs.mu.Lock()
	require.Equal(t, 2, rs.seen[r.ProviderID], "the refused receipt came again")
	rs.mu.Unlock()
	require.Eventually(t, func() bool { return srv.Stats().ReceiptsAcked == 1 }, 2*time.Second, 5*time.Millisecond)
	st := srv.Stats()
	require.Equal(t, uint64(1), st.ReceiptsRefused)
	require.Equal(t, uint64(2), st.ReceiptsSent)
	require.Zero(t, st.ReceiptsPending)
	cs := c.Stats()
	require.Equal(t, uint64(1), cs.ReceiptErrors)
	require.Equal(t, uint64(1), cs.Receipts)
}

// TestSubmitErrors: each command_status fails the Send with its code and
// kind. Throttled and queue-full parts are submitted again (at the lowest
// rate, 1/s, since nothing was accepted) until the Send's deadline leaves
// no time for another try, and then fail transiently with the SMSC's
// code. Each case has a Client of its own, so that one case's slowing
// down does not hold back the next.
func TestSubmitErrors(t *testing.T) {
	tests := []struct {
		name      string
		faults    smscsim.Faults
		permanent bool
		code      string
		details   string
	}{
		{"throttled", smscsim.Faults{ThrottleEvery: 1}, false, "0x00000058", "ESME_RTHROTTLED"},
		{"queue full", smscsim.Faults{Status: 0x14}, false, "0x00000014", "ESME_RMSGQFUL"},
		{"system error", smscsim.Faults{Status: 0x08}, false, "0x00000008", "ESME_RSYSERR"},
		{"invalid destination", smscsim.Faults{Status: 0x0B}, true, "0x0000000B", "ESME_RINVDSTADR"},
		{"invalid source", smscsim.Faults{Status: 0x0A}, true, "0x0000000A", "ESME_RINVSRCADR"},
		{"unknown status", smscsim.Faults{Status: 0x4242}, true, "0x00004242", "unknown"},
	}
	srv := startSim(t, smscsim.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, srv.Addr(), nil)
			srv.SetFaults(tt.faults)
			wait := 5 * time.Second
			if !tt.permanent {
				wait = 1500 * time.Millisecond // tried again until then
			}
			_, err := c.Send(ctxTimeout(t, wait), delivery.SMS{From: "Herald", To: "447700900000", Text: "hi"})
			var se *delivery.SendError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tt.permanent, se.Permanent)
			require.Equal(t, tt.permanent, delivery.IsPermanent(err))
			require.Equal(t, tt.code, se.Code)
			require.Contains(t, se.Details, tt.details)

			st := c.Stats()
			if tt.code == "0x00000058" || tt.code == "0x00000014" {
				require.GreaterOrEqual(t, st.Retries, uint64(1), "tried again")
				require.Equal(t, st.Retries+1, st.Throttled, "every throttled answer but the last was tried again")
				require.Equal(t, uint64(1), st.SubmitErrors, "one part failed")
			} else {
				require.Zero(t, st.Throttled)
				require.Zero(t, st.Retries)
			}

			srv.SetFaults(smscsim.Faults{})
			_, err = c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "hi"})
			require.NoError(t, err)
			require.Zero(t, c.Stats().WindowInUse)
		})
	}
}

// TestLongTextPartFailureFailsSend: the connection drops on the second of
// three parts: the Send fails transiently, and the SMSC never had the
// whole text.
func TestLongTextPartFailureFailsSend(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{DropAfter: 2}})
	c := newClient(t, srv.Addr(), nil)
	_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: strings.Repeat("x", 400)})
	require.Error(t, err)
	require.False(t, delivery.IsPermanent(err), "%v", err)
	require.ErrorIs(t, err, smpp.ErrConnectionLost)
	require.Empty(t, srv.MessagesTo("447700900000"), "the text was never complete")
}

// TestLongTextThrottledPartSentAgain: the SMSC throttles every other
// submit_sm, so parts of a three-part text are refused: each is submitted
// again on its own, and the text arrives whole, once, with its parts'
// ids in order.
func TestLongTextThrottledPartSentAgain(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{ThrottleEvery: 2}})
	c := newClient(t, srv.Addr(), nil)
	text := strings.Repeat("x", 400)
	res, err := c.Send(ctxTimeout(t, 10*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: text})
	require.NoError(t, err)
	require.Len(t, res.PartIDs, 3)
	msgs := srv.MessagesTo("447700900000")
	require.Len(t, msgs, 1, "one text, not duplicated")
	require.Equal(t, text, msgs[0].Text)
	st := srv.Stats()
	require.Equal(t, uint64(3), st.Accepted)
	require.Equal(t, st.Throttled, c.Stats().Throttled)
	require.Equal(t, st.Throttled, c.Stats().Retries)
	require.Positive(t, st.Throttled)
	for i, p := range msgs[0].Parts {
		require.Equal(t, res.PartIDs[i], smpp.NormalizeMessageID(p.MessageID), "part %d", i+1)
	}
}

func TestInvalidSMSNeverSent(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil)
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	tests := []struct {
		name string
		sms  delivery.SMS
	}{
		{"no sender", delivery.SMS{To: "447700900000", Text: "x"}},
		{"sender too long", delivery.SMS{From: "HeraldHerald", To: "447700900000", Text: "x"}},
		{"non-ASCII sender", delivery.SMS{From: "Hérald", To: "447700900000", Text: "x"}},
		{"plus sign", delivery.SMS{From: "Herald", To: "+447700900000", Text: "x"}},
		{"no destination", delivery.SMS{From: "Herald", Text: "x"}},
		{"empty text", delivery.SMS{From: "Herald", To: "447700900000"}},
		{"too many parts", delivery.SMS{From: "Herald", To: "447700900000", Text: strings.Repeat("x", 153*255+1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Send(ctxTimeout(t, time.Second), tt.sms)
			require.True(t, delivery.IsPermanent(err), "%v", err)
		})
	}
	require.Zero(t, srv.Stats().Submits)
}

func TestDroppedConnection(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{RespDelay: 100 * time.Millisecond, DropAfter: 5}})
	rs := newSink()
	c := newClient(t, srv.Addr(), rs.handle)
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))

	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "mid-stream"})
		}()
	}
	wg.Wait()
	lost := 0
	for _, err := range errs {
		// a Send that came late may have gone through the new session
		if err != nil {
			require.False(t, delivery.IsPermanent(err), "%v", err)
		}
		if errors.Is(err, smpp.ErrConnectionLost) {
			lost++
		}
	}
	require.GreaterOrEqual(t, lost, 4, "the outstanding submits failed with the connection")
	require.Zero(t, c.Stats().WindowInUse)

	srv.SetFaults(smscsim.Faults{})
	res, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "after rebind"})
	require.NoError(t, err)
	require.Equal(t, "DELIVRD", rs.waitFor(t, res.PartIDs[0]).State)
	st := c.Stats()
	require.Equal(t, uint64(1), st.Rebinds)
	require.Equal(t, uint64(2), st.Binds)
	require.True(t, st.Bound)
}

func TestRebindAfterDropConnections(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil)
	for i := range 3 {
		_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "x"})
		require.NoError(t, err)
		srv.DropConnections()
		require.Eventually(t, func() bool { return c.Stats().Rebinds == uint64(i+1) }, 5*time.Second, 5*time.Millisecond)
	}
}

func TestFirstBindRetried(t *testing.T) {
	addr := freeAddr(t)
	c := newClient(t, addr, nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.Send(ctxTimeout(t, 10*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "early"})
		done <- err
	}()
	require.Eventually(t, func() bool { return c.Stats().BindFailures >= 2 }, 5*time.Second, 5*time.Millisecond)
	require.False(t, c.Stats().Bound)

	srv := smscsim.New(smscsim.Config{Record: true})
	require.NoError(t, srv.Start(addr))
	t.Cleanup(func() { _ = srv.Close() })
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Send did not complete once the SMSC was up")
	}
	require.Len(t, srv.MessagesTo("447700900000"), 1)
	require.Equal(t, uint64(1), c.Stats().Binds)
}

func TestBindRefused(t *testing.T) {
	srv := startSim(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) { cfg.Password = "wrong" })
	require.Eventually(t, func() bool { return c.Stats().BindFailures >= 2 }, 5*time.Second, time.Millisecond, "binds are retried")
	_, err := c.Send(ctxTimeout(t, 50*time.Millisecond), delivery.SMS{From: "Herald", To: "447700900000", Text: "x"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, delivery.IsPermanent(err))
	require.GreaterOrEqual(t, srv.Stats().BindFailures, uint64(2))
	require.Zero(t, c.Stats().Binds)
}

// TestWindowNeverExceeded: a Client whose sessions are not paced (a cap
// far above what it sends: no ramp) uses its whole window and never more.
func TestWindowNeverExceeded(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{RespDelay: 10 * time.Millisecond}})
	rs := newSink()
	c := newClient(t, srv.Addr(), rs.handle, func(cfg *smpp.Config) {
		cfg.Window = 5
		cfg.MaxPerSecond = 1e6
	})
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: strings.Repeat("w", 200)})
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	st := srv.Stats()
	require.Equal(t, uint64(40), st.Submits)
	require.Equal(t, 5, st.MaxInFlight, "the window is used up and never exceeded")
	rs.wait(t, 40)
}

func TestSubmitTimeout(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{RespDelay: 300 * time.Millisecond}})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) { cfg.SubmitTimeout = 50 * time.Millisecond })
	_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "slow"})
	require.ErrorIs(t, err, smpp.ErrSubmitTimeout)
	require.False(t, delivery.IsPermanent(err))
	require.Zero(t, c.Stats().WindowInUse, "an expired submit frees its slot")
	require.Equal(t, uint64(1), c.Stats().SubmitErrors)
}

func TestCanceledSendKeepsItsSlotUntilAnswered(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{RespDelay: 150 * time.Millisecond}})
	c := newClient(t, srv.Addr(), nil)
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	_, err := c.Send(ctxTimeout(t, 30*time.Millisecond), delivery.SMS{From: "Herald", To: "447700900000", Text: "x"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, c.Stats().WindowInUse, "the SMSC still counts the submit")
	require.Eventually(t, func() bool { return c.Stats().WindowInUse == 0 }, 2*time.Second, 5*time.Millisecond)
}

// TestPacingGivesUpNoTokens: sends that stop waiting for their turn (their
// context ends) leave the pace to the others. With 5 submits a second and
// 30 sends that give up after 50ms, a later send is still paced at 5/s,
// not behind the 30 that left.
func TestPacingGivesUpNoTokens(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) { cfg.MaxPerSecond = 5 })
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "first"})
	require.NoError(t, err, "the bucket's one token")
	var wg sync.WaitGroup
	var gaveUp atomic.Int32
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Send(ctxTimeout(t, 50*time.Millisecond), delivery.SMS{From: "Herald", To: "447700900000", Text: "impatient"})
			if err != nil {
				gaveUp.Add(1)
			}
		}()
	}
	wg.Wait()
	require.GreaterOrEqual(t, gaveUp.Load(), int32(29), "at 5/s at most one token falls due within 50ms")
	_, err = c.Send(ctxTimeout(t, time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "patient"})
	require.NoError(t, err, "the next token is at most 200ms away")
}

func TestMaxPerSecond(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) { cfg.MaxPerSecond = 200 })
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	start := time.Now()
	var wg sync.WaitGroup
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "paced"})
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	// A bucket of 20 tokens, then 200/s: the last 40 take at least 200ms.
	require.GreaterOrEqual(t, time.Since(start), 190*time.Millisecond)
}

func TestCloseUnbindsAndRefusesSends(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{RespDelay: 50 * time.Millisecond}})
	c, err := smpp.New(smpp.Config{Addr: srv.Addr(), Logger: testLogger()})
	require.NoError(t, err)
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	sent := make(chan error, 1)
	go func() {
		_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "in flight"})
		sent <- err
	}()
	require.Eventually(t, func() bool { return c.Stats().WindowInUse == 1 }, 2*time.Second, time.Millisecond)
	require.NoError(t, c.Close(ctxTimeout(t, 5*time.Second)))
	require.NoError(t, <-sent, "Close waits for outstanding submits")
	_, err = c.Send(ctxTimeout(t, time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "late"})
	require.ErrorIs(t, err, smpp.ErrClosed)
	require.False(t, delivery.IsPermanent(err))
	require.Eventually(t, func() bool { return srv.Stats().Connections == 0 }, 2*time.Second, 5*time.Millisecond)
	require.NoError(t, c.Close(context.Background()), "Close twice")
}

// TestCloseHonoursItsContext: Close whose context ends while a submit is
// still unanswered returns then, with the context's error, rather than
// when the submit is answered or times out.
func TestCloseHonoursItsContext(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{RespDelay: 10 * time.Second}})
	c, err := smpp.New(smpp.Config{Addr: srv.Addr(), SubmitTimeout: 20 * time.Second, Logger: testLogger()})
	require.NoError(t, err)
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	sent := make(chan error, 1)
	go func() {
		_, err := c.Send(ctxTimeout(t, 20*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "in flight"})
		sent <- err
	}()
	require.Eventually(t, func() bool { return c.Stats().WindowInUse == 1 }, 2*time.Second, time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- c.Close(ctxTimeout(t, 100*time.Millisecond)) }()
	select {
	case err := <-closed:
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "1 submits unanswered")
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return when its context ended")
	}
	require.Error(t, <-sent, "the unanswered submit fails when the session closes")
}

func TestConfigValidation(t *testing.T) {
	_, err := smpp.New(smpp.Config{})
	require.Error(t, err)
	_, err = smpp.New(smpp.Config{Addr: "127.0.0.1:1", Window: -1})
	require.Error(t, err)
	_, err = smpp.New(smpp.Config{Addr: "127.0.0.1:1", SystemID: strings.Repeat("s", 16)})
	require.Error(t, err)
}

// logBuffer collects a logger's JSON records, safe for concurrent writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the records logged so far with the given message.
func (b *logBuffer) records(t *testing.T, msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal(line, &r))
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestSessionLogs: failed binds, binds and lost sessions are logged, with
// the error and the wait before the next try.
func TestSessionLogs(t *testing.T) {
	logs := &logBuffer{}
	addr := freeAddr(t)
	c := newClient(t, addr, nil, func(cfg *smpp.Config) { cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	require.Eventually(t, func() bool { return len(logs.records(t, "smpp bind failed")) >= 1 }, 5*time.Second, 5*time.Millisecond)
	failed := logs.records(t, "smpp bind failed")[0]
	require.Equal(t, "WARN", failed["level"])
	require.Contains(t, failed["err"], "connection refused")
	require.NotEmpty(t, failed["retry_in"])

	srv := smscsim.New(smscsim.Config{})
	require.NoError(t, srv.Start(addr))
	t.Cleanup(func() { _ = srv.Close() })
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	bound := logs.records(t, "smpp bound")
	require.Len(t, bound, 1)
	require.Equal(t, "INFO", bound[0]["level"])
	require.Equal(t, "herald", bound[0]["system_id"])

	srv.DropConnections()
	require.Eventually(t, func() bool { return len(logs.records(t, "smpp bound")) == 2 }, 5*time.Second, 5*time.Millisecond, "bound again")
	lost := logs.records(t, "smpp session lost")
	require.Len(t, lost, 1)
	require.Equal(t, "WARN", lost[0]["level"])
	require.NotEmpty(t, lost[0]["err"])
}

// TestSlowReceiptStoreLeavesSubmitsFlowing: while the receipt handler is
// blocked (a store busy committing), the session keeps reading
// submit_sm_resp for as many receipts as the default ReceiptConcurrency
// allows, so sends are not held to the pace of receipt commits.
func TestSlowReceiptStoreLeavesSubmitsFlowing(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	release := make(chan struct{})
	var held atomic.Int64
	c := newClient(t, srv.Addr(), func(ctx context.Context, r delivery.Receipt) error {
		held.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	const n = 600 // well past the window and the old bound of 64 handlers
	ctx := ctxTimeout(t, 10*time.Second)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := c.Send(ctx, delivery.SMS{From: "Herald", To: fmt.Sprintf("4477009%05d", i), Text: "held receipt"})
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	require.Equal(t, uint64(n), srv.Stats().Submits)
	require.Eventually(t, func() bool { return held.Load() == n }, 5*time.Second, 5*time.Millisecond,
		"every receipt reached the blocked handler")
	require.Zero(t, c.Stats().Receipts, "no receipt was stored while the handler was blocked")
	close(release)
	require.Eventually(t, func() bool { return c.Stats().Receipts == n }, 5*time.Second, 5*time.Millisecond)
}
