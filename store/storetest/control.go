package storetest

import (
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// testCampaignControl: a paused campaign's messages are not claimed and a
// resumed one's are, keeping its start; cancelling ends the campaign's
// Pending messages (fallback SMS included) Failed with details CANCELLED
// and completes it with CancelledAt, releasing their pending capacity,
// while a message already claimed is left to finish; a campaign in none
// of the statuses given is a Conflict and changes nothing.
func testCampaignControl(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 4, at(0), messaging.CampaignInProgress)
	started := f.getCampaign(a.ID, c.ID).StartedAt
	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(600), 1), 1) // msgs[0] in flight

	f.transition(c, messaging.CampaignInProgress, messaging.CampaignPaused, at(2))
	require.Empty(t, f.claim(messaging.ChannelSMS, at(3), at(600), 10), "nothing is claimed while paused")
	f.transition(c, messaging.CampaignPaused, messaging.CampaignInProgress, at(4))
	got := f.getCampaign(a.ID, c.ID)
	requireTime(t, "StartedAt", *started, *got.StartedAt, nil)
	require.Len(t, f.claim(messaging.ChannelSMS, at(5), at(600), 1), 1) // msgs[1] in flight
	f.transition(c, messaging.CampaignInProgress, messaging.CampaignPaused, at(6))
	require.Equal(t, 4, f.pending(a.ID))

	err := f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID,
		From: []messaging.CampaignStatus{messaging.CampaignReady}, To: messaging.CampaignCompleted, At: at(7)})
	requireCode(t, err, messaging.Conflict)
	require.Equal(t, messaging.StatusPending, f.getMessage(a.ID, msgs[2].ID).Status, "nothing changed")

	require.NoError(t, f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID,
		From: []messaging.CampaignStatus{messaging.CampaignReady, messaging.CampaignInProgress, messaging.CampaignPaused},
		To:   messaging.CampaignCompleted, At: at(8)}))
	got = f.getCampaign(a.ID, c.ID)
	require.Equal(t, messaging.CampaignCompleted, got.Status)
	require.NotNil(t, got.CancelledAt)
	requireTime(t, "CancelledAt", at(8), *got.CancelledAt, nil)
	requireTime(t, "CompletedAt", at(8), *got.CompletedAt, nil)
	for _, m := range msgs[2:] {
		gm := f.getMessage(a.ID, m.ID)
		require.Equal(t, messaging.StatusFailed, gm.Status)
		require.Equal(t, "CANCELLED", gm.Details)
	}
	require.Equal(t, messaging.StatusSending, f.getMessage(a.ID, msgs[0].ID).Status, "in flight: left to finish")
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sending: 2, Failed: 2}, messaging.StatusCounts{})
	require.Equal(t, 2, f.pending(a.ID), "the cancelled messages' capacity is released")
	requireNotFound(t, f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: f.id(), CampaignID: c.ID,
		From: []messaging.CampaignStatus{messaging.CampaignCompleted}, To: messaging.CampaignCompleted, At: at(9)}))
	f.requireReconciled()
}
