package smpp_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/stretchr/testify/require"
)

// fullSeconds returns the seconds of srv.SubmitsPerSecond that lie whole
// between from and to.
func fullSeconds(srv *smscsim.Server, from, to time.Time) []smscsim.Second {
	var out []smscsim.Second
	for _, s := range srv.SubmitsPerSecond() {
		if !s.Start.Before(from) && !s.Start.Add(time.Second).After(to) {
			out = append(out, s)
		}
	}
	return out
}

// TestThrottledClientBacksOff: one bind to an SMSC that takes 100
// submit_sm a second on it, and a Client without a cap sending 300 texts
// at once. The SMSC throttles once the Client's rate, ramping up, passes
// its own; the Client slows down instead of failing: every Send succeeds,
// each text is accepted once, every throttled part was submitted again,
// the throttled answers are far fewer than the sends, and after the first
// second hardly any. The SMSC saw no more than about its rate in any full
// second, and the Client did not crawl either.
func TestThrottledClientBacksOff(t *testing.T) {
	const n, bindRate = 300, 100
	srv := startSim(t, smscsim.Config{BindRate: bindRate})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) { cfg.SubmitTimeout = 10 * time.Second })
	require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))

	start := time.Now()
	requireNoErrors(t, sendAll(t, c, n, time.Minute, "backed off"))
	end := time.Now()

	st := srv.Stats()
	require.Equal(t, uint64(n), st.Accepted, "each text accepted once")
	require.Len(t, srv.Messages(), n)
	require.Equal(t, st.RateLimited, st.Throttled, "only the bind rate throttled")
	require.Less(t, st.Throttled, uint64(n/2), "the Client backed off")
	cs := c.State()
	require.Equal(t, st.Throttled, cs.Throttled)
	require.Equal(t, cs.Throttled, cs.Retries, "every throttled part was submitted again")
	require.Equal(t, uint64(n)+cs.Retries, cs.Submits)
	require.Zero(t, cs.SubmitErrors)
	require.Zero(t, cs.MaxPerSecond, "no cap configured")
	if st.Throttled > 0 {
		require.Positive(t, cs.EffectivePerSecond, "slowed down after throttling")
	}

	later := 0
	for _, s := range srv.SubmitsPerSecond() {
		if !s.Start.Before(start.Add(time.Second)) {
			later += s.Throttled
		}
	}
	require.LessOrEqual(t, later, n/10, "hardly any throttled once the Client slowed down")

	secs := fullSeconds(srv, start.Truncate(time.Second).Add(time.Second), end.Truncate(time.Second))
	total := 0
	for _, s := range secs {
		t.Logf("%s: %d accepted, %d throttled", s.Start.Format("15:04:05"), s.Accepted, s.Throttled)
		require.LessOrEqual(t, s.Accepted, bindRate*13/10, "no more than the SMSC's rate (and its burst)")
		total += s.Accepted
	}
	if len(secs) > 0 {
		require.GreaterOrEqual(t, total/len(secs), bindRate/3, "the Client did not crawl")
	}
	t.Logf("%d sends in %s, %d throttled", n, end.Sub(start).Round(time.Millisecond), st.Throttled)
}

// stream keeps workers sending texts to c, each under a deadline of d,
// until the test ends or stop is called; it counts the failures.
type stream struct {
	stop   func()
	failed atomic.Int64
	sent   atomic.Int64
}

func startStream(t *testing.T, c *smpp.Client, workers int, d time.Duration) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				sctx, scancel := context.WithTimeout(ctx, d)
				_, err := c.Send(sctx, delivery.SMS{From: "Herald", To: "447700900000", Text: fmt.Sprintf("stream %d/%d", w, i)})
				scancel()
				switch {
				case err == nil:
					s.sent.Add(1)
				case ctx.Err() == nil:
					s.failed.Add(1)
				}
			}
		})
	}
	var once sync.Once
	s.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(s.stop)
	return s
}

