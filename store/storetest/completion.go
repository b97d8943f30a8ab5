package storetest

import (
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/webhook"
)

// The cases below check that a bulk campaign completes once nothing of it
// waits, whatever made its last message final: CompleteDrained reads the
// counters, so every path that moves a message must keep them exact.

// validBulk creates an InProgress SMS bulk campaign of n messages, started
// at 0, valid for a minute.
func (f *fixture) validBulk(companyID messaging.ID, n int) (messaging.Campaign, []*messaging.Message) {
	f.t.Helper()
	c := f.newCampaign(companyID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, n, at(0))
	c.ValidFor = time.Minute
	f.createCampaign(c)
	msgs := f.newMessages(c, n, at(0))
	require.NoError(f.t, f.s.InsertMessages(f.ctx, msgs))
	f.transition(c, messaging.CampaignQueuing, messaging.CampaignReady, at(0))
	f.transition(c, messaging.CampaignReady, messaging.CampaignInProgress, at(0))
	return f.getCampaign(companyID, c.ID), msgs
}

// completeDrained runs CompleteDrained at sec and returns the ids of the
// campaigns it completed.
func (f *fixture) completeDrained(sec int) []messaging.ID {
	f.t.Helper()
	done, err := f.s.CompleteDrained(f.ctx, at(sec))
	require.NoError(f.t, err)
	out := make([]messaging.ID, 0, len(done))
	for _, c := range done {
		out = append(out, c.ID)
	}
	return out
}

// requireCompleted checks that the campaign is Completed since sec, with
// the counters given.
func (f *fixture) requireCompleted(c messaging.Campaign, sec int, counts messaging.StatusCounts) {
	f.t.Helper()
	got := f.getCampaign(c.CompanyID, c.ID)
	require.Equal(f.t, messaging.CampaignCompleted, got.Status)
	require.NotNil(f.t, got.CompletedAt)
	requireTime(f.t, "CompletedAt", at(sec), *got.CompletedAt, nil)
	require.Equal(f.t, counts, got.Counts)
}

// testCompleteAfterExpiry: the validity sweep failing the last Pending
// messages of a campaign in progress drains it; it completes, with a
// campaign.status event.
func testCompleteAfterExpiry(f *fixture) {
	t := f.t
	a := f.company("A")
	hook := f.endpoint(a.ID, webhook.CampaignStatus)
	c, msgs := f.validBulk(a.ID, 3)
	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(600), 1), 1)
	require.Equal(t, []bool{true}, f.apply(sent(msgs[0], 2, "P0")))
	require.Empty(t, f.completeDrained(3), "two messages wait")

	n, err := f.s.ExpireMessages(f.ctx, at(60), 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []messaging.ID{c.ID}, f.completeDrained(61))
	f.requireCompleted(c, 61, messaging.StatusCounts{Sent: 1, Failed: 2})
	events := f.campaignEvents(hook.ID)
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	require.Equal(t, messaging.CampaignCompleted, last.Status)
	require.Equal(t, 2, last.FailedCount)
	require.Empty(t, f.completeDrained(62), "once")
	f.requireReconciled()
}

// testCompleteAfterPausedExpiry: messages of a paused campaign expire
// while it is paused; it does not complete while paused, and completes
// once resumed, though nothing is left to send. A campaign paused and
// resumed with messages still waiting does not complete.
func testCompleteAfterPausedExpiry(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.validBulk(a.ID, 4)
	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(600), 2), 2)
	f.transition(c, messaging.CampaignInProgress, messaging.CampaignPaused, at(2))
	require.Equal(t, []bool{true, true}, f.apply(sent(msgs[0], 3, "P0"), sent(msgs[1], 3, "P1")), "sends in flight finish")
	f.receipts(4, rcpt("P0", delivery.StateDelivered, "000", 4))
	require.Empty(t, f.completeDrained(5), "paused")

	n, err := f.s.ExpireMessages(f.ctx, at(60), 100)
	require.NoError(t, err)
	require.Equal(t, 2, n, "a paused campaign's messages expire too")
	require.Empty(t, f.completeDrained(61), "a paused campaign does not complete")
	require.Equal(t, messaging.CampaignPaused, f.getCampaign(a.ID, c.ID).Status)

	f.transition(c, messaging.CampaignPaused, messaging.CampaignInProgress, at(62))
	require.Equal(t, []messaging.ID{c.ID}, f.completeDrained(63))
	f.requireCompleted(c, 63, messaging.StatusCounts{Sent: 1, Delivered: 1, Failed: 2})
	for _, m := range msgs[2:] {
		got := f.getMessage(a.ID, m.ID)
		require.Equal(t, messaging.StatusFailed, got.Status)
		require.Equal(t, messaging.DetailsExpired, got.Details)
	}

	// Paused and resumed before the validity ends: it waits still.
	other, _ := f.validBulk(a.ID, 2)
	f.transition(other, messaging.CampaignInProgress, messaging.CampaignPaused, at(64))
	f.transition(other, messaging.CampaignPaused, messaging.CampaignInProgress, at(65))
	require.Empty(t, f.completeDrained(66))
	require.Equal(t, 2, f.pending(a.ID))
	f.requireReconciled()
}

