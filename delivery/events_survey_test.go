package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// TestChatEventsSurveyOptionText: an answer records the text of the chosen
// option, from the message's own options or, for a message of a bulk
// campaign (which keeps none), from the campaign's; the first answer
// counts.
func TestChatEventsSurveyOptionText(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	cfg := &messaging.ChatConfig{Options: []messaging.SurveyOption{
		{OptionText: "Great", OptionValue: "great"}, {OptionText: "OK", OptionValue: "ok"}, {OptionText: "Bad", OptionValue: "bad"}}}
	f := newEventsFixture(t, st, messaging.TypeSurvey, cfg)
	co, c, now := f.co, f.c, f.now
	bulk := f.message("998901230001", messaging.StatusSent)
	withOwn := f.message("998901230002", messaging.StatusSent)
	withOwn.Config = &messaging.ChatConfig{Options: []messaging.SurveyOption{{OptionText: "Yes", OptionValue: "y"}, {OptionText: "No", OptionValue: "n"}}}
	require.NoError(t, st.AdmitMessages(ctx, co.ID, []*messaging.Message{bulk, withOwn}, 100))

	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st, Answers: answers(t, st), Now: func() time.Time { return now }})
	answer := func(m *messaging.Message, i int, value string, sec int) {
		_, err := ev.ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundReply, MessageID: m.ID,
			OptionIndex: i, Text: value, At: now.Add(time.Duration(sec) * time.Second)})
		require.NoError(t, err)
	}
	answer(bulk, 1, "ok", 1)
	answer(bulk, 2, "bad", 2) // a second answer does not count
	answer(withOwn, 1, "n", 3)

	rs, n, err := st.ListResults(ctx, co.ID, messaging.SurveyResultFilter{CampaignID: c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	byPhone := map[string]messaging.SurveyResult{rs[0].Phone: rs[0], rs[1].Phone: rs[1]}
	require.Equal(t, "OK", byPhone[bulk.Phone].OptionText)
	require.Equal(t, 1, byPhone[bulk.Phone].OptionIndex)
	require.Equal(t, "No", byPhone[withOwn.Phone].OptionText)
}

// TestChatEventsRefuseAndIgnore: a survey answer outside the options is
// refused with an Invalid error and never recorded (the summary would
// count an answer it cannot place); callbacks that name an SMS, the
// fallback SMS of a chat message included, or no message at all change
// nothing and say so (ignored, never stored).
func TestChatEventsRefuseAndIgnore(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	cfg := &messaging.ChatConfig{Options: []messaging.SurveyOption{
		{OptionText: "Great", OptionValue: "great"}, {OptionText: "OK", OptionValue: "ok"}, {OptionText: "Bad", OptionValue: "bad"}}}
	f := newEventsFixture(t, st, messaging.TypeSurvey, cfg)
	chat := f.message("998901240001", messaging.StatusSent)
	chat.FallbackContent = "How was it?"
	require.NoError(t, st.AdmitMessages(ctx, f.co.ID, []*messaging.Message{chat}, 100))
	fb := delivery.FallbackSMS(*chat, f.now)
	fb.Status, fb.SentAt = messaging.StatusSent, &f.now
	require.NoError(t, st.AdmitMessages(ctx, f.co.ID, []*messaging.Message{&fb}, 100))
	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st, Answers: answers(t, st), Now: func() time.Time { return f.now }})

	for _, i := range []int{3, 99} {
		out, err := ev.ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundReply, MessageID: chat.ID, OptionIndex: i, At: f.now})
		require.Equal(t, delivery.ChatEventRefused, out)
		require.True(t, messaging.IsCode(err, messaging.Invalid), "option %d: %v", i, err)
	}
	_, total, err := st.ListResults(ctx, f.co.ID, messaging.SurveyResultFilter{CampaignID: f.c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Zero(t, total, "a refused answer is not recorded")

	for _, e := range []any{
		delivery.ChatStatus{MessageID: fb.ID, Status: messaging.StatusSeen},
		delivery.ChatStatus{MessageID: fb.ID, Status: messaging.StatusDelivered},
		delivery.ChatStatus{MessageID: fb.ID, Status: messaging.StatusFailed, Reason: delivery.ReasonExpired},
		delivery.ChatStatus{MessageID: fb.ID, Status: messaging.StatusFailed, Reason: delivery.ReasonNotOnChannel},
		delivery.ChatInbound{Kind: delivery.InboundReply, MessageID: fb.ID, OptionIndex: 0},
		delivery.ChatStatus{MessageID: f.ids.New(), Status: messaging.StatusSeen},
		delivery.ChatStatus{MessageID: f.ids.New(), Status: messaging.StatusFailed, Reason: delivery.ReasonBlocked},
	} {
		out, err := handle(ctx, ev, e)
		require.NoError(t, err, "%+v", e)
		require.Equal(t, delivery.ChatEventIgnored, out, "%+v", e)
	}
	got, err := st.GetMessage(ctx, f.co.ID, fb.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.StatusSent, got.Status, "a chat callback never moves an SMS")

	out, err := ev.ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundReply, MessageID: chat.ID, OptionIndex: 2, At: f.now})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventStored, out)
	out, err = ev.ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundReply, MessageID: chat.ID, OptionIndex: 0, At: f.now})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventIgnored, out, "a second answer")
	out, err = handle(ctx, ev, delivery.ChatStatus{MessageID: chat.ID, Status: messaging.StatusSeen, At: f.now})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventStored, out)
}
