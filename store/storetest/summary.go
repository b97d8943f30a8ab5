package storetest

import (
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// testSummarizeMessages: the messages created since a time are counted
// by company, channel and status, the Failed ones by reason; direct sends
// and fallback SMS count, older messages do not, and a company sees only
// its own.
func testSummarizeMessages(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	// Ids made at the messages' creation times, as the service makes them.
	var clock time.Time
	ids := messaging.NewIDGenerator(func() time.Time { return clock })
	since := at(2 * 86400)
	mk := func(c messaging.Campaign, created time.Time, st messaging.MessageStatus, details string) *messaging.Message {
		clock = created
		m := f.newMessage(c, f.nextPhone(), created)
		m.ID = ids.New()
		m.Status, m.Details = st, details
		return m
	}
	sms := f.transactional(a.ID, messaging.ChannelSMS)
	chat := f.transactional(a.ID, messaging.ChannelChat)
	f.admit(a.ID,
		mk(sms, since.Add(-24*time.Hour), messaging.StatusDelivered, ""),         // a day before: left out
		mk(sms, since.Add(-time.Second), messaging.StatusFailed, "UNDELIVERED"),  // just before: left out
		mk(sms, since, messaging.StatusDelivered, ""),                            // at since: counted
		mk(sms, since.Add(time.Minute), messaging.StatusDelivered, ""),           //
		mk(sms, since.Add(2*time.Minute), messaging.StatusFailed, "UNDELIVERED"), //
		mk(sms, since.Add(3*time.Minute), messaging.StatusFailed, "UNDELIVERED"), //
		mk(sms, since.Add(4*time.Minute), messaging.StatusFailed, messaging.DetailsExpired),
		mk(sms, since.Add(5*time.Minute), messaging.StatusPending, "retry"), // a reason only when Failed
		mk(chat, since.Add(time.Minute), messaging.StatusSeen, ""),
		mk(chat, since.Add(2*time.Minute), messaging.StatusFailed, ""),
	)
	fb := mk(chat, since.Add(3*time.Minute), messaging.StatusFailed, "NOT_VIBER_USER")
	f.admit(a.ID, fb)
	fallback := f.fallbackFor(fb, since.Add(3*time.Minute))
	clock = since.Add(3 * time.Minute)
	fallback.ID = ids.New()
	fallback.Status = messaging.StatusSent
	f.admit(a.ID, fallback)
	bulk := f.createCampaign(f.newCampaign(b.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 2, since))
	require.NoError(t, f.s.InsertMessages(f.ctx, []*messaging.Message{
		mk(bulk, since.Add(time.Hour), messaging.StatusPending, ""),
		mk(bulk, since.Add(time.Hour), messaging.StatusPending, ""),
	}))

	tally := func(co messaging.ID, ch messaging.Channel, st messaging.MessageStatus, reason string, n int) messaging.MessageTally {
		return messaging.MessageTally{CompanyID: co, Channel: ch, Status: st, Reason: reason, Count: n}
	}
	wantA := []messaging.MessageTally{
		tally(a.ID, messaging.ChannelChat, messaging.StatusFailed, "", 1),
		tally(a.ID, messaging.ChannelChat, messaging.StatusFailed, "NOT_VIBER_USER", 1),
		tally(a.ID, messaging.ChannelChat, messaging.StatusSeen, "", 1),
		tally(a.ID, messaging.ChannelSMS, messaging.StatusDelivered, "", 2),
		tally(a.ID, messaging.ChannelSMS, messaging.StatusFailed, messaging.DetailsExpired, 1),
		tally(a.ID, messaging.ChannelSMS, messaging.StatusFailed, "UNDELIVERED", 2),
		tally(a.ID, messaging.ChannelSMS, messaging.StatusPending, "", 1),
		tally(a.ID, messaging.ChannelSMS, messaging.StatusSent, "", 1),
	}
	wantB := []messaging.MessageTally{tally(b.ID, messaging.ChannelSMS, messaging.StatusPending, "", 2)}
	sorted := func(ts []messaging.MessageTally) []messaging.MessageTally {
		out := append([]messaging.MessageTally(nil), ts...)
		slices.SortFunc(out, messaging.CompareTallies)
		return out
	}
	got, err := f.s.SummarizeMessages(f.ctx, a.ID, since)
	require.NoError(t, err)
	require.Equal(t, sorted(wantA), sorted(got), "company A")
	got, err = f.s.SummarizeMessages(f.ctx, b.ID, since)
	require.NoError(t, err)
	require.Equal(t, wantB, sorted(got), "company B")
	got, err = f.s.SummarizeMessages(f.ctx, messaging.NilID, since)
	require.NoError(t, err)
	require.Equal(t, sorted(append(wantA, wantB...)), sorted(got), "every company")
	got, err = f.s.SummarizeMessages(f.ctx, a.ID, since.Add(2*time.Hour))
	require.NoError(t, err)
	require.Empty(t, got, "nothing created since")
	got, err = f.s.SummarizeMessages(f.ctx, f.id(), since)
	require.NoError(t, err)
	require.Empty(t, got, "an unknown company")
}