// testCompleteAfterCancel: a cancelled campaign is Completed at once,
// paused or not, its waiting messages failed; it cannot be resumed, and
// CompleteDrained does not complete it again. A message in flight at the
// cancel still finishes.
func testCompleteAfterCancel(f *fixture) {
	t := f.t
	a := f.company("A")
	hook := f.endpoint(a.ID, webhook.CampaignStatus)
	c, msgs := f.validBulk(a.ID, 3)
	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(600), 1), 1)
	f.transition(c, messaging.CampaignInProgress, messaging.CampaignPaused, at(2))
	require.NoError(t, f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID,
		From: []messaging.CampaignStatus{messaging.CampaignPaused}, To: messaging.CampaignCompleted, At: at(3)}))
	got := f.getCampaign(a.ID, c.ID)
	require.Equal(t, messaging.CampaignCompleted, got.Status)
	require.NotNil(t, got.CancelledAt)
	require.Equal(t, messaging.StatusCounts{Sending: 1, Failed: 2}, got.Counts)
	requireCode(t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID,
		From: []messaging.CampaignStatus{messaging.CampaignPaused}, To: messaging.CampaignInProgress, At: at(4)}), messaging.Conflict,
		"a cancelled campaign is not resumed")

	require.Equal(t, []bool{true}, f.apply(sent(msgs[0], 5, "P0")), "the send in flight finishes")
	f.receipts(6, rcpt("P0", delivery.StateDelivered, "000", 6))
	n, err := f.s.ExpireMessages(f.ctx, at(60), 100)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, f.completeDrained(61))
	got = f.getCampaign(a.ID, c.ID)
	require.Equal(t, messaging.StatusCounts{Delivered: 1, Failed: 2}, got.Counts)
	requireTime(t, "CompletedAt", at(3), *got.CompletedAt, nil)
	completed := 0
	for _, e := range f.campaignEvents(hook.ID) {
		if e.Status == messaging.CampaignCompleted {
			completed++
		}
	}
	require.Equal(t, 1, completed, "one campaign.status Completed")
	f.requireReconciled()
}

// testCompleteAfterReceiptTimeout: messages Sent whose receipts never
// come (marked unconfirmed by the receipt timeout) do not hold the
// campaign back: it completes once the others are final too.
func testCompleteAfterReceiptTimeout(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.sentBulk(a.ID, 2)
	require.Equal(t, []bool{true}, f.apply(sent(msgs[0], 2, "P0")))
	n, err := f.s.ExpireReceipts(f.ctx, at(5), at(100), "NO_RECEIPT")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, f.completeDrained(101), "one message is still Sending")
	require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: msgs[1].ID, Status: messaging.StatusFailed, At: at(102),
		Details: "ESME_RINVDSTADR"}))
	require.Equal(t, []messaging.ID{c.ID}, f.completeDrained(103))
	f.requireCompleted(c, 103, messaging.StatusCounts{Sent: 1, Failed: 1, Unconfirmed: 1})
	f.requireReconciled()
}

