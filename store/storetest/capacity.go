package storetest

import (
	"time"

	"sync"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// testCreateCampaignCapacity: CreateCampaign reserves Planned atomically
// with the capacity check; a refused campaign writes nothing; capacity is
// per company.
func testCreateCampaignCapacity(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	const maxPending = 100
	create := func(companyID messaging.ID, planned int) (messaging.Campaign, error) {
		c := f.newCampaign(companyID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, planned, at(planned))
		return c, f.s.CreateCampaign(f.ctx, &c, maxPending)
	}

	_, err := create(a.ID, 60)
	require.NoError(t, err)
	require.Equal(t, 60, f.pending(a.ID))

	refused, err := create(a.ID, 41)
	requireCapacity(t, err, 60, 41, maxPending)
	_, err = f.s.GetCampaign(f.ctx, a.ID, refused.ID)
	requireNotFound(t, err, "a refused campaign is not stored")
	_, total, err := f.s.ListCampaigns(f.ctx, a.ID, messaging.CampaignFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, 60, f.pending(a.ID), "a refused campaign reserves nothing")

	_, err = create(a.ID, 40) // exactly up to the limit
	require.NoError(t, err)
	require.Equal(t, 100, f.pending(a.ID))
	_, err = create(a.ID, 1)
	requireCapacity(t, err, 100, 1, maxPending)

	// A campaign without a reservation (transactional) fits a full company.
	tx := f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeTransactional, messaging.CampaignInProgress, 0, at(200))
	require.NoError(t, f.s.CreateCampaign(f.ctx, &tx, maxPending))
	require.Equal(t, 100, f.pending(a.ID))

	_, err = create(b.ID, 100)
	require.NoError(t, err, "capacity is per company")
	require.Equal(t, 100, f.pending(b.ID))
	f.requireReconciled()
}

// testAdmitMessagesCapacity: AdmitMessages grows the pending count by the
// batch or writes nothing; it shares the count with reservations; another
// company's campaign is NotFound.
func testAdmitMessagesCapacity(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	const maxPending = 10
	tx := f.transactional(a.ID, messaging.ChannelSMS)

	first := f.newMessages(tx, 7, at(1))
	require.NoError(t, f.s.AdmitMessages(f.ctx, a.ID, first, maxPending))
	require.Equal(t, 7, f.pending(a.ID))
	f.requireCounts(a.ID, tx.ID, messaging.StatusCounts{Pending: 7}, messaging.StatusCounts{})

	over := f.newMessages(tx, 4, at(2))
	requireCapacity(t, f.s.AdmitMessages(f.ctx, a.ID, over, maxPending), 7, 4, maxPending)
	for _, m := range over {
		_, err := f.s.GetMessage(f.ctx, a.ID, m.ID)
		requireNotFound(t, err, "a refused batch writes nothing")
	}
	require.Equal(t, 7, f.pending(a.ID))
	f.requireCounts(a.ID, tx.ID, messaging.StatusCounts{Pending: 7}, messaging.StatusCounts{})

	require.NoError(t, f.s.AdmitMessages(f.ctx, a.ID, f.newMessages(tx, 3, at(3)), maxPending))
	require.Equal(t, 10, f.pending(a.ID))

	// Sending frees capacity.
	f.apply(delivery.StatusUpdate{MessageID: first[0].ID, Status: messaging.StatusSent, At: at(4)})
	require.Equal(t, 9, f.pending(a.ID))
	require.NoError(t, f.s.AdmitMessages(f.ctx, a.ID, f.newMessages(tx, 1, at(5)), maxPending))

	// A reservation counts against the same capacity.
	txB := f.transactional(b.ID, messaging.ChannelChat)
	c := f.newCampaign(b.ID, messaging.ChannelChat, messaging.ModeBulk, messaging.CampaignQueuing, 8, at(6))
	require.NoError(t, f.s.CreateCampaign(f.ctx, &c, maxPending))
	requireCapacity(t, f.s.AdmitMessages(f.ctx, b.ID, f.newMessages(txB, 3, at(7)), maxPending), 8, 3, maxPending)
	require.NoError(t, f.s.AdmitMessages(f.ctx, b.ID, f.newMessages(txB, 2, at(7)), maxPending))
	require.Equal(t, 10, f.pending(b.ID))

	// Tenant isolation: messages for A's campaign admitted under B.
	sneaky := f.newMessages(tx, 1, at(8))
	sneaky[0].CompanyID = b.ID
	requireNotFound(t, f.s.AdmitMessages(f.ctx, b.ID, sneaky, unlimited))
	_, err := f.s.GetMessage(f.ctx, b.ID, sneaky[0].ID)
	requireNotFound(t, err)
	_, err = f.s.GetMessage(f.ctx, a.ID, sneaky[0].ID)
	requireNotFound(t, err)
	require.Equal(t, 10, f.pending(a.ID))
	require.Equal(t, 10, f.pending(b.ID))
	f.requireCounts(a.ID, tx.ID, messaging.StatusCounts{Pending: 10, Sent: 1}, messaging.StatusCounts{})
	f.requireReconciled()
}

