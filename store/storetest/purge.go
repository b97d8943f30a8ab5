package storetest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// deliveredBulk creates a bulk SMS campaign of n messages, sends and
// delivers every one, and completes it at done.
func (f *fixture) deliveredBulk(companyID messaging.ID, n int, done time.Time) (messaging.Campaign, []*messaging.Message) {
	f.t.Helper()
	c, msgs := f.sentBulk(companyID, n)
	var ups []delivery.StatusUpdate
	for i, m := range msgs {
		ups = append(ups, sent(m, 2, fmt.Sprintf("%s-%d", c.ID, i)),
			delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusDelivered, At: at(3)})
	}
	f.apply(ups...)
	f.transition(c, messaging.CampaignInProgress, messaging.CampaignCompleted, done)
	return f.getCampaign(companyID, c.ID), msgs
}

// testPurgeFinished: retention removes the messages and survey results of
// campaigns finished before the cut, oldest first, a batch at a time, and
// finishes one campaign before starting the next; the campaigns' rows and
// counters stay, and campaigns finished later, or not finished, keep
// everything.
func testPurgeFinished(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	older, olderMsgs := f.deliveredBulk(a.ID, 5, at(100))
	old, oldMsgs := f.deliveredBulk(b.ID, 1, at(200))
	recent, recentMsgs := f.deliveredBulk(a.ID, 2, at(500))
	running, runningMsgs := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignInProgress)
	for _, m := range olderMsgs[:3] {
		f.record(f.result(m, 1, at(10)))
	}
	f.record(f.result(recentMsgs[0], 0, at(10)))

	p := campaign.Purge{FinishedBefore: at(300), Limit: 2, Now: at(1000)}
	var got []campaign.Purged
	for range 10 {
		out, err := f.s.PurgeFinished(f.ctx, p)
		require.NoError(t, err)
		if out.Campaign.IsZero() {
			break
		}
		got = append(got, out)
	}
	require.Equal(t, []campaign.Purged{
		{Campaign: older.ID, Messages: 2, Results: 2},
		{Campaign: older.ID, Messages: 2, Results: 1},
		{Campaign: older.ID, Messages: 1, Done: true},
		{Campaign: old.ID, Messages: 1, Done: true},
	}, got, "the older campaign first, two rows of each kind a call, one campaign at a time")

	for _, m := range append(olderMsgs, oldMsgs...) {
		_, err := f.s.GetMessage(f.ctx, m.CompanyID, m.ID)
		require.True(t, messaging.IsCode(err, messaging.NotFound), "purged message %s: %v", m.ID, err)
	}
	rs, total, err := f.s.ListResults(f.ctx, a.ID, messaging.SurveyResultFilter{CampaignID: older.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, rs)
	kept := f.getCampaign(a.ID, older.ID)
	require.Equal(t, older.Counts, kept.Counts, "a purged campaign keeps its counters")
	require.Equal(t, messaging.CampaignCompleted, kept.Status)

	for _, m := range append(recentMsgs, runningMsgs...) {
		f.getMessage(m.CompanyID, m.ID)
	}
	_, total, err = f.s.ListResults(f.ctx, a.ID, messaging.SurveyResultFilter{CampaignID: recent.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, 1, total, "a campaign finished after the cut keeps its results")
	require.Equal(t, messaging.CampaignInProgress, f.getCampaign(a.ID, running.ID).Status)

	out, err := f.s.PurgeFinished(f.ctx, campaign.Purge{FinishedBefore: at(600), Limit: 10, Now: at(1000)})
	require.NoError(t, err)
	require.Equal(t, campaign.Purged{Campaign: recent.ID, Messages: 2, Results: 1, Done: true}, out, "a later cut reaches the recent campaign")
	out, err = f.s.PurgeFinished(f.ctx, campaign.Purge{FinishedBefore: at(600), Limit: 10, Now: at(1000)})
	require.NoError(t, err)
	require.Zero(t, out, "nothing left to purge: a running campaign never is")
	f.requireReconciled()
}