// TestSetMaxPerSecond: the cap of a running Client changes at once, while
// texts stream through it: from 200 a second down to 20, up to 100, then
// none. The SMSC sees each rate (generous margins), State reports the
// cap and the effective rate, and no Send fails.
func TestSetMaxPerSecond(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) { cfg.MaxPerSecond = 200 })
	require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
	st := c.State()
	require.Equal(t, 200.0, st.MaxPerSecond)
	require.Equal(t, 200.0, st.EffectivePerSecond)
	s := startStream(t, c, 40, 30*time.Second)

	const phase = 2300 * time.Millisecond
	for _, tc := range []struct {
		rate     float64
		min, max int // accepted in a full second
	}{
		{200, 100, 260},
		{20, 10, 30},
		{100, 50, 130},
	} {
		if tc.rate != 200 {
			c.SetMaxPerSecond(tc.rate)
		}
		st := c.State()
		require.Equal(t, tc.rate, st.MaxPerSecond)
		require.Equal(t, tc.rate, st.EffectivePerSecond, "not throttled: the cap applies as it is")
		from := time.Now().Add(300 * time.Millisecond) // the waiters of the old rate go by
		time.Sleep(phase)
		secs := fullSeconds(srv, from, time.Now())
		require.NotEmpty(t, secs)
		for _, sec := range secs {
			t.Logf("cap %v: %s: %d accepted", tc.rate, sec.Start.Format("15:04:05"), sec.Accepted)
			require.GreaterOrEqual(t, sec.Accepted, tc.min, "cap %v", tc.rate)
			require.LessOrEqual(t, sec.Accepted, tc.max, "cap %v", tc.rate)
		}
	}
	// No cap: well above the last one.
	c.SetMaxPerSecond(0)
	st = c.State()
	require.Zero(t, st.MaxPerSecond)
	require.Zero(t, st.EffectivePerSecond)
	time.Sleep(100 * time.Millisecond)
	before, start := srv.Stats().Accepted, time.Now()
	time.Sleep(500 * time.Millisecond)
	perSecond := float64(srv.Stats().Accepted-before) / time.Since(start).Seconds()
	t.Logf("no cap: %.0f accepted a second", perSecond)
	require.Greater(t, perSecond, 300.0)

	s.stop()
	require.Zero(t, s.failed.Load(), "no Send failed")
	require.Zero(t, c.State().Throttled)

	c.SetMaxPerSecond(-1)
	require.Zero(t, c.State().MaxPerSecond, "a negative rate is no cap")
}

// TestThrottledSendContextEnds: an SMSC that throttles every submit_sm.
// The Send tries the part again until its context ends, then fails
// transiently with the SMSC's status, whether the context ran out of
// time or was cancelled; the SMSC accepted nothing, and the failure is
// counted and shown in State.
func TestThrottledSendContextEnds(t *testing.T) {
	srv := startSim(t, smscsim.Config{Faults: smscsim.Faults{ThrottleEvery: 1}})
	sms := delivery.SMS{From: "Herald", To: "447700900000", Text: "never accepted"}
	check := func(t *testing.T, c *smpp.Client, err error) {
		t.Helper()
		require.Error(t, err)
		require.False(t, delivery.IsPermanent(err), "%v", err)
		var se *delivery.SendError
		require.ErrorAs(t, err, &se)
		require.Equal(t, "0x00000058", se.Code)
		st := c.State()
		require.GreaterOrEqual(t, st.Retries, uint64(1), "tried again")
		require.Equal(t, st.Retries+1, st.Throttled)
		require.Equal(t, uint64(1), st.SubmitErrors)
		require.ErrorAs(t, st.LastSubmitError.Err, &se)
		require.Equal(t, "0x00000058", se.Code)
		require.Zero(t, st.WindowInUse)
	}

	t.Run("deadline", func(t *testing.T) {
		c := newClient(t, srv.Addr(), nil)
		require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
		start := time.Now()
		_, err := c.Send(ctxTimeout(t, 2*time.Second), sms)
		require.Less(t, time.Since(start), 5*time.Second, "gave up around the deadline")
		check(t, c, err)
	})
	t.Run("cancelled", func(t *testing.T) {
		c := newClient(t, srv.Addr(), nil)
		require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { _, err := c.Send(ctx, sms); done <- err }()
		// Cancel between two tries: the part has been answered (throttled)
		// and waits for its next turn, about a second at the lowest rate.
		require.Eventually(t, func() bool { st := c.State(); return st.Retries >= 2 && st.WindowInUse == 0 },
			10*time.Second, time.Millisecond, "a Send without a deadline keeps trying")
		cancel()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the Send did not end with its context")
		}
		require.True(t, errors.Is(err, context.Canceled), "%v", err)
		check(t, c, err)
	})
	require.Zero(t, srv.Stats().Accepted)
}