// testAdmissionConcurrent: concurrent admissions never pass the capacity
// together.
func testAdmissionConcurrent(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	const workers, each, maxPending = 16, 10, 100

	tx := f.transactional(a.ID, messaging.ChannelSMS)
	batches := make([][]*messaging.Message, workers)
	for i := range batches {
		batches[i] = f.newMessages(tx, each, at(i))
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() { errs[i] = f.s.AdmitMessages(f.ctx, a.ID, batches[i], maxPending) })
	}
	wg.Wait()
	admitted := 0
	for i, err := range errs {
		if err == nil {
			admitted++
			continue
		}
		requireCode(t, err, messaging.RateLimited)
		_, gerr := f.s.GetMessage(f.ctx, a.ID, batches[i][0].ID)
		requireNotFound(t, gerr, "a refused batch writes nothing")
	}
	require.Equal(t, maxPending/each, admitted)
	require.Equal(t, maxPending, f.pending(a.ID))
	f.requireCounts(a.ID, tx.ID, messaging.StatusCounts{Pending: maxPending}, messaging.StatusCounts{})

	errs = make([]error, workers)
	for i := range workers {
		wg.Go(func() {
			c := f.newCampaign(b.ID, messaging.ChannelChat, messaging.ModeBulk, messaging.CampaignQueuing, each, at(i))
			errs[i] = f.s.CreateCampaign(f.ctx, &c, maxPending)
		})
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		if err == nil {
			created++
			continue
		}
		requireCode(t, err, messaging.RateLimited)
	}
	require.Equal(t, maxPending/each, created)
	require.Equal(t, maxPending, f.pending(b.ID))
	_, total, err := f.s.ListCampaigns(f.ctx, b.ID, messaging.CampaignFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
	require.NoError(t, err)
	require.Equal(t, created, total)
	f.requireReconciled()
}

