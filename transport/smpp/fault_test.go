package smpp_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/stretchr/testify/require"
)

// sendAll sends n texts at once, each under its own deadline, and returns
// their errors.
func sendAll(t *testing.T, c *smpp.Client, n int, d time.Duration, tag string) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			_, errs[i] = c.Send(ctx, delivery.SMS{From: "Herald", To: fmt.Sprintf("4477009%05d", i), Text: fmt.Sprintf("%s %d", tag, i)})
		}()
	}
	wg.Wait()
	return errs
}

// requireTransient asserts that every error is a transient failure
// matching target.
func requireTransient(t *testing.T, errs []error, target error) {
	t.Helper()
	for i, err := range errs {
		require.Error(t, err, "send %d", i)
		require.False(t, delivery.IsPermanent(err), "send %d: %v", i, err)
		require.ErrorIs(t, err, target, "send %d", i)
	}
}

// TestStalledSMSCFullWindow: an SMSC that stops answering submit_sm but
// keeps the link up. The sends fail transiently when their deadline ends,
// a send past the full window is never written, the slots come back when
// SubmitTimeout passes (the SMSC's late answers are ignored), and once the
// SMSC answers again a full window of new sends goes through on the same
// session.
func TestStalledSMSCFullWindow(t *testing.T) {
	const window = 4
	srv := startSim(t, smscsim.Config{})
	rs := newSink()
	c := newClient(t, srv.Addr(), rs.handle, func(cfg *smpp.Config) {
		cfg.Window = window
		cfg.SubmitTimeout = 300 * time.Millisecond
		cfg.EnquireLink = 20 * time.Millisecond // answered: the link is alive
	})
	require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
	srv.Stall(smscsim.StallSubmits)

	var stalled []error
	var extra error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); stalled = sendAll(t, c, window, 150*time.Millisecond, "stalled") }()
	require.Eventually(t, func() bool { return srv.Stats().Held == window }, 5*time.Second, time.Millisecond)
	_, extra = c.Send(ctxTimeout(t, 50*time.Millisecond), delivery.SMS{From: "Herald", To: "447700900999", Text: "past the window"})
	wg.Wait()
	requireTransient(t, stalled, context.DeadlineExceeded)
	requireTransient(t, []error{extra}, context.DeadlineExceeded)
	require.Equal(t, window, srv.Stats().Held, "the send past the full window was not written")

	require.Eventually(t, func() bool { return c.Stats().WindowInUse == 0 }, 5*time.Second, time.Millisecond,
		"SubmitTimeout frees the slots")
	st := c.Stats()
	require.Equal(t, uint64(window), st.SubmitErrors)
	require.Equal(t, uint64(window), st.Submits)

	srv.Resume() // the held submits are answered late, after they expired
	requireNoErrors(t, sendAll(t, c, window, 5*time.Second, "resumed"))
	rs.wait(t, 2*window) // the late ones' receipts too
	st = c.Stats()
	require.Zero(t, st.WindowInUse)
	require.Zero(t, st.Rebinds, "the link stayed up")
	require.True(t, st.Bound)
	require.Equal(t, window, srv.Stats().MaxInFlight)
}

func requireNoErrors(t *testing.T, errs []error) {
	t.Helper()
	for i, err := range errs {
		require.NoError(t, err, "send %d", i)
	}
}

// TestDeadLinkRebinds: an SMSC that hangs entirely (no answer to
// submit_sm, enquire_link nor bind) while the TCP connection stays open.
// The unanswered enquire_link ends the session, failing the submits in
// flight at once with ErrConnectionLost (long before their deadline or
// SubmitTimeout); while binds go unanswered the Client is not ready and
// refuses to wait past its callers' deadlines; once the SMSC answers, the
// Client binds again and a full window goes through.
func TestDeadLinkRebinds(t *testing.T) {
	const window = 4
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) {
		cfg.Window = window
		cfg.SubmitTimeout = time.Minute
		cfg.EnquireLink = 50 * time.Millisecond
		cfg.BindTimeout = 200 * time.Millisecond
	})
	require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
	srv.Stall(smscsim.StallSubmits)
	var errs []error
	done := make(chan struct{})
	go func() { defer close(done); errs = sendAll(t, c, window, time.Minute, "in flight") }()
	require.Eventually(t, func() bool { return srv.Stats().Held == window }, 5*time.Second, time.Millisecond)
	srv.Stall(smscsim.StallAll)
	<-done
	requireTransient(t, errs, smpp.ErrConnectionLost)
	require.Zero(t, c.Stats().WindowInUse)

	require.Eventually(t, func() bool { st := c.Stats(); return !st.Bound && st.BindFailures > 0 }, 5*time.Second, time.Millisecond,
		"binds go unanswered")
	err := c.WaitReady(ctxTimeout(t, 20*time.Millisecond))
	require.ErrorIs(t, err, context.DeadlineExceeded, "not ready while unbound")
	_, err = c.Send(ctxTimeout(t, 20*time.Millisecond), delivery.SMS{From: "Herald", To: "447700900000", Text: "unbound"})
	requireTransient(t, []error{err}, context.DeadlineExceeded)

	srv.Resume()
	require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
	requireNoErrors(t, sendAll(t, c, window, 5*time.Second, "after rebind"))
	st := c.Stats()
	require.GreaterOrEqual(t, st.Rebinds, uint64(1))
	require.Zero(t, st.WindowInUse)
	require.Equal(t, uint64(window), srv.Stats().Submits, "the stalled submits were never accepted")
}

// TestConnectionDroppedMidWindow: the SMSC closes the connection while a
// full window waits for answers. Every send fails at once with
// ErrConnectionLost, the Client binds again, and the next full window
// goes through; the SMSC accepted only the sends of the new session.
func TestConnectionDroppedMidWindow(t *testing.T) {
	const window = 4
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) {
		cfg.Window = window
		cfg.SubmitTimeout = time.Minute
	})
	require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
	srv.Stall(smscsim.StallSubmits)

	var errs []error
	done := make(chan struct{})
	go func() { defer close(done); errs = sendAll(t, c, window, time.Minute, "dropped") }()
	require.Eventually(t, func() bool { return srv.Stats().Held == window }, 5*time.Second, time.Millisecond)
	srv.DropConnections()
	<-done
	requireTransient(t, errs, smpp.ErrConnectionLost)
	require.Zero(t, c.Stats().WindowInUse)

	srv.Resume()
	requireNoErrors(t, sendAll(t, c, window, 5*time.Second, "after rebind"))
	st := c.Stats()
	require.Equal(t, uint64(1), st.Rebinds)
	require.Zero(t, st.WindowInUse)
	require.Equal(t, uint64(window), srv.Stats().Submits)
	for _, p := range srv.Parts() {
		require.Contains(t, p.Text, "after rebind")
	}
}
