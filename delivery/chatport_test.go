package delivery_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// writesStore counts the ApplyUpdates calls and their sizes.
type writesStore struct {
	*memstore.Store
	mu    sync.Mutex
	sizes []int
}

func (s *writesStore) ApplyUpdates(ctx context.Context, us []delivery.StatusUpdate) ([]bool, error) {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(us))
	s.mu.Unlock()
	return s.Store.ApplyUpdates(ctx, us)
}

// The statuses of one callback are written in one store write; each gets
// its outcome; a failure whose reason falls back inserts the fallback SMS
// first; the details read "NAME (code)" from ChatCodes, as a send refused for
// the same reason, EXPIRED for an
// expiry.
func TestChatStatusesOneWrite(t *testing.T) {
	ctx := t.Context()
	base := memstore.New()
	st := &writesStore{Store: base}
	f := newEventsFixture(t, base, messaging.TypeSimpleText, nil)
	var msgs []*messaging.Message
	for _, p := range []string{"998901200001", "998901200002", "998901200003", "998901200004"} {
		m := f.message(p, messaging.StatusSent)
		m.FallbackContent = "Hello (SMS)"
		msgs = append(msgs, m)
	}
	require.NoError(t, base.AdmitMessages(ctx, f.co.ID, msgs, 1000))
	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st, Now: func() time.Time { return f.now }})
	at := f.now.Add(time.Second)
	out, err := ev.ChatStatuses(ctx, []delivery.ChatStatus{
		{MessageID: msgs[0].ID, Status: messaging.StatusDelivered, At: at},
		{MessageID: msgs[0].ID, Status: messaging.StatusSeen, At: at.Add(time.Second)},
		{MessageID: msgs[1].ID, Status: messaging.StatusFailed, Reason: delivery.ReasonNotOnChannel, Detail: "1020", At: at},
		{MessageID: msgs[2].ID, Status: messaging.StatusFailed, Reason: delivery.ReasonExpired, At: at},
		{MessageID: msgs[3].ID, Status: messaging.StatusFailed, Reason: delivery.ReasonNotPermitted, At: at},
		{MessageID: f.ids.New(), Status: messaging.StatusDelivered, At: at},
		{Status: messaging.StatusDelivered, ProviderID: "no id", At: at},
	})
	require.NoError(t, err)
	require.Equal(t, []delivery.ChatEventOutcome{delivery.ChatEventStored, delivery.ChatEventStored, delivery.ChatEventStored,
		delivery.ChatEventStored, delivery.ChatEventStored, delivery.ChatEventIgnored, delivery.ChatEventIgnored}, out)
	require.Equal(t, []int{6}, st.sizes, "one write for the callback's statuses")

	details := map[string]string{}
	for _, m := range msgs {
		got, err := base.GetMessage(ctx, f.co.ID, m.ID)
		require.NoError(t, err)
		details[m.Phone] = string(got.Status) + " " + got.Details
	}
	require.Equal(t, map[string]string{
		"998901200001": "Seen ",
		"998901200002": "Failed NOT_VIBER_USER (9)",
		"998901200003": "Failed EXPIRED",
		"998901200004": "Failed NOT_PERMITTED (13)",
	}, details)
	all, _, err := base.ListMessages(ctx, f.co.ID, messaging.MessageFilter{CampaignID: f.c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 50}})
	require.NoError(t, err)
	var fallbacks []string
	for _, m := range all {
		if m.IsFallback() {
			fallbacks = append(fallbacks, m.Phone)
		}
	}
	require.Equal(t, []string{"998901200002"}, fallbacks, "only the failure that falls back writes its fallback SMS")
}

// contactLog records the contacts ChatEvents reports.
type contactLog struct {
	mu  sync.Mutex
	got []string
}

func (c *contactLog) RecordInbound(_ context.Context, serviceID int64, phone string, at time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, phone+"@"+at.Format(time.RFC3339))
	_ = serviceID
	return nil
}

// A text or a reply of a known service records the person's contact; a
// reply to a survey message records the answer too; subscription reports
// go to the Subscriptions hook with the service's company.
func TestChatInbound(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	f := newEventsFixture(t, st, messaging.TypeSurvey, &messaging.ChatConfig{Options: []messaging.SurveyOption{
		{OptionText: "Yes", OptionValue: "y"}, {OptionText: "No", OptionValue: "n"}}})
	m := f.message("998901200009", messaging.StatusSent)
	require.NoError(t, st.AdmitMessages(ctx, f.co.ID, []*messaging.Message{m}, 1000))
	contacts := &contactLog{}
	var subs []delivery.ChatInbound
	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st, Answers: answers(t, st), Now: func() time.Time { return f.now },
		Contacts: contacts, Subscriptions: func(_ context.Context, in delivery.ChatInbound) (bool, error) {
			subs = append(subs, in)
			return true, nil
		}})
	at := f.now.Add(time.Minute)
	out, err := ev.ChatInbound(ctx, delivery.ChatInbound{ServiceID: 3, Kind: delivery.InboundText, Phone: "998901200008", Text: "hi", At: at})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventStored, out, "the contact is recorded")
	out, err = ev.ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundText, Phone: "998901200008", Text: "hi", At: at})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventIgnored, out, "no service: nothing to record")
	out, err = ev.ChatInbound(ctx, delivery.ChatInbound{ServiceID: 3, Kind: delivery.InboundReply, MessageID: m.ID, OptionIndex: 1,
		Phone: m.Phone, At: at})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventStored, out)
	res, total, err := st.ListResults(ctx, f.co.ID, messaging.SurveyResultFilter{CampaignID: f.c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, "No", res[0].OptionText)
	require.Equal(t, []string{"998901200008@" + at.Format(time.RFC3339), m.Phone + "@" + at.Format(time.RFC3339)}, contacts.got)

	out, err = ev.ChatInbound(ctx, delivery.ChatInbound{ServiceID: 3, CompanyID: f.co.ID, Kind: delivery.InboundUnsubscribed, Phone: "998901200007"})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventStored, out)
	require.Len(t, subs, 1)
	require.Equal(t, f.co.ID, subs[0].CompanyID)
	require.Equal(t, f.now, subs[0].At, "a report without a time gets the clock's")
	require.Len(t, contacts.got, 2, "a subscription report is no contact")
}

// A transient failure whose provider asked to wait (a rate limit) is
// retried no sooner than that, even when the backoff is shorter.
func TestChatRetryAfter(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	ps := phones(1, 7000)
	chat := &fakeChat{outcome: func(m delivery.ChatSend, call int) (delivery.ChatAccepted, error) {
		se := delivery.ChatFailure(delivery.ReasonTransient, "429", delivery.ErrRateLimited)
		se.RetryAfter = time.Hour
		return delivery.ChatAccepted{}, se
	}}
	cfg := fastConfig(s)
	cfg.Chat = chat
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	start := time.Now()
	_, msgs := w.campaign(spec{channel: messaging.ChannelChat, mode: messaging.ModeTransactional, msgType: messaging.TypeSimpleText, phones: ps})
	defer run(t, d)()
	d.Wake()
	waitFor(t, "the send failed once", func() bool {
		return len(chat.sent(ps[0])) == 1 && w.message(msgs[0].ID).Status == messaging.StatusPending
	})
	m := w.message(msgs[0].ID)
	require.False(t, m.DueAt.Before(start.Add(time.Hour)), "due %v, an hour after %v at least", m.DueAt, start)
}