// testPendingLifecycle: the pending count through a campaign's life:
// reservation, insertion, claims, sends and failures, release of the
// unused reservation, the failure of a preparation. ReconcilePending
// agrees at every step.
func testPendingLifecycle(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	expect := func(n int, why string) {
		t.Helper()
		require.Equal(t, n, f.pending(a.ID), why)
		f.requireReconciled()
		require.Equal(t, n, f.pending(a.ID), "ReconcilePending must not change a correct count")
	}
	expect(0, "a new company")

	// A bulk campaign through its whole life.
	c := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 10, at(0)))
	expect(10, "reserved by CreateCampaign")
	msgs := f.newMessages(c, 10, at(1))
	require.NoError(t, f.s.InsertMessages(f.ctx, msgs[:4]))
	expect(10, "inserting within the reservation")
	require.NoError(t, f.s.InsertMessages(f.ctx, msgs[4:]))
	expect(10, "inserting within the reservation")
	f.transition(c, messaging.CampaignQueuing, messaging.CampaignReady, at(2))
	expect(10, "Ready: its messages are still pending")
	f.transition(c, messaging.CampaignReady, messaging.CampaignInProgress, at(3))
	claimed := f.claim(messaging.ChannelSMS, at(4), at(64), 4)
	require.Len(t, claimed, 4)
	expect(10, "Sending messages are still pending")
	ok := f.apply(
		delivery.StatusUpdate{MessageID: claimed[0].ID, Status: messaging.StatusSent, At: at(5)},
		delivery.StatusUpdate{MessageID: claimed[1].ID, Status: messaging.StatusSent, At: at(5)},
		delivery.StatusUpdate{MessageID: claimed[2].ID, Status: messaging.StatusFailed, At: at(5)},
		delivery.StatusUpdate{MessageID: claimed[3].ID, Status: messaging.StatusPending, At: at(5), DueAt: at(30)},
	)
	require.Equal(t, []bool{true, true, true, true}, ok)
	expect(7, "Sent and Failed leave the count; a retry does not")
	var unclaimed messaging.ID
	for _, m := range msgs {
		if m.ID != claimed[0].ID && m.ID != claimed[1].ID && m.ID != claimed[2].ID && m.ID != claimed[3].ID {
			unclaimed = m.ID
			break
		}
	}
	ok = f.apply(
		delivery.StatusUpdate{MessageID: unclaimed, Status: messaging.StatusFailed, At: at(6)},
		delivery.StatusUpdate{MessageID: claimed[0].ID, Status: messaging.StatusDelivered, At: at(6)},
		delivery.StatusUpdate{MessageID: claimed[2].ID, Status: messaging.StatusFailed, At: at(6)},
	)
	require.Equal(t, []bool{true, true, false}, ok)
	expect(6, "Pending -> Failed leaves the count; Sent -> Delivered changes nothing")
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 6, Sent: 1, Delivered: 1, Failed: 2}, messaging.StatusCounts{})

	// Leaving Queuing with fewer messages than planned releases the rest.
	short := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelChat, messaging.ModeBulk, messaging.CampaignQueuing, 10, at(10)))
	expect(16, "a second reservation")
	require.NoError(t, f.s.InsertMessages(f.ctx, f.newMessages(short, 6, at(11))))
	expect(16, "inserting within the reservation")
	f.transition(short, messaging.CampaignQueuing, messaging.CampaignReady, at(12))
	expect(12, "Queuing -> Ready releases the 4 messages never inserted")

	// A direct send's campaign goes from Queuing to InProgress.
	direct := f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 5, at(13))
	direct.Hidden = true
	direct = f.createCampaign(direct)
	require.NoError(t, f.s.InsertMessages(f.ctx, f.newMessages(direct, 3, at(13))))
	expect(17, "a hidden campaign reserves too")
	f.transition(direct, messaging.CampaignQueuing, messaging.CampaignInProgress, at(14))
	expect(15, "Queuing -> InProgress releases what was not inserted")

	// A failed preparation deletes its messages and releases everything.
	failing := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 8, at(15)))
	written := f.newMessages(failing, 5, at(16))
	require.NoError(t, f.s.InsertMessages(f.ctx, written))
	expect(23, "a third reservation")
	require.NoError(t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: failing.ID, From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignFailed, At: at(17), Reason: "boom"}))
	expect(15, "Queuing -> Failed releases the whole reservation")
	for _, m := range written {
		_, err := f.s.GetMessage(f.ctx, a.ID, m.ID)
		requireNotFound(t, err, "a failed preparation's messages are deleted")
	}
	got, total, err := f.s.ListMessages(f.ctx, a.ID, messaging.MessageFilter{Phone: written[0].Phone, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, got)
	f.requireCounts(a.ID, failing.ID, messaging.StatusCounts{}, messaging.StatusCounts{})

	// Another company is independent.
	f.bulk(b.ID, messaging.ChannelSMS, 3, at(20), messaging.CampaignReady)
	require.Equal(t, 3, f.pending(b.ID))
	expect(15, "another company's campaigns do not count")
}

