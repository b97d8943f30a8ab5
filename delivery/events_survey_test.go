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

	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st, Now: func() time.Time { return now }})
	answer := func(m *messaging.Message, i int, value string, sec int) {
		require.NoError(t, ev.Handle(ctx, delivery.ChatEvent{Kind: delivery.ChatEventReply, MessageID: m.ID,
			OptionIndex: i, OptionValue: value, At: now.Add(time.Duration(sec) * time.Second)}))
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
