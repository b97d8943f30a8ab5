package smscsim_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// writeBatch writes n submit_sm to e in one TCP write, so that the
// Server reads them back to back; it returns their sequence numbers.
func (e *esme) writeBatch(n int, to, text string, regDelivery byte) []int32 {
	e.t.Helper()
	b := pdu.NewBuffer(nil)
	seqs := make([]int32, n)
	for i := range n {
		e.seq++
		sm := submit(to, text, regDelivery)
		sm.SetSequenceNumber(e.seq)
		sm.Marshal(b)
		seqs[i] = e.seq
	}
	_, err := e.nc.Write(b.Bytes())
	require.NoError(e.t, err)
	return seqs
}

// closedByServer asserts that the Server closed e's connection without
// sending anything more.
func (e *esme) closedByServer() {
	e.t.Helper()
	_ = e.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := e.r.ReadByte()
	require.Error(e.t, err, "the connection is closed, not answered (got byte %#x)", b)
	var ne net.Error
	require.False(e.t, errors.As(err, &ne) && ne.Timeout(), "closed, not silent: %v", err)
}

// TestBindRateBucket: a session's bucket holds a tenth of a second's worth
// of submits (at least one) and is full at bind; the submits beyond it
// are throttled, not accepted and get no receipt; each session has a
// bucket of its own.
func TestBindRateBucket(t *testing.T) {
	t.Run("burst of one", func(t *testing.T) {
		srv := start(t, smscsim.Config{BindRate: 1, Record: true})
		e := dial(t, srv)
		e.bind(pdu.Transmitter, "herald", "")
		seqs := e.writeBatch(3, "447700900000", "x", 1)
		var got []data.CommandStatusType
		for i := range seqs {
			h, _ := e.read()
			require.Equal(t, seqs[i], h.SequenceNumber)
			got = append(got, h.CommandStatus)
		}
		require.Equal(t, []data.CommandStatusType{data.ESME_ROK, data.ESME_RTHROTTLED, data.ESME_RTHROTTLED}, got,
			"one token, then one a second")

		other := dial(t, srv)
		other.bind(pdu.Transmitter, "herald", "")
		other.write(submit("447700900000", "y", 1))
		h, _ := other.read()
		require.Equal(t, data.ESME_ROK, h.CommandStatus, "another session has a bucket of its own")

		st := srv.Stats()
		require.Equal(t, uint64(4), st.Submits)
		require.Equal(t, uint64(2), st.Accepted)
		require.Equal(t, uint64(2), st.Throttled)
		require.Equal(t, uint64(2), st.RateLimited)
		require.Eventually(t, func() bool { return srv.Stats().ReceiptsPending == 2 }, 2*time.Second, time.Millisecond,
			"receipts for the accepted submits only (no receiver is bound to take them)")
		require.Len(t, srv.Messages(), 2, "the throttled submits are not accepted")
		for _, p := range srv.Parts() {
			if p.Status == uint32(data.ESME_RTHROTTLED) {
				require.Empty(t, p.MessageID)
			} else {
				require.NotEmpty(t, p.MessageID)
			}
		}
	})
	t.Run("burst of a tenth of a second", func(t *testing.T) {
		srv := start(t, smscsim.Config{BindRate: 100})
		e := dial(t, srv)
		e.bind(pdu.Transmitter, "herald", "")
		began := time.Now()
		seqs := e.writeBatch(40, "447700900000", "x", 0)
		accepted := 0
		for i := range seqs {
			h, _ := e.read()
			if i < 10 {
				require.Equal(t, data.ESME_ROK, h.CommandStatus, "submit %d is within the burst", i+1)
			}
			if h.CommandStatus == data.ESME_ROK {
				accepted++
			}
		}
		elapsed := time.Since(began)
		require.LessOrEqual(t, accepted, 10+int(100*elapsed.Seconds())+1,
			"no more than the burst and the tokens of %v", elapsed)
	})
}

