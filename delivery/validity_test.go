package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// TestValidity: a message whose validity ran out before it was claimed
// fails EXPIRED without reaching a provider, and a chat message so
// expired gets no fallback SMS; a message still valid carries what is
// left of its validity to the SMSC (validity_period) or the chat provider
// (ttl, at least 30 s), its own or its bulk campaign's.
func TestValidity(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	chat := &fakeChat{}
	cfg := fastConfig(s)
	cfg.SMS, cfg.Chat = sms, chat
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	now := time.Now()
	at := func(d time.Duration) func(int) *time.Time {
		return func(int) *time.Time { t := now.Add(d); return &t }
	}
	_, expired := w.campaign(spec{channel: messaging.ChannelSMS, mode: messaging.ModeTransactional, phones: phones(2, 0), expires: at(-time.Second)})
	_, valid := w.campaign(spec{channel: messaging.ChannelSMS, mode: messaging.ModeTransactional, phones: phones(1, 10), expires: at(10 * time.Minute)})
	_, bulk := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(1, 20), validFor: time.Hour})
	_, chatSoon := w.campaign(spec{channel: messaging.ChannelChat, mode: messaging.ModeTransactional, phones: phones(1, 30), expires: at(5 * time.Second)})
	_, chatLater := w.campaign(spec{channel: messaging.ChannelChat, phones: phones(1, 40), validFor: 20 * time.Minute})
	gone, chatExpired := w.campaign(spec{channel: messaging.ChannelChat, phones: phones(2, 50), validFor: time.Second,
		fallback: func(int) string { return "SMS instead" }})
	time.Sleep(1100 * time.Millisecond) // the one-second campaign runs out
	run(t, d)

	for _, m := range append(expired, chatExpired...) {
		got := waitMessage(t, w, m.ID, func(m messaging.Message) bool { return m.Status == messaging.StatusFailed })
		require.Equal(t, messaging.DetailsExpired, got.Details)
		require.Nil(t, got.SentAt)
	}
	for _, m := range append(append(valid, bulk...), append(chatSoon, chatLater...)...) {
		waitMessage(t, w, m.ID, func(m messaging.Message) bool { return m.Status == messaging.StatusSent })
	}
	require.Zero(t, sms.callsTo(expired[0].Phone)+sms.callsTo(expired[1].Phone), "expired SMS never reach the SMSC")
	byTo := map[string]delivery.SMS{}
	for _, m := range sms.sends() {
		byTo[m.To] = m
	}
	require.InDelta(t, (10 * time.Minute).Seconds(), byTo[valid[0].Phone].Validity.Seconds(), 3)
	require.InDelta(t, time.Hour.Seconds(), byTo[bulk[0].Phone].Validity.Seconds(), 3)
	require.Equal(t, delivery.MinChatTTL, chat.sent(chatSoon[0].Phone)[0].TTL, "the provider takes 30 s at least")
	require.InDelta(t, (20 * time.Minute).Seconds(), chat.sent(chatLater[0].Phone)[0].TTL.Seconds(), 3)
	require.Empty(t, chat.sent(chatExpired[0].Phone))
	c := w.waitCampaign(gone.ID, "the expired campaign completes", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
	require.Equal(t, 2, c.Counts.Failed)
	require.Zero(t, c.FallbackCounts.Total(), "no fallback SMS for an expired chat message")
}

// waitMessage waits until message id satisfies cond.
func waitMessage(t *testing.T, w *world, id messaging.ID, cond func(messaging.Message) bool) messaging.Message {
	t.Helper()
	var got messaging.Message
	waitFor(t, "message "+id.String(), func() bool { got = w.message(id); return cond(got) })
	return got
}

// TestFallbackInheritsExpiry: the fallback SMS of a chat message expires
// when the chat message would have, so a failure reported late never
// sends an SMS past the message's moment.
func TestFallbackInheritsExpiry(t *testing.T) {
	exp := time.Now().Add(time.Minute)
	chat := messaging.Message{ID: messaging.NewIDGenerator(nil).New(), Channel: messaging.ChannelChat, FallbackContent: "x", ExpiresAt: &exp}
	fb := delivery.FallbackSMS(chat, time.Now())
	require.NotNil(t, fb.ExpiresAt)
	require.Equal(t, exp, *fb.ExpiresAt)
	exp = exp.Add(time.Hour)
	require.NotEqual(t, exp, *fb.ExpiresAt, "a copy")
	chat.ExpiresAt = nil
	require.Nil(t, delivery.FallbackSMS(chat, time.Now()).ExpiresAt)
}

// TestExpirySweep: the messages of a paused campaign, which nothing
// claims, fail EXPIRED once their validity runs out, and release their
// capacity; the campaign stays paused.
func TestExpirySweep(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	cfg := fastConfig(s)
	cfg.SMS = newFakeSMS()
	cfg.ExpireInterval = 10 * time.Millisecond
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(3, 0), validFor: time.Second, status: messaging.CampaignReady})
	w.transition(c, messaging.CampaignReady, messaging.CampaignInProgress)
	w.transition(c, messaging.CampaignInProgress, messaging.CampaignPaused)
	run(t, d)
	for _, m := range msgs {
		got := waitMessage(t, w, m.ID, func(m messaging.Message) bool { return m.Status == messaging.StatusFailed })
		require.Equal(t, messaging.DetailsExpired, got.Details)
	}
	require.Equal(t, messaging.CampaignPaused, w.get(c.ID).Status)
	n, err := s.PendingCount(t.Context(), w.co.ID)
	require.NoError(t, err)
	require.Zero(t, n)
}