// testCompleteAfterOptOut: an opt-out failing a campaign's last Pending
// message drains it (as does one by keyword, an inbound STOP); the
// campaign completes.
func testCompleteAfterOptOut(f *fixture) {
	t := f.t
	a := f.company("A")
	f.sender(a.ID, "ACME", true)
	c, msgs := f.validBulk(a.ID, 3)
	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(600), 1), 1)
	require.Equal(t, []bool{true}, f.apply(sent(msgs[0], 2, "P0")))

	ok, err := f.s.AddOptOut(f.ctx, optout.OptOut{CompanyID: a.ID, Phone: msgs[1].Phone, Scope: optout.All, Source: optout.FromAPI, CreatedAt: at(3)})
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, f.completeDrained(4), "one message waits")
	stop, err := f.s.RecordInboundPart(f.ctx, part(msgs[2].Phone, "ACME", "STOP", 0, 1, 1, 5), f.id())
	require.NoError(t, err)
	require.NotNil(t, stop)
	for _, m := range msgs[1:] {
		got := f.getMessage(a.ID, m.ID)
		require.Equal(t, messaging.StatusFailed, got.Status)
		require.Equal(t, "OPTED_OUT", got.Details)
	}
	require.Equal(t, []messaging.ID{c.ID}, f.completeDrained(6))
	f.requireCompleted(c, 6, messaging.StatusCounts{Sent: 1, Failed: 2})
	f.requireReconciled()
}

// testCompleteAfterRecovery: messages a dead process left Sending go back
// to Pending and keep the campaign waiting; once they expire it completes.
func testCompleteAfterRecovery(f *fixture) {
	t := f.t
	a := f.company("A")
	c, _ := f.validBulk(a.ID, 2)
	require.Len(t, f.claimFor("dead", messaging.ChannelSMS, at(1), at(30), 2), 2)
	n, err := f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(31), Self: "alive"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Empty(t, f.completeDrained(32), "recovered messages wait")
	require.Equal(t, messaging.StatusCounts{Pending: 2}, f.getCampaign(a.ID, c.ID).Counts)

	n, err = f.s.ExpireMessages(f.ctx, at(60), 100)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []messaging.ID{c.ID}, f.completeDrained(61))
	f.requireCompleted(c, 61, messaging.StatusCounts{Failed: 2})
	f.requireReconciled()
}

// testRecoverCancelled: messages in flight when their campaign was
// cancelled, whose process then died, fail CANCELLED when their claims
// are recovered instead of waiting Pending in a campaign nothing sends
// again; their capacity is released. Those of a paused campaign go back
// to Pending.
func testRecoverCancelled(f *fixture) {
	t := f.t
	a := f.company("A")
	hook := f.endpoint(a.ID, webhook.MessageStatus)
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 3, at(0), messaging.CampaignInProgress)
	require.Len(t, f.claimFor("dead", messaging.ChannelSMS, at(1), at(30), 2), 2)
	require.NoError(t, f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID,
		From: []messaging.CampaignStatus{messaging.CampaignInProgress}, To: messaging.CampaignCompleted, At: at(2)}))
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sending: 2, Failed: 1}, messaging.StatusCounts{})
	paused, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	require.Len(t, f.claimFor("dead", messaging.ChannelSMS, at(3), at(30), 1), 1)
	f.transition(paused, messaging.CampaignInProgress, messaging.CampaignPaused, at(4))

	n, err := f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(31), Self: "alive"})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, m := range msgs {
		got := f.getMessage(a.ID, m.ID)
		require.Equal(t, messaging.StatusFailed, got.Status)
		require.Equal(t, "CANCELLED", got.Details)
	}
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Failed: 3}, messaging.StatusCounts{})
	f.requireCounts(a.ID, paused.ID, messaging.StatusCounts{Pending: 1}, messaging.StatusCounts{})
	require.Equal(t, 1, f.pending(a.ID), "the cancelled campaign's capacity is released")
	events := f.statusEvents(hook.ID)
	for _, m := range msgs {
		require.Contains(t, events, m.ID.String()+" Failed")
	}
	require.Equal(t, messaging.CampaignCompleted, f.getCampaign(a.ID, c.ID).Status)
	require.Empty(t, f.claim(messaging.ChannelSMS, at(32), at(90), 10), "nothing left to send")
	f.requireReconciled()
}