// TestBindRateHoldsTheRate: a client submitting four times faster than
// BindRate gets throttled answers, and the rate the Server accepts stays
// at BindRate, in total and second by second.
func TestBindRateHoldsTheRate(t *testing.T) {
	const rate = 100.0
	srv := start(t, smscsim.Config{BindRate: rate})
	e := dial(t, srv)
	e.bind(pdu.Transmitter, "herald", "")

	began := time.Now()
	sent, accepted, throttled := 0, 0, 0
	for time.Since(began) < 2500*time.Millisecond {
		// Catch up with 4×rate since the start, whatever the sleeps.
		due := int(time.Since(began).Seconds()*4*rate) + 1
		if n := due - sent; n > 0 {
			e.writeBatch(n, "447700900000", "x", 0)
			for range n {
				h, _ := e.read()
				require.Equal(t, data.SUBMIT_SM_RESP, h.CommandID)
				switch h.CommandStatus {
				case data.ESME_ROK:
					accepted++
				case data.ESME_RTHROTTLED:
					throttled++
				default:
					t.Fatalf("unexpected status %v", h.CommandStatus)
				}
			}
			sent += n
		}
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(began).Seconds()

	require.Positive(t, throttled, "a client beyond BindRate is throttled")
	got := float64(accepted) / elapsed
	require.InDelta(t, rate, got, 0.2*rate, "accepted %d in %.2fs", accepted, elapsed)

	st := srv.Stats()
	require.Equal(t, uint64(sent), st.Submits)
	require.Equal(t, uint64(accepted), st.Accepted)
	require.Equal(t, uint64(throttled), st.Throttled)
	require.Equal(t, uint64(throttled), st.RateLimited)

	secs := srv.SubmitsPerSecond()
	require.GreaterOrEqual(t, len(secs), 3, "2.5 s span at least three wall-clock seconds")
	sumA, sumT := 0, 0
	for i, s := range secs {
		sumA += s.Accepted
		sumT += s.Throttled
		require.Zero(t, s.Start.Nanosecond(), "a wall-clock second")
		if i > 0 {
			require.Equal(t, secs[i-1].Start.Add(time.Second), s.Start, "in order, none missing")
		}
		require.LessOrEqual(t, float64(s.Accepted), 1.2*rate, "second %d: %+v", i, s)
		if i > 0 && i < len(secs)-1 { // a full second
			require.InDelta(t, rate, float64(s.Accepted), 0.2*rate, "second %d: %+v", i, s)
			require.Positive(t, s.Throttled, "second %d: %+v", i, s)
		}
	}
	require.Equal(t, accepted, sumA)
	require.Equal(t, throttled, sumT)
}

// TestSubmitsPerSecondSeesAClientRate: SubmitsPerSecond shows the rate a
// client holds on its own (a token bucket like Herald's SMPP client's),
// with no throttling at the Server.
func TestSubmitsPerSecondSeesAClientRate(t *testing.T) {
	const perSecond = 50.0
	srv := start(t, smscsim.Config{})
	e := dial(t, srv)
	e.bind(pdu.Transmitter, "herald", "")

	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	pace := rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond/10)))
	sent := 0
	for pace.Wait(ctx) == nil {
		e.write(submit("447700900000", "x", 0))
		h, _ := e.read()
		require.Equal(t, data.ESME_ROK, h.CommandStatus)
		sent++
	}

	secs := srv.SubmitsPerSecond()
	require.GreaterOrEqual(t, len(secs), 3, "2.5 s span at least three wall-clock seconds")
	total := 0
	for i, s := range secs {
		total += s.Accepted
		require.Zero(t, s.Throttled)
		require.LessOrEqual(t, float64(s.Accepted), 1.2*perSecond, "second %d: %+v", i, s)
		if i > 0 && i < len(secs)-1 { // a full second
			require.InDelta(t, perSecond, float64(s.Accepted), 0.2*perSecond, "second %d: %+v", i, s)
		}
	}
	require.Equal(t, sent, total)
}