// TestThrottleRateKeptWhileIdle: after the SMSC throttled (20 submit_sm
// a second on the bind), the rate in State is below the SMSC's limit
// (and the cap, when there is one) and stays there while nothing is sent:
// the rate a session learned climbs only while it is used. A second batch
// is paced under the limit from its start: hardly a throttled answer.
func TestThrottleRateKeptWhileIdle(t *testing.T) {
	for _, capRate := range []float64{40, 0} {
		t.Run(fmt.Sprintf("cap=%v", capRate), func(t *testing.T) {
			t.Parallel()
			srv := startSim(t, smscsim.Config{BindRate: 20})
			c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) {
				cfg.MaxPerSecond = capRate
				cfg.SubmitTimeout = 10 * time.Second
			})
			require.NoError(t, c.WaitReady(ctxTimeout(t, 5*time.Second)))
			requireNoErrors(t, sendAll(t, c, 50, time.Minute, "first"))
			st := c.State()
			require.Positive(t, st.Throttled)
			require.Equal(t, capRate, st.MaxPerSecond)
			learned := st.EffectivePerSecond
			require.Positive(t, learned, "paced")
			require.LessOrEqual(t, learned, 21.0, "at the SMSC's limit at most")

			time.Sleep(1500 * time.Millisecond)
			require.InDelta(t, learned, c.State().EffectivePerSecond, 0.5, "idle: the rate stays (but for the last climb of the sends)")

			throttled := st.Throttled
			requireNoErrors(t, sendAll(t, c, 40, time.Minute, "second"))
			again := c.State().Throttled - throttled
			t.Logf("rate learned %.1f/s; the first batch had %d throttled answers, the second %d", learned, throttled, again)
			require.LessOrEqual(t, again, uint64(3), "the second batch is paced under the limit")
			require.Equal(t, uint64(90), srv.Stats().Accepted)
		})
	}
}

// TestThrottlePerSessionScalesWithBinds: an SMSC that takes 100 submit_sm
// a second on each session, and the same 600 texts sent at once through a
// Client with one bind, then through one with three (no cap). Throttling
// adapts per session, so the three sessions together are accepted about
// three times as fast as one: at least twice here, a generous margin.
// Every Send succeeds, each text is accepted once, every throttled part
// was submitted again, and each session carried its share.
func TestThrottlePerSessionScalesWithBinds(t *testing.T) {
	const n, bindRate = 600, 100
	run := func(binds int) float64 {
		srv := startSim(t, smscsim.Config{BindRate: bindRate})
		c := newClient(t, srv.Addr(), nil, withBinds(binds), func(cfg *smpp.Config) { cfg.SubmitTimeout = 10 * time.Second })
		waitBindsUp(t, c, binds)

		start := time.Now()
		requireNoErrors(t, sendAll(t, c, n, 2*time.Minute, fmt.Sprintf("binds %d", binds)))
		elapsed := time.Since(start)

		st := srv.Stats()
		require.Equal(t, uint64(n), st.Accepted, "each text accepted once")
		cs := c.State()
		require.Equal(t, st.Throttled, cs.Throttled)
		require.Equal(t, cs.Throttled, cs.Retries, "every throttled part was submitted again")
		require.Equal(t, uint64(n)+cs.Retries, cs.Submits)
		require.Zero(t, cs.SubmitErrors)
		for i, ss := range cs.Sessions {
			require.GreaterOrEqual(t, ss.Submits, uint64(n/binds/2), "session %d carries its share", i)
		}
		rate := float64(n) / elapsed.Seconds()
		t.Logf("binds %d: %d sends in %s (%.0f/s), %d throttled, effective rate now %.0f/s",
			binds, n, elapsed.Round(time.Millisecond), rate, st.Throttled, cs.EffectivePerSecond)
		for _, s := range fullSeconds(srv, start.Truncate(time.Second).Add(time.Second), time.Now().Truncate(time.Second)) {
			t.Logf("binds %d: %s: %d accepted, %d throttled", binds, s.Start.Format("15:04:05"), s.Accepted, s.Throttled)
			require.LessOrEqual(t, s.Accepted, binds*bindRate*13/10, "no more than the SMSC's rate (and its bursts)")
		}
		return rate
	}
	one := run(1)
	three := run(3)
	t.Logf("3 binds: %.1fx the rate of 1", three/one)
	require.GreaterOrEqual(t, three, 2*one, "three sessions take at least twice the rate of one")
}