// testRetryAfterCancel: a message of a cancelled campaign never goes back
// to Pending. A send on the wire when its campaign was cancelled that
// then fails transiently (a retry), and one withdrawn by a pause that a
// cancel overtook (a withdrawal, due again when it was), fail CANCELLED
// in ApplyBatch instead, their updates reported not applied; their
// counters and capacity follow. A retry in a paused campaign still goes
// back to Pending.
func testRetryAfterCancel(f *fixture) {
	t := f.t
	a := f.company("A")
	hook := f.endpoint(a.ID, webhook.MessageStatus)
	paused, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	other := f.claim(messaging.ChannelSMS, at(1), at(30), 1)
	require.Len(t, other, 1)
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 3, at(0), messaging.CampaignInProgress)
	claimed := f.claim(messaging.ChannelSMS, at(2), at(30), 2)
	require.Len(t, claimed, 2)
	f.transition(paused, messaging.CampaignInProgress, messaging.CampaignPaused, at(3))
	require.NoError(t, f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID,
		From: []messaging.CampaignStatus{messaging.CampaignInProgress}, To: messaging.CampaignCompleted, At: at(4)}))
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sending: 2, Failed: 1}, messaging.StatusCounts{})
	require.Equal(t, 3, f.pending(a.ID))

	// The result write: a transient failure retried later, and in the
	// same batch the paused campaign's retry.
	br, err := f.s.ApplyBatch(f.ctx, []delivery.StatusUpdate{
		{MessageID: claimed[0].ID, Status: messaging.StatusPending, At: at(5), DueAt: at(65), Details: "THROTTLED"},
		{MessageID: other[0].ID, Status: messaging.StatusPending, At: at(5), DueAt: at(65)},
	}, nil, at(5))
	require.NoError(t, err)
	require.Equal(t, []bool{false, true}, br.Applied)
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sending: 1, Failed: 2}, messaging.StatusCounts{})
	require.Equal(t, 2, f.pending(a.ID))
	f.requireReconciled()

	// The withdrawal write: back to Pending at its own due time.
	br, err = f.s.ApplyBatch(f.ctx, []delivery.StatusUpdate{
		{MessageID: claimed[1].ID, Status: messaging.StatusPending, At: at(6), DueAt: claimed[1].DueAt},
	}, nil, at(6))
	require.NoError(t, err)
	require.Equal(t, []bool{false}, br.Applied)

	for _, m := range msgs {
		got := f.getMessage(a.ID, m.ID)
		require.Equal(t, messaging.StatusFailed, got.Status, "message %s", m.ID)
		require.Equal(t, "CANCELLED", got.Details, "message %s", m.ID)
	}
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Failed: 3}, messaging.StatusCounts{})
	f.requireCounts(a.ID, paused.ID, messaging.StatusCounts{Pending: 1}, messaging.StatusCounts{})
	require.Equal(t, 1, f.pending(a.ID), "the cancelled campaign's capacity is released")
	require.Equal(t, messaging.StatusPending, f.getMessage(a.ID, other[0].ID).Status)
	events := f.statusEvents(hook.ID)
	for _, m := range claimed {
		require.Contains(t, events, m.ID.String()+" Failed")
		require.NotContains(t, events, m.ID.String()+" Pending")
	}
	f.requireReconciled()
}

// testRetryRacesCancel: a cancel and a result batch moving the campaign's
// claimed messages back to Pending, run at the same time, always end with
// those messages Failed CANCELLED, whichever commits first.
func testRetryRacesCancel(f *fixture) {
	t := f.t
	a := f.company("A")
	for round := range 20 {
		c, _ := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignInProgress)
		claimed := f.claim(messaging.ChannelSMS, at(1), at(30), 2)
		require.Len(t, claimed, 2)
		var wg sync.WaitGroup
		var cancelErr, applyErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			cancelErr = f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID,
				From: []messaging.CampaignStatus{messaging.CampaignInProgress}, To: messaging.CampaignCompleted, At: at(2)})
		}()
		go func() {
			defer wg.Done()
			_, applyErr = f.s.ApplyBatch(f.ctx, []delivery.StatusUpdate{
				{MessageID: claimed[0].ID, Status: messaging.StatusPending, At: at(2), DueAt: at(60)},
				{MessageID: claimed[1].ID, Status: messaging.StatusPending, At: at(2), DueAt: claimed[1].DueAt},
			}, nil, at(2))
		}()
		wg.Wait()
		require.NoError(t, cancelErr, "round %d", round)
		require.NoError(t, applyErr, "round %d", round)
		for _, m := range claimed {
			got := f.getMessage(a.ID, m.ID)
			require.Equal(t, messaging.StatusFailed, got.Status, "round %d", round)
			require.Equal(t, "CANCELLED", got.Details, "round %d", round)
		}
		f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Failed: 2}, messaging.StatusCounts{})
	}
	require.Zero(t, f.pending(a.ID))
	f.requireReconciled()
}