// bindStatus dials the Server, binds as a transmitter with systemID and
// returns the answer's status; it is safe in goroutines other than the
// test's. The connection stays open until the test ends.
func bindStatus(t *testing.T, addr, systemID string) (data.CommandStatusType, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("dial: %w", err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	req := pdu.NewBindRequest(pdu.Transmitter)
	req.SystemID = systemID
	req.SetSequenceNumber(1)
	b := pdu.NewBuffer(nil)
	req.Marshal(b)
	if _, err := nc.Write(b.Bytes()); err != nil {
		return 0, fmt.Errorf("write: %w", err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hb [16]byte
	if _, err := readFull(bufio.NewReader(nc), hb[:]); err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	return pdu.ParseHeader(hb).CommandStatus, nil
}

// TestMaxBindsPerSystemID: the bind beyond the limit of live sessions of
// one system_id is refused and closed; other system_ids have their own
// count, and a place freed by a session that ended can be taken again.
func TestMaxBindsPerSystemID(t *testing.T) {
	srv := start(t, smscsim.Config{MaxBindsPerSystemID: 2})
	tx := dial(t, srv)
	require.Equal(t, data.ESME_ROK, tx.bind(pdu.Transmitter, "herald", "").CommandStatus)
	rx := dial(t, srv)
	require.Equal(t, data.ESME_ROK, rx.bind(pdu.Receiver, "herald", "").CommandStatus)

	third := dial(t, srv)
	h := third.bind(pdu.Transceiver, "herald", "")
	require.Equal(t, data.BIND_TRANSCEIVER_RESP, h.CommandID)
	require.Equal(t, data.ESME_RBINDFAIL, h.CommandStatus, "the third bind of herald")
	third.closedByServer()

	other := dial(t, srv)
	require.Equal(t, data.ESME_ROK, other.bind(pdu.Transceiver, "other", "").CommandStatus, "another system_id")

	tx.write(pdu.NewUnbind())
	h, _ = tx.read()
	require.Equal(t, data.UNBIND_RESP, h.CommandID)
	require.Eventually(t, func() bool { return srv.Stats().Connections == 2 }, 2*time.Second, time.Millisecond)
	again := dial(t, srv)
	require.Equal(t, data.ESME_ROK, again.bind(pdu.Transmitter, "herald", "").CommandStatus, "the unbound session's place")

	st := srv.Stats()
	require.Equal(t, uint64(4), st.Binds)
	require.Equal(t, uint64(1), st.BindFailures)
}

// TestMaxBindsPerSystemIDConcurrent: binds racing for the last places
// never go beyond the limit.
func TestMaxBindsPerSystemIDConcurrent(t *testing.T) {
	srv := start(t, smscsim.Config{MaxBindsPerSystemID: 3})
	const n = 12
	statuses := make([]data.CommandStatusType, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { statuses[i], errs[i] = bindStatus(t, srv.Addr(), "herald") })
	}
	wg.Wait()
	ok := 0
	for i := range n {
		require.NoError(t, errs[i])
		switch statuses[i] {
		case data.ESME_ROK:
			ok++
		case data.ESME_RBINDFAIL:
		default:
			t.Fatalf("bind %d: unexpected status %v", i, statuses[i])
		}
	}
	require.Equal(t, 3, ok)
	require.Equal(t, uint64(n-3), srv.Stats().BindFailures)
}

// TestRefuseBinds: binds during RefuseBinds are refused and closed, bound
// sessions go on, and binds are accepted again once the period is over or
// ended early.
func TestRefuseBinds(t *testing.T) {
	srv := start(t, smscsim.Config{})
	bound := dial(t, srv)
	bound.bind(pdu.Transmitter, "herald", "")

	srv.RefuseBinds(time.Second)
	until := srv.Stats().BindsRefusedUntil
	require.False(t, until.IsZero())
	e := dial(t, srv)
	h := e.bind(pdu.Transmitter, "herald", "")
	require.Equal(t, data.BIND_TRANSMITTER_RESP, h.CommandID)
	require.Equal(t, data.ESME_RBINDFAIL, h.CommandStatus)
	e.closedByServer()

	bound.write(submit("447700900000", "x", 0))
	h, _ = bound.read()
	require.Equal(t, data.ESME_ROK, h.CommandStatus, "a session bound before goes on")

	time.Sleep(time.Until(until) + 10*time.Millisecond)
	require.True(t, srv.Stats().BindsRefusedUntil.IsZero())
	require.Equal(t, data.ESME_ROK, dial(t, srv).bind(pdu.Transmitter, "herald", "").CommandStatus, "after the period")

	srv.RefuseBinds(time.Hour)
	require.Equal(t, data.ESME_RBINDFAIL, dial(t, srv).bind(pdu.Receiver, "herald", "").CommandStatus)
	srv.RefuseBinds(0)
	require.Equal(t, data.ESME_ROK, dial(t, srv).bind(pdu.Receiver, "herald", "").CommandStatus, "ended early")

	st := srv.Stats()
	require.Equal(t, uint64(3), st.Binds)
	require.Equal(t, uint64(2), st.BindFailures)
}

// TestDropMidWindow: after DropMidWindow each open session closes its
// connection on the next submit_sm it reads, answering none of the
// submits in flight, which are not accepted; the submits answered before
// stay accepted, sessions opened later are not dropped, and each session
// drops once per call.
func TestDropMidWindow(t *testing.T) {
	srv := start(t, smscsim.Config{Record: true})
	a := dial(t, srv)
	a.bind(pdu.Transceiver, "herald", "")
	for range 2 {
		a.write(submit("447700900000", "before", 1))
		h, _ := a.read()
		require.Equal(t, data.SUBMIT_SM_RESP, h.CommandID)
		require.Equal(t, data.ESME_ROK, h.CommandStatus)
		h, p := a.read()
		require.Equal(t, data.DELIVER_SM, h.CommandID)
		a.respond(p.GetResponse())
	}
	require.Eventually(t, func() bool { return srv.Stats().ReceiptsAcked == 2 }, 2*time.Second, time.Millisecond)
	idle := dial(t, srv)
	idle.bind(pdu.Transmitter, "herald", "")

	require.Equal(t, 2, srv.DropMidWindow(), "both open sessions are armed")
	later := dial(t, srv)
	later.bind(pdu.Transmitter, "herald", "")

	// An enquire_link is still answered: only a submit_sm drops.
	seq := a.write(pdu.NewEnquireLink())
	h, _ := a.read()
	require.Equal(t, data.ENQUIRE_LINK_RESP, h.CommandID)
	require.Equal(t, seq, h.SequenceNumber)

	a.writeBatch(5, "447700900001", "in flight", 1)
	a.closedByServer()

	later.write(submit("447700900002", "later", 0))
	h, _ = later.read()
	require.Equal(t, data.ESME_ROK, h.CommandStatus, "a session opened after the call is not dropped")

	idle.write(submit("447700900003", "idle", 0))
	idle.closedByServer()

	// Once per call: a new session is not armed, and a new call arms it.
	b := dial(t, srv)
	b.bind(pdu.Transceiver, "herald", "")
	b.write(submit("447700900004", "after", 0))
	h, _ = b.read()
	require.Equal(t, data.ESME_ROK, h.CommandStatus)
	require.Eventually(t, func() bool { return srv.Stats().Connections == 2 }, 2*time.Second, time.Millisecond)
	require.Equal(t, 2, srv.DropMidWindow(), "later and b")
	b.write(submit("447700900005", "dropped again", 0))
	b.closedByServer()
	require.Eventually(t, func() bool { return srv.Stats().Connections == 1 }, 2*time.Second, time.Millisecond)

	st := srv.Stats()
	require.Equal(t, uint64(3), st.Dropped)
	require.Equal(t, uint64(4), st.Submits, "the dropped submits were never served")
	require.Equal(t, uint64(4), st.Accepted)
	require.Zero(t, st.InFlight)
	var texts []string
	for _, p := range srv.Parts() {
		texts = append(texts, p.Text)
	}
	require.Equal(t, []string{"before", "before", "later", "after"}, texts, "no part in flight is recorded")
	require.Zero(t, st.ReceiptsPending, "no receipt for the dropped submits")
}

// statuses reads the answers to seqs, in order.
func (e *esme) statuses(seqs []int32) []data.CommandStatusType {
	e.t.Helper()
	var got []data.CommandStatusType
	for i := range seqs {
		h, _ := e.read()
		require.Equal(e.t, seqs[i], h.SequenceNumber)
		got = append(got, h.CommandStatus)
	}
	return got
}

// countOK counts the ESME_ROK in sts and checks that the rest are
// ESME_RTHROTTLED.
func countOK(t *testing.T, sts []data.CommandStatusType) int {
	t.Helper()
	n := 0
	for _, st := range sts {
		if st == data.ESME_ROK {
			n++
		} else {
			require.Equal(t, data.ESME_RTHROTTLED, st)
		}
	}
	return n
}

// sleepUntilSecond sleeps until frac of the next wall-clock second.
func sleepUntilSecond(frac time.Duration) {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + frac).Sub(now))
}

