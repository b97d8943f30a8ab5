package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

func TestNeedsFallback(t *testing.T) {
	chat := messaging.Message{Channel: messaging.ChannelChat, FallbackContent: "SMS text"}
	noFallback := chat
	noFallback.FallbackContent = ""
	sms := chat
	sms.Channel = messaging.ChannelSMS
	fallback := sms
	fallback.FallbackFor = messaging.NewIDGenerator(nil).New()
	for _, c := range []struct {
		name   string
		m      messaging.Message
		reason delivery.ChatReason
		want   bool
	}{
		{"blocked", chat, delivery.ReasonBlocked, true},
		{"not a chat user", chat, delivery.ReasonNotOnChannel, true},
		{"no suitable device", chat, delivery.ReasonNoSuitableDevice, true},
		{"bad data", chat, delivery.ReasonRejected, false},
		{"not permitted", chat, delivery.ReasonNotPermitted, false},
		{"expired", chat, delivery.ReasonExpired, false},
		{"transient", chat, delivery.ReasonTransient, false},
		{"unknown reason", chat, delivery.ChatReason("odd"), false},
		{"no fallback configured", noFallback, delivery.ReasonBlocked, false},
		{"an SMS", sms, delivery.ReasonBlocked, false},
		{"a fallback SMS", fallback, delivery.ReasonNotOnChannel, false},
	} {
		require.Equal(t, c.want, delivery.NeedsFallback(c.m, c.reason), c.name)
	}
	// The rule reads the one table: every reason it marks falls back.
	for reason, code := range delivery.ChatCodes() {
		require.Equal(t, code.Fallback, delivery.NeedsFallback(chat, reason), reason)
	}
}

func TestChatEventsFallbackOnce(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	f := newEventsFixture(t, store, messaging.TypeSimpleText, nil)
	co, c, ids, now := f.co, f.c, f.ids, f.now
	mp := f.message("998901230008", messaging.StatusPending)
	mp.FallbackContent = "Hello (SMS)"
	require.NoError(t, store.AdmitMessages(ctx, co.ID, []*messaging.Message{mp}, 100))
	m := *mp
	_, err := store.ApplyUpdates(ctx, []delivery.StatusUpdate{{MessageID: m.ID, Status: messaging.StatusSent, At: now}})
	require.NoError(t, err)

	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: store, Answers: answers(t, store), Now: func() time.Time { return now }})
	failed := delivery.ChatStatus{MessageID: m.ID, Status: messaging.StatusFailed, Reason: delivery.ReasonBlocked, At: now}
	for range 3 { // the provider repeats its callback
		_, err = handle(ctx, ev, failed)
		require.NoError(t, err)
	}
	// And the same failure reported by a send retry.
	_, err = ev.OnChatFailure(ctx, m, delivery.ChatFailure(delivery.ReasonBlocked, "8", nil))
	require.NoError(t, err)

	got, err := store.GetMessage(ctx, co.ID, m.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.StatusFailed, got.Status)
	msgs, total, err := store.ListMessages(ctx, co.ID, messaging.MessageFilter{Phone: m.Phone})
	require.NoError(t, err)
	require.Equal(t, 2, total, "the chat message and exactly one fallback SMS")
	var fb messaging.Message
	for _, x := range msgs {
		if x.IsFallback() {
			fb = x
		}
	}
	require.Equal(t, m.ID, fb.FallbackFor)
	require.Equal(t, messaging.ChannelSMS, fb.Channel)
	require.Equal(t, "Hello (SMS)", fb.Content)
	require.Equal(t, messaging.StatusPending, fb.Status)
	camp, err := store.GetCampaign(ctx, co.ID, c.ID)
	require.NoError(t, err)
	require.Equal(t, 1, camp.FallbackCounts.Total())

	// Statuses only move forward: a delivered after the failure changes
	// nothing; an unknown message is dropped without an error.
	_, err = handle(ctx, ev, delivery.ChatStatus{MessageID: m.ID, Status: messaging.StatusDelivered, At: now})
	require.NoError(t, err)
	got, err = store.GetMessage(ctx, co.ID, m.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.StatusFailed, got.Status)
	_, err = handle(ctx, ev, delivery.ChatStatus{MessageID: ids.New(), Status: messaging.StatusSeen, At: now})
	require.NoError(t, err)
}

// eventsFixture is a company with an in-progress transactional chat
// campaign on a memstore, at a fixed time.
type eventsFixture struct {
	co  messaging.Company
	c   messaging.Campaign
	ids *messaging.IDGenerator
	now time.Time
}

