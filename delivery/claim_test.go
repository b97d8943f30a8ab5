package delivery_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// lostClaimStore stores claims and then reports them failed, as when the
// connection to the database drops during the commit; after that, the
// first takeBacks recoveries of those claims fail too (the database not
// answering yet).
type lostClaimStore struct {
	*memstore.Store
	lose      atomic.Int64 // claims still to report failed
	takeBacks atomic.Int64 // recoveries of unknown claims still to fail
	lost      atomic.Int64 // messages claimed by the claims reported failed
}

func (s *lostClaimStore) ClaimDue(ctx context.Context, c delivery.Claim) ([]messaging.Message, error) {
	ms, err := s.Store.ClaimDue(ctx, c)
	if err == nil && len(ms) > 0 && s.lose.Add(-1) >= 0 {
		s.lost.Add(int64(len(ms)))
		return nil, errors.New("connection lost during the commit")
	}
	return ms, err
}

func (s *lostClaimStore) RecoverClaims(ctx context.Context, r delivery.Recovery) (int, error) {
	if len(r.Unknown) > 0 && s.takeBacks.Add(-1) >= 0 {
		return 0, errors.New("database not answering")
	}
	return s.Store.RecoverClaims(ctx, r)
}

// recoverObserver adds up the messages recoveries put back.
type recoverObserver struct {
	delivery.NopObserver
	recovered atomic.Int64
}

func (o *recoverObserver) Batch(op string, n int, _ time.Duration, err error) {
	if op == "recover" && err == nil {
		o.recovered.Add(int64(n))
	}
}

// TestClaimStoredThenFailed: claims that were stored though ClaimDue
// failed leave their messages Sending under this live process's name and
// a long lease; the dispatcher takes them back once the store answers
// again, counts them as recovered, and sends each message once.
func TestClaimStoredThenFailed(t *testing.T) {
	s := &lostClaimStore{Store: memstore.New()}
	s.lose.Store(2)
	s.takeBacks.Store(3)
	w := newWorld(t, s.Store)
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(40, 0)})

	sms := newFakeSMS()
	obs := &recoverObserver{}
	cfg := fastConfig(s)
	cfg.SMS, cfg.Observer, cfg.Instance = sms, obs, "live"
	cfg.Lease, cfg.BatchSize = time.Hour, 8
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	run(t, d)
	got := w.waitCampaign(c.ID, "every message sent", func(c messaging.Campaign) bool { return c.Counts.Sent == len(msgs) })
	require.Equal(t, messaging.StatusCounts{Sent: len(msgs)}, got.Counts)
	require.Positive(t, s.lost.Load())
	require.Equal(t, s.lost.Load(), obs.recovered.Load(), "the failed claims' messages counted as recovered")
	require.LessOrEqual(t, s.takeBacks.Load(), int64(-1), "taken back after the store answered again")
	extra := 0
	for _, m := range msgs {
		require.Equal(t, 1, sms.callsTo(m.Phone), "sent once")
		extra += w.message(m.ID).Attempts - 1
	}
	require.EqualValues(t, s.lost.Load(), extra, "each message of a failed claim claimed once more")
}

// beatGateStore fails heartbeats while failing is set, and counts the
// claims made when the last heartbeat written was more than half the
// claim lease older than the claim, or when none was.
type beatGateStore struct {
	*memstore.Store
	halfLease time.Duration
	failing   atomic.Bool
	lastBeat  atomic.Int64 // UnixNano of the last heartbeat written
	stale     atomic.Int64 // claims made without a fresh heartbeat
	claims    atomic.Int64
}

func (s *beatGateStore) Heartbeat(ctx context.Context, owner string, at time.Time) error {
	if s.failing.Load() {
		return errors.New("store unreachable")
	}
	if err := s.Store.Heartbeat(ctx, owner, at); err != nil {
		return err
	}
	s.lastBeat.Store(at.UnixNano())
	return nil
}

func (s *beatGateStore) ClaimDue(ctx context.Context, c delivery.Claim) ([]messaging.Message, error) {
	s.claims.Add(1)
	if last := s.lastBeat.Load(); last == 0 || c.Now.Sub(time.Unix(0, last)) > s.halfLease {
		s.stale.Add(1)
	}
	return s.Store.ClaimDue(ctx, c)
}

// TestNoClaimWithoutFreshHeartbeat: a dispatcher claims nothing before
// its heartbeat is written (the one at the start failed: another process
// would find its claims ownerless and take them back), and after its clock
// moved on by more than half the claim lease it writes one before it
// claims again.
func TestNoClaimWithoutFreshHeartbeat(t *testing.T) {
	const lease = 10 * time.Second
	s := &beatGateStore{Store: memstore.New(), halfLease: lease / 2}
	s.failing.Store(true)
	w := newWorld(t, s.Store)
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(10, 0)})

	var offset atomic.Int64
	sms := newFakeSMS()
	cfg := fastConfig(s)
	cfg.SMS, cfg.Instance, cfg.ClaimLease = sms, "live", lease
	cfg.HeartbeatInterval = time.Second
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	run(t, d)
	time.Sleep(100 * time.Millisecond)
	require.Empty(t, sms.sends(), "nothing sent while no heartbeat could be written")

	s.failing.Store(false)
	w.waitCampaign(c.ID, "sent once a heartbeat was written", func(c messaging.Campaign) bool { return c.Counts.Sent == len(msgs) })

	offset.Store(int64(time.Hour))
	c2, msgs2 := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(10, 100)})
	d.Wake()
	w.waitCampaign(c2.ID, "sent after the clock moved on", func(c messaging.Campaign) bool { return c.Counts.Sent == len(msgs2) })
	require.Positive(t, s.claims.Load())
	require.Zero(t, s.stale.Load(), "claims made without a fresh heartbeat")
}