// testCapacityUse: a company's pending count by the status of the
// campaigns holding it (a Queuing campaign's reservation included), and
// the messages that left it lately: sent, failed or cancelled, not those
// merely claimed.
func testCapacityUse(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	running, msgs := f.bulk(a.ID, messaging.ChannelSMS, 6, at(0), messaging.CampaignInProgress)
	f.bulk(a.ID, messaging.ChannelSMS, 3, at(0), messaging.CampaignReady)
	queuing := f.newCampaign(a.ID, messaging.ChannelChat, messaging.ModeBulk, messaging.CampaignQueuing, 4, at(0))
	require.NoError(t, f.s.CreateCampaign(f.ctx, &queuing, unlimited))
	f.bulk(b.ID, messaging.ChannelSMS, 5, at(0), messaging.CampaignReady)

	use := func(id messaging.ID) messaging.CapacityUse {
		u, err := f.s.CapacityUse(f.ctx, id)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(-15*time.Second), u.Since, 6*time.Second, "the window starts 10 to 20 seconds ago")
		return u
	}
	u := use(a.ID)
	require.Zero(t, u.Drained)
	require.Equal(t, map[messaging.CampaignStatus]int{messaging.CampaignInProgress: 6, messaging.CampaignReady: 3, messaging.CampaignQueuing: 4}, u.HeldBy)

	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(600), 6), 6)
	require.Zero(t, use(a.ID).Drained, "claimed messages still hold capacity")
	f.apply(delivery.StatusUpdate{MessageID: msgs[0].ID, Status: messaging.StatusSent, At: at(2)},
		delivery.StatusUpdate{MessageID: msgs[1].ID, Status: messaging.StatusFailed, Details: "x", At: at(2)})
	u = use(a.ID)
	require.Equal(t, 2, u.Drained)
	require.Equal(t, 4, u.HeldBy[messaging.CampaignInProgress])
	f.apply(delivery.StatusUpdate{MessageID: msgs[2].ID, Status: messaging.StatusPending, At: at(3)})
	require.NoError(t, f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: running.ID,
		From: []messaging.CampaignStatus{messaging.CampaignInProgress}, To: messaging.CampaignCompleted, At: at(4)}))
	u = use(a.ID)
	require.Equal(t, 3, u.Drained, "the cancelled Pending message left; those in flight did not")
	require.Equal(t, map[messaging.CampaignStatus]int{messaging.CampaignCompleted: 3, messaging.CampaignReady: 3, messaging.CampaignQueuing: 4}, u.HeldBy)
	require.Zero(t, use(b.ID).Drained, "per company")
	_, err := f.s.CapacityUse(f.ctx, f.id())
	requireNotFound(t, err)
}

// testCountWaiting: a campaign's Pending messages due after a time, none
// of those due before it, Sending or of another campaign.
func testCountWaiting(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 4, at(0), messaging.CampaignInProgress)
	other, _ := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignInProgress)
	count := func(id messaging.ID, now int) int {
		n, err := f.s.CountWaiting(f.ctx, id, at(now))
		require.NoError(t, err)
		return n
	}
	require.Zero(t, count(c.ID, 0))
	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(600), 6), 6)
	f.apply(delivery.StatusUpdate{MessageID: msgs[0].ID, Status: messaging.StatusPending, At: at(2), DueAt: at(100)},
		delivery.StatusUpdate{MessageID: msgs[1].ID, Status: messaging.StatusPending, At: at(2), DueAt: at(50)})
	require.Equal(t, 2, count(c.ID, 10))
	require.Equal(t, 1, count(c.ID, 50), "due at 50: no longer waiting at 50")
	require.Zero(t, count(c.ID, 100))
	require.Zero(t, count(other.ID, 10))
}