func newEventsFixture(t *testing.T, st *memstore.Store, msgType messaging.MessageType, cfg *messaging.ChatConfig) *eventsFixture {
	t.Helper()
	f := &eventsFixture{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	f.ids = messaging.NewIDGenerator(func() time.Time { return f.now })
	f.co = messaging.Company{ID: f.ids.New(), Name: "Acme", Active: true, CreatedAt: f.now}
	require.NoError(t, st.CreateCompany(t.Context(), &f.co))
	f.c = messaging.Campaign{ID: f.ids.New(), CompanyID: f.co.ID, Channel: messaging.ChannelChat, Mode: messaging.ModeTransactional,
		Status: messaging.CampaignInProgress, MessageType: msgType, Config: cfg, CreatedAt: f.now, UpdatedAt: f.now, StartedAt: &f.now}
	require.NoError(t, st.CreateCampaign(t.Context(), &f.c, 1000))
	return f
}

// message returns a chat message of the campaign to phone, in status (Sent
// ones with their sentAt), not yet written.
func (f *eventsFixture) message(phone string, status messaging.MessageStatus) *messaging.Message {
	m := &messaging.Message{ID: f.ids.New(), CompanyID: f.co.ID, CampaignID: f.c.ID, Channel: messaging.ChannelChat, Phone: phone,
		Content: "Hello", Status: status, DueAt: f.now, CreatedAt: f.now, UpdatedAt: f.now}
	if status == messaging.StatusSent {
		m.SentAt = &f.now
	}
	return m
}

// TestChatEventsObserver: every status a callback moves a chat message to
// is reported once; repeated and backward callbacks report nothing.
func TestChatEventsObserver(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	f := newEventsFixture(t, st, messaging.TypeSimpleText, nil)
	msgs := []*messaging.Message{f.message("998901200001", messaging.StatusSent), f.message("998901200002", messaging.StatusSent)}
	require.NoError(t, st.AdmitMessages(ctx, f.co.ID, msgs, 1000))
	obs := &countingObserver{}
	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st, Answers: answers(t, st), Now: func() time.Time { return f.now }, Observer: obs})
	at := f.now.Add(time.Second)
	for _, e := range []delivery.ChatStatus{
		{MessageID: msgs[0].ID, Status: messaging.StatusDelivered},
		{MessageID: msgs[0].ID, Status: messaging.StatusDelivered}, // repeated
		{MessageID: msgs[0].ID, Status: messaging.StatusSeen},
		{MessageID: msgs[0].ID, Status: messaging.StatusDelivered}, // backward
		{MessageID: msgs[1].ID, Status: messaging.StatusFailed, Reason: delivery.ReasonExpired},
		{MessageID: f.ids.New(), Status: messaging.StatusSeen}, // unknown message
	} {
		e.At = at
		_, err := handle(ctx, ev, e)
		require.NoError(t, err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Equal(t, map[string]int{"Chat/Delivered": 1, "Chat/Seen": 1, "Chat/Failed": 1}, obs.messages)
}

// TestChatEventsOtherCompany: a status naming a company (the chat
// service's) leaves a message of another company as it is: no move, no
// fallback SMS.
func TestChatEventsOtherCompany(t *testing.T) {
	ctx := t.Context()
	store := memstore.New()
	f := newEventsFixture(t, store, messaging.TypeSimpleText, nil)
	delivered, blocked := f.message("998901230001", messaging.StatusSent), f.message("998901230008", messaging.StatusSent)
	blocked.FallbackContent = "Hello (SMS)"
	require.NoError(t, store.AdmitMessages(ctx, f.co.ID, []*messaging.Message{delivered, blocked}, 100))
	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: store, Now: func() time.Time { return f.now }})
	other := f.ids.New()

	out, err := ev.ChatStatuses(ctx, []delivery.ChatStatus{
		{MessageID: delivered.ID, Status: messaging.StatusDelivered, At: f.now, CompanyID: other},
		{MessageID: blocked.ID, Status: messaging.StatusFailed, Reason: delivery.ReasonBlocked, At: f.now, CompanyID: other},
	})
	require.NoError(t, err)
	require.Equal(t, []delivery.ChatEventOutcome{delivery.ChatEventIgnored, delivery.ChatEventIgnored}, out)
	for _, m := range []*messaging.Message{delivered, blocked} {
		got, err := store.GetMessage(ctx, f.co.ID, m.ID)
		require.NoError(t, err)
		require.Equal(t, messaging.StatusSent, got.Status)
	}
	_, total, err := store.ListMessages(ctx, f.co.ID, messaging.MessageFilter{Phone: blocked.Phone})
	require.NoError(t, err)
	require.Equal(t, 1, total, "no fallback SMS")

	out, err = ev.ChatStatuses(ctx, []delivery.ChatStatus{{MessageID: delivered.ID, Status: messaging.StatusDelivered, At: f.now, CompanyID: f.co.ID}})
	require.NoError(t, err)
	require.Equal(t, []delivery.ChatEventOutcome{delivery.ChatEventStored}, out, "its own company's status applies")
}
