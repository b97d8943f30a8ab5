package storetest

import (
	"time"

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

// testCampaignSchedule: a Ready campaign scheduled at a time is due from
// then on, earliest first, until a start on its schedule (which needs the
// time to have come, and keeps ScheduledAt), a start by hand (which drops
// it) or a cancel; only a Ready campaign can be scheduled, a later
// schedule replaces an earlier one, and another company's campaign is
// not found.
func testCampaignSchedule(f *fixture) {
	t := f.t
	a := f.company("A")
	c1, _ := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignReady)
	c2, _ := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignReady)
	c3, _ := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignReady)
	running, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	due := func(now int) []messaging.ID {
		cs, err := f.s.DueCampaigns(f.ctx, at(now), 10)
		require.NoError(t, err)
		var ids []messaging.ID
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		return ids
	}
	schedule := func(c messaging.Campaign, when int) error {
		return f.s.ScheduleCampaign(f.ctx, a.ID, c.ID, at(when), at(1))
	}
	require.NoError(t, schedule(c1, 100))
	require.NoError(t, schedule(c2, 50))
	require.NoError(t, schedule(c2, 60)) // replaces 50
	require.NoError(t, schedule(c3, 70))
	requireCode(t, schedule(running, 100), messaging.Conflict)
	requireNotFound(t, f.s.ScheduleCampaign(f.ctx, f.id(), c1.ID, at(100), at(1)))
	require.Nil(t, f.getCampaign(a.ID, running.ID).ScheduledAt)
	got := f.getCampaign(a.ID, c2.ID)
	require.Equal(t, messaging.CampaignReady, got.Status)
	require.NotNil(t, got.ScheduledAt)
	requireTime(t, "ScheduledAt", at(60), *got.ScheduledAt, nil)

	require.Empty(t, due(59))
	require.Equal(t, []messaging.ID{c2.ID}, due(60))
	require.Equal(t, []messaging.ID{c2.ID, c3.ID, c1.ID}, due(100))

	start := func(c messaging.Campaign, now int, scheduled bool) error {
		return f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID,
			From: []messaging.CampaignStatus{messaging.CampaignReady}, To: messaging.CampaignInProgress, At: at(now), Scheduled: scheduled})
	}
	requireCode(t, start(c1, 99, true), messaging.Conflict) // not its time yet
	require.Equal(t, messaging.CampaignReady, f.getCampaign(a.ID, c1.ID).Status)
	require.NoError(t, start(c2, 61, true))
	requireCode(t, start(c2, 62, true), messaging.Conflict) // once only
	got = f.getCampaign(a.ID, c2.ID)
	require.Equal(t, messaging.CampaignInProgress, got.Status)
	requireTime(t, "StartedAt", at(61), *got.StartedAt, nil)
	requireTime(t, "ScheduledAt", at(60), *got.ScheduledAt, nil)
	require.Len(t, f.claim(messaging.ChannelSMS, at(62), at(600), 10), 3, "c2's two messages and the running campaign's")

	require.NoError(t, start(c3, 65, false)) // by hand, before its time
	require.Nil(t, f.getCampaign(a.ID, c3.ID).ScheduledAt)
	require.NoError(t, f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c1.ID,
		From: []messaging.CampaignStatus{messaging.CampaignReady}, To: messaging.CampaignCompleted, At: at(66)}))
	require.Empty(t, due(1000), "started, started by hand and cancelled campaigns are not due")
	f.requireReconciled()
}

// testFallbackAfterCancel: the fallback SMS of a chat message that was in
// flight when its campaign was cancelled (its failure reported after the
// cancel) is written Failed CANCELLED: counted, never claimed.
func testFallbackAfterCancel(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.bulk(a.ID, messaging.ChannelChat, 2, at(0), messaging.CampaignInProgress)
	require.Len(t, f.claim(messaging.ChannelChat, at(1), at(600), 1), 1)
	require.NoError(t, f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID,
		From: []messaging.CampaignStatus{messaging.CampaignInProgress}, To: messaging.CampaignCompleted, At: at(2)}))
	inFlight := msgs[0]
	if f.getMessage(a.ID, inFlight.ID).Status != messaging.StatusSending {
		inFlight = msgs[1]
	}
	fb := f.fallbackFor(inFlight, at(3))
	f.admit(a.ID, fb)
	got := f.getMessage(a.ID, fb.ID)
	require.Equal(t, messaging.StatusFailed, got.Status)
	require.Equal(t, "CANCELLED", got.Details)
	require.Empty(t, f.claim(messaging.ChannelSMS, at(4), at(600), 10), "never sent")
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sending: 1, Failed: 1}, messaging.StatusCounts{Failed: 1})
	f.requireReconciled()
}