// TestBindLimitWindows: with fixed windows a burst gets BindRate submits
// in a wall-clock second and the next second starts afresh; with a
// sliding second the submits accepted in the last second count, across
// the wall clock's seconds.
func TestBindLimitWindows(t *testing.T) {
	t.Run("fixed", func(t *testing.T) {
		srv := start(t, smscsim.Config{BindRate: 50, BindLimit: smscsim.BindFixedWindow})
		e := dial(t, srv)
		e.bind(pdu.Transmitter, "herald", "")
		sleepUntilSecond(10 * time.Millisecond)
		sts := e.statuses(e.writeBatch(80, "447700900000", "x", 0))
		require.Equal(t, 50, countOK(t, sts), "%v", sts)
		require.Equal(t, data.ESME_ROK, sts[49], "the first 50 of the second")
		require.Equal(t, data.ESME_RTHROTTLED, sts[50])
		sleepUntilSecond(10 * time.Millisecond)
		require.Equal(t, 10, countOK(t, e.statuses(e.writeBatch(10, "447700900000", "x", 0))), "a new second")
		require.Equal(t, uint64(30), srv.Stats().RateLimited)
	})
	t.Run("sliding", func(t *testing.T) {
		srv := start(t, smscsim.Config{BindRate: 50, BindLimit: smscsim.BindSlidingWindow})
		e := dial(t, srv)
		e.bind(pdu.Transmitter, "herald", "")
		sleepUntilSecond(400 * time.Millisecond)
		first := time.Now()
		require.Equal(t, 50, countOK(t, e.statuses(e.writeBatch(60, "447700900000", "x", 0))))
		sleepUntilSecond(50 * time.Millisecond)
		if time.Since(first) < 900*time.Millisecond {
			require.Zero(t, countOK(t, e.statuses(e.writeBatch(5, "447700900000", "x", 0))),
				"a new wall-clock second, but 50 accepted within the last one")
		}
		time.Sleep(time.Until(first.Add(1100 * time.Millisecond)))
		require.Equal(t, 5, countOK(t, e.statuses(e.writeBatch(5, "447700900000", "x", 0))), "a second after the burst")
	})
}
