package delivery_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// timedSMS accepts every SMS and records when each was sent, by number.
type timedSMS struct {
	mu   sync.Mutex
	sent map[string]time.Time
}

func (s *timedSMS) Send(_ context.Context, sms delivery.SMS) (delivery.SMSResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent == nil {
		s.sent = map[string]time.Time{}
	}
	s.sent[sms.To] = time.Now()
	return delivery.SMSResult{PartIDs: []string{"P" + sms.MessageID.String()}}, nil
}

// times returns the send times of the numbers starting with prefix.
func (s *timedSMS) times(prefix string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for to, at := range s.sent {
		if strings.HasPrefix(to, prefix) {
			out = append(out, at)
		}
	}
	return out
}

// prefixed returns n numbers starting with prefix (12 digits in all).
func prefixed(prefix string, n int) []string {
	out := phones(n, 0)
	for i := range out {
		out[i] = prefix + out[i][len(prefix):]
	}
	return out
}

// rateOf is the rate of sends at times, the first burst left out: the
// sends after the first burst+1 over the time they took.
func rateOf(times []time.Time, burst int) float64 {
	if len(times) <= burst+1 {
		return 0
	}
	first, last := times[0], times[0]
	for _, at := range times {
		if at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	return float64(len(times)-burst-1) / last.Sub(first).Seconds()
}

// TestCompanyRateCapsItsMessagesOnly: a company capped at 100 messages a
// second gets its bulk sent at that rate (its first burst aside), while
// another company's bulk, started at the same time, is not held back
// behind it; transactional messages of the capped company added while its
// bulk waits go before the rest of that bulk.
func TestCompanyRateCapsItsMessagesOnly(t *testing.T) {
	const rate, burst = 100, 10 // a tenth of a second's worth
	s := memstore.New()
	capped, free := newWorld(t, s), newWorld(t, s)
	require.NoError(t, s.SetCompanyRate(t.Context(), capped.co.ID, rate))
	sms := &timedSMS{}
	cfg := fastConfig(s)
	cfg.SMS, cfg.Rates, cfg.RatesInterval = sms, s, 50*time.Millisecond
	d, err := delivery.New(cfg)
	require.NoError(t, err)

	cappedBulk, _ := capped.campaign(spec{channel: messaging.ChannelSMS, phones: prefixed("4470", 200)})
	freeBulk, _ := free.campaign(spec{channel: messaging.ChannelSMS, phones: prefixed("4471", 1000)})
	start := time.Now()
	run(t, d)

	free.waitCampaign(freeBulk.ID, "the other company's bulk sent", func(c messaging.Campaign) bool { return c.Counts.Sent == 1000 })
	freeDone := time.Since(start)
	cappedByThen := len(sms.times("4470"))
	t.Logf("the uncapped company's 1,000 SMS took %s; the capped one had %d sent by then", freeDone.Round(time.Millisecond), cappedByThen)
	require.LessOrEqual(t, float64(cappedByThen), burst+rate*freeDone.Seconds()*1.1+1, "the capped company kept to its rate meanwhile")

	waitFor(t, "half the capped bulk sent", func() bool { return len(sms.times("4470")) >= 100 })
	before := len(sms.times("4470"))
	tx, _ := capped.campaign(spec{channel: messaging.ChannelSMS, mode: messaging.ModeTransactional, phones: prefixed("4472", 5)})
	d.Wake()
	capped.waitCampaign(tx.ID, "the transactional messages sent", func(c messaging.Campaign) bool { return c.Counts.Sent == 5 })
	after := len(sms.times("4470"))
	require.LessOrEqual(t, after-before, burst+5, "the transactional messages went before the rest of the bulk (%d bulk SMS went meanwhile)", after-before)

	capped.waitCampaign(cappedBulk.ID, "the capped bulk sent", func(c messaging.Campaign) bool { return c.Counts.Sent == 200 })
	got := rateOf(append(sms.times("4470"), sms.times("4472")...), burst)
	t.Logf("the capped company: %.1f messages a second (rate %d)", got, rate)
	require.LessOrEqual(t, got, rate*1.1, "the rate holds")
	require.GreaterOrEqual(t, got, rate*0.5, "and is used")
}

// TestCompanyRateSharedAmongProcesses: with another live claimer in the
// store, each process sends half a company's rate.
func TestCompanyRateSharedAmongProcesses(t *testing.T) {
	const rate, share = 100, 50
	s := memstore.New()
	w := newWorld(t, s)
	require.NoError(t, s.SetCompanyRate(t.Context(), w.co.ID, rate))
	// Another process, alive for the whole test.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	require.NoError(t, s.Heartbeat(ctx, "other", time.Now()))
	go func() {
		for ctx.Err() == nil {
			_ = s.Heartbeat(ctx, "other", time.Now())
			time.Sleep(100 * time.Millisecond)
		}
	}()
	sms := &timedSMS{}
	cfg := fastConfig(s)
	cfg.SMS, cfg.Rates, cfg.RatesInterval = sms, s, 50*time.Millisecond
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	c, _ := w.campaign(spec{channel: messaging.ChannelSMS, phones: prefixed("4470", 80)})
	run(t, d)
	w.waitCampaign(c.ID, "the bulk sent", func(c messaging.Campaign) bool { return c.Counts.Sent == 80 })
	got := rateOf(sms.times("4470"), share/10)
	t.Logf("one of two processes: %.1f messages a second (rate %d, its share %d)", got, rate, share)
	require.LessOrEqual(t, got, share*1.1, "each process keeps to its share")
}