// testExpireMessages: Pending messages past their own expiry, and those of
// a bulk campaign (in progress or paused) past its start plus ValidFor,
// fail EXPIRED, counted, their capacity released, up to the limit; a
// message in flight, one not yet expired, and those of a campaign not
// started or without validity stay.
func testExpireMessages(f *fixture) {
	t := f.t
	a := f.company("A")
	plain, _ := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignInProgress)
	inFlight := f.claim(messaging.ChannelSMS, at(2), at(600), 1)
	require.Len(t, inFlight, 1)
	tx := f.transactional(a.ID, messaging.ChannelSMS)
	soon, late, never := f.newMessage(tx, f.nextPhone(), at(0)), f.newMessage(tx, f.nextPhone(), at(0)), f.newMessage(tx, f.nextPhone(), at(0))
	soon.ExpiresAt, late.ExpiresAt = ptr(at(10)), ptr(at(100))
	f.admit(a.ID, soon, late, never)
	valid := func(status messaging.CampaignStatus) (messaging.Campaign, []*messaging.Message) {
		c := f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 3, at(0))
		c.ValidFor = time.Minute
		f.createCampaign(c)
		msgs := f.newMessages(c, 3, at(0))
		require.NoError(t, f.s.InsertMessages(f.ctx, msgs))
		if status != messaging.CampaignQueuing {
			f.transition(c, messaging.CampaignQueuing, messaging.CampaignReady, at(0))
		}
		if status == messaging.CampaignInProgress || status == messaging.CampaignPaused {
			f.transition(c, messaging.CampaignReady, messaging.CampaignInProgress, at(0))
		}
		if status == messaging.CampaignPaused {
			f.transition(c, messaging.CampaignInProgress, messaging.CampaignPaused, at(1))
		}
		return c, msgs
	}
	running, _ := valid(messaging.CampaignInProgress)
	paused, _ := valid(messaging.CampaignPaused)
	ready, _ := valid(messaging.CampaignReady)

	expire := func(now, limit int) int {
		n, err := f.s.ExpireMessages(f.ctx, at(now), limit)
		require.NoError(t, err)
		return n
	}
	require.Zero(t, expire(9, 100))
	require.Equal(t, 1, expire(10, 100))
	got := f.getMessage(a.ID, soon.ID)
	require.Equal(t, messaging.StatusFailed, got.Status)
	require.Equal(t, messaging.DetailsExpired, got.Details)
	require.Equal(t, messaging.StatusPending, f.getMessage(a.ID, late.ID).Status)
	before := f.pending(a.ID)
	pendingOf := func(c messaging.Campaign) int { return f.getCampaign(a.ID, c.ID).Counts.Pending }
	want := pendingOf(running) + pendingOf(paused)
	require.Equal(t, 2, expire(60, 2), "the limit holds")
	require.Equal(t, want-2, expire(60, 100))
	for _, c := range []messaging.Campaign{running, paused} {
		got := f.getCampaign(a.ID, c.ID)
		require.Zero(t, got.Counts.Pending, "every Pending message of %s expired", c.Status)
	}
	require.Equal(t, before-want, f.pending(a.ID), "their capacity is released")
	require.Equal(t, 3, pendingOf(ready), "a campaign not started keeps its messages")
	require.Equal(t, 2, f.getCampaign(a.ID, plain.ID).Counts.Pending+f.getCampaign(a.ID, plain.ID).Counts.Sending, "no validity, no expiry")
	require.Equal(t, messaging.StatusSending, f.getMessage(a.ID, inFlight[0].ID).Status, "in flight: left to finish")
	require.Equal(t, 1, expire(100, 100), "late, at its time")
	require.Zero(t, expire(1000, 100))
	require.Equal(t, messaging.StatusPending, f.getMessage(a.ID, never.ID).Status)
	f.requireReconciled()
}
