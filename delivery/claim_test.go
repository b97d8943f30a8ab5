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
