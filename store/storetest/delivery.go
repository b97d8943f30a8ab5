package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// claimedAs returns m as ClaimDue should return it: Sending, one more
// attempt, leased. UpdatedAt is left to the store (taken from got).
func claimedAs(m, got messaging.Message, lease time.Time) messaging.Message {
	m.Status = messaging.StatusSending
	m.Attempts++
	m.LeaseUntil = lease
	m.UpdatedAt = got.UpdatedAt
	return m
}

// ids returns the ids of ms.
func ids(ms []messaging.Message) []messaging.ID {
	out := make([]messaging.ID, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// testClaimDue: only due Pending messages of the channel, of InProgress
// campaigns, oldest first, up to the limit; they become Sending with one
// more attempt and the lease.
func testClaimDue(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")

	c := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 5, at(0)))
	due := []int{1, 1, 5, 100, 2} // DueAt of m0..m4
	msgs := make([]*messaging.Message, len(due))
	for i, d := range due {
		msgs[i] = f.newMessage(c, f.nextPhone(), at(d))
	}
	require.NoError(t, f.s.InsertMessages(f.ctx, []*messaging.Message{msgs[3], msgs[2], msgs[0], msgs[4], msgs[1]}))

	// Campaigns whose messages are never claimed: Queuing, Ready, Paused,
	// Completed.
	queuing, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignQueuing)
	ready, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignReady)
	paused, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	f.transition(paused, messaging.CampaignInProgress, messaging.CampaignPaused, at(0))
	completed, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	f.transition(completed, messaging.CampaignInProgress, messaging.CampaignCompleted, at(0))

	f.transition(c, messaging.CampaignQueuing, messaging.CampaignReady, at(0))
	f.transition(c, messaging.CampaignReady, messaging.CampaignInProgress, at(0))
	txB := f.transactional(b.ID, messaging.ChannelSMS)
	mb := f.newMessage(txB, f.nextPhone(), at(3))
	f.admit(b.ID, mb)
	chat, chatMsgs := f.bulk(a.ID, messaging.ChannelChat, 2, at(0), messaging.CampaignInProgress)

	requireClaimed := func(want []*messaging.Message, got []messaging.Message, lease int) {
		t.Helper()
		require.Equal(t, idsOf(want), ids(got), "claimed messages, oldest first")
		for i, m := range want {
			exp := claimedAs(*m, got[i], at(lease))
			requireSame(t, exp, got[i])
			requireSame(t, exp, f.getMessage(m.CompanyID, m.ID), "a claimed message is stored Sending")
		}
	}

	// The transactional message goes first, though the bulk ones are
	// older; what a claim returns is oldest first.
	got := f.claim(messaging.ChannelSMS, at(10), at(70), 2)
	requireClaimed([]*messaging.Message{msgs[0], mb}, got, 70)
	got = f.claim(messaging.ChannelSMS, at(10), at(71), 10)
	requireClaimed([]*messaging.Message{msgs[1], msgs[4], msgs[2]}, got, 71)
	require.Empty(t, f.claim(messaging.ChannelSMS, at(10), at(72), 10), "nothing else is due")

	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 1, Sending: 4}, messaging.StatusCounts{})
	f.requireCounts(b.ID, txB.ID, messaging.StatusCounts{Sending: 1}, messaging.StatusCounts{})
	require.Equal(t, 11, f.pending(a.ID), "claiming does not change the pending count")
	require.Equal(t, 1, f.pending(b.ID), "claiming does not change the pending count")

	got = f.claim(messaging.ChannelChat, at(10), at(73), 10)
	requireClaimed(chatMsgs, got, 73)
	f.requireCounts(a.ID, chat.ID, messaging.StatusCounts{Sending: 2}, messaging.StatusCounts{})

	got = f.claim(messaging.ChannelSMS, at(100), at(160), 10)
	requireClaimed([]*messaging.Message{msgs[3]}, got, 160)
	require.Empty(t, f.claim(messaging.ChannelSMS, at(100000), at(100060), 100))
	require.Empty(t, f.claim(messaging.ChannelChat, at(100000), at(100060), 100))
	for _, other := range []messaging.Campaign{queuing, ready, paused, completed} {
		f.requireCounts(a.ID, other.ID, messaging.StatusCounts{Pending: 1}, messaging.StatusCounts{})
	}
	f.requireReconciled()
}

// idsOf returns the ids of ms.
func idsOf(ms []*messaging.Message) []messaging.ID {
	out := make([]messaging.ID, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// testClaimDueConcurrent: concurrent claimers never get the same message
// and together get all of them.
func testClaimDueConcurrent(f *fixture) {
	t := f.t
	a := f.company("A")
	const n, workers, limit = 2000, 8, 25
	c1, _ := f.bulk(a.ID, messaging.ChannelSMS, n/2, at(0), messaging.CampaignInProgress)
	c2, _ := f.bulk(a.ID, messaging.ChannelSMS, n/2, at(1), messaging.CampaignInProgress)

	got := make([][]messaging.Message, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				ms, err := f.s.ClaimDue(f.ctx, delivery.Claim{Channel: messaging.ChannelSMS, Owner: fmt.Sprint("w", w), Now: at(10), LeaseUntil: at(70), Limit: limit})
				if err != nil {
					errs[w] = err
					return
				}
				if len(ms) > limit {
					errs[w] = fmt.Errorf("claimed %d messages with limit %d", len(ms), limit)
					return
				}
				if len(ms) == 0 {
					return
				}
				got[w] = append(got[w], ms...)
			}
		})
	}
	wg.Wait()
	seen := make(map[messaging.ID]int, n)
	for w := range workers {
		require.NoError(t, errs[w], "worker %d", w)
		for _, m := range got[w] {
			seen[m.ID]++
			require.Equal(t, messaging.StatusSending, m.Status)
			require.Equal(t, 1, m.Attempts, "message %s claimed more than once", m.ID)
		}
	}
	require.Len(t, seen, n, "together the claimers get every message")
	for id, k := range seen {
		require.Equal(t, 1, k, "message %s claimed %d times", id, k)
	}
	f.requireCounts(a.ID, c1.ID, messaging.StatusCounts{Sending: n / 2}, messaging.StatusCounts{})
	f.requireCounts(a.ID, c2.ID, messaging.StatusCounts{Sending: n / 2}, messaging.StatusCounts{})
	require.Equal(t, n, f.pending(a.ID))
}

// testApplyUpdatesRules: forward-only moves with their timestamps and
// provider fields; the result tells exactly which updates applied.
func testApplyUpdatesRules(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 8, at(0), messaging.CampaignInProgress)
	claimed := f.claim(messaging.ChannelSMS, at(1), at(61), 8)
	require.Equal(t, idsOf(msgs), ids(claimed))
	id := func(i int) messaging.ID { return msgs[i].ID }
	up := func(i int, s messaging.MessageStatus, sec int) delivery.StatusUpdate {
		return delivery.StatusUpdate{MessageID: id(i), Status: s, At: at(sec)}
	}
	withPID := func(u delivery.StatusUpdate, pid string) delivery.StatusUpdate { u.ProviderMessageID = pid; return u }
	withDetails := func(u delivery.StatusUpdate, details, code string) delivery.StatusUpdate {
		u.Details, u.SMSErrorCode = details, code
		return u
	}
	retry := up(3, messaging.StatusPending, 3)
	retry.DueAt = at(50)

	ok := f.apply(
		withPID(up(0, messaging.StatusSent, 2), "p0"),
		up(1, messaging.StatusSeen, 3), // Delivered skipped
		up(2, messaging.StatusSeen, 4),
		up(2, messaging.StatusDelivered, 5), // late Delivered after Seen, same batch
		retry,                               // Sending -> Pending
		withPID(up(4, messaging.StatusSent, 2), "p4"),
		withDetails(up(5, messaging.StatusFailed, 3), "chat error 9", ""),
		delivery.StatusUpdate{MessageID: f.id(), Status: messaging.StatusSent, At: at(2)}, // unknown message
	)
	require.Equal(t, []bool{true, true, true, false, true, true, true, false}, ok)

	ok = f.apply(
		up(0, messaging.StatusSent, 6), // repeated
		up(0, messaging.StatusDelivered, 7),
		withDetails(up(0, messaging.StatusFailed, 8), "too late", "099"), // Delivered -> Failed
		up(0, messaging.StatusSeen, 9),
		up(0, messaging.StatusDelivered, 10), // late Delivered after Seen
		withDetails(up(4, messaging.StatusFailed, 11), "UNDELIVERED", "005"),
		up(5, messaging.StatusPending, 12), // nothing leaves Failed
		up(5, messaging.StatusSent, 12),
		up(6, messaging.StatusSending, 12),                  // repeated
		withPID(up(7, messaging.StatusDelivered, 12), "p7"), // Sent skipped
	)
	require.Equal(t, []bool{false, true, false, true, false, true, false, false, false, true}, ok)

	expect := func(i int, edit func(m *messaging.Message)) {
		t.Helper()
		got := f.getMessage(a.ID, id(i))
		want := claimedAs(*msgs[i], got, claimed[i].LeaseUntil)
		want.LeaseUntil = got.LeaseUntil // left to the store once the send is over
		edit(&want)
		requireSame(t, want, got, "message %d", i)
	}
	expect(0, func(m *messaging.Message) {
		m.Status, m.ProviderMessageID = messaging.StatusSeen, "p0"
		m.SentAt, m.DeliveredAt, m.SeenAt = ptr(at(2)), ptr(at(7)), ptr(at(9))
	})
	// Seen or Delivered before the send was recorded: sent by then.
	expect(1, func(m *messaging.Message) {
		m.Status, m.SentAt, m.DeliveredAt, m.SeenAt = messaging.StatusSeen, ptr(at(3)), ptr(at(3)), ptr(at(3))
	})
	expect(2, func(m *messaging.Message) {
		m.Status, m.SentAt, m.DeliveredAt, m.SeenAt = messaging.StatusSeen, ptr(at(4)), ptr(at(4)), ptr(at(4))
	})
	expect(3, func(m *messaging.Message) {
		m.Status, m.DueAt = messaging.StatusPending, at(50)
	})
	expect(4, func(m *messaging.Message) {
		m.Status, m.ProviderMessageID, m.SentAt = messaging.StatusFailed, "p4", ptr(at(2))
		m.Details, m.SMSErrorCode = "UNDELIVERED", "005"
	})
	expect(5, func(m *messaging.Message) { m.Status, m.Details = messaging.StatusFailed, "chat error 9" })
	expect(6, func(m *messaging.Message) {})
	expect(7, func(m *messaging.Message) {
		m.Status, m.ProviderMessageID, m.SentAt, m.DeliveredAt = messaging.StatusDelivered, "p7", ptr(at(12)), ptr(at(12))
	})

	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 1, Sending: 1, Delivered: 1, Seen: 3, Failed: 2}, messaging.StatusCounts{})
	require.Equal(t, 2, f.pending(a.ID))

	// The retried message is due again at its new DueAt.
	require.Empty(t, f.claim(messaging.ChannelSMS, at(49), at(109), 10))
	again := f.claim(messaging.ChannelSMS, at(50), at(110), 10)
	require.Equal(t, []messaging.ID{id(3)}, ids(again))
	require.Equal(t, 2, again[0].Attempts)
	f.requireReconciled()
}

// modelMessage is what testApplyUpdatesModel knows of a message.
type modelMessage struct {
	companyID, campaignID messaging.ID
	channel               messaging.Channel
	fallback              bool
	status                messaging.MessageStatus
}

// testApplyUpdatesModel: after a random sequence of claims and updates,
// campaign counters, fallback counters and pending counts equal what a
// model of the messages says, and every result was exact.
func testApplyUpdatesModel(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	model := map[messaging.ID]*modelMessage{}
	var order []messaging.ID
	add := func(ms ...*messaging.Message) {
		for _, m := range ms {
			model[m.ID] = &modelMessage{m.CompanyID, m.CampaignID, m.Channel, m.IsFallback(), m.Status}
			order = append(order, m.ID)
		}
	}
	chat, chatMsgs := f.bulk(a.ID, messaging.ChannelChat, 40, at(0), messaging.CampaignInProgress)
	add(chatMsgs...)
	var fallbacks []*messaging.Message
	for _, m := range chatMsgs[:20] {
		fallbacks = append(fallbacks, f.fallbackFor(m, at(1)))
	}
	f.admit(a.ID, fallbacks...)
	add(fallbacks...)
	tx := f.transactional(a.ID, messaging.ChannelSMS)
	txMsgs := f.newMessages(tx, 30, at(2))
	f.admit(a.ID, txMsgs...)
	add(txMsgs...)
	other, otherMsgs := f.bulk(b.ID, messaging.ChannelSMS, 10, at(3), messaging.CampaignInProgress)
	add(otherMsgs...)
	campaigns := []messaging.Campaign{chat, tx, other}

	check := func(round int) {
		t.Helper()
		for _, c := range campaigns {
			var counts, fallback messaging.StatusCounts
			for _, m := range model {
				if m.campaignID != c.ID {
					continue
				}
				if m.fallback {
					fallback.Add(m.status, 1)
				} else {
					counts.Add(m.status, 1)
				}
			}
			got := f.getCampaign(c.CompanyID, c.ID)
			require.Equal(t, counts, got.Counts, "round %d, campaign %s", round, c.ID)
			require.Equal(t, fallback, got.FallbackCounts, "round %d, campaign %s fallback", round, c.ID)
		}
		for _, co := range []messaging.ID{a.ID, b.ID} {
			want := 0
			for _, m := range model {
				if m.companyID == co && m.status.Unsent() {
					want++
				}
			}
			require.Equal(t, want, f.pending(co), "round %d: pending count", round)
		}
	}
	check(0)

	rng := rand.New(rand.NewPCG(7, 8))
	statuses := messaging.MessageStatuses()
	for round := 1; round <= 30; round++ {
		ch := messaging.ChannelSMS
		if round%2 == 0 {
			ch = messaging.ChannelChat
		}
		for _, m := range f.claim(ch, at(10_000), at(10_060), 1+rng.IntN(4)) {
			mm := model[m.ID]
			require.NotNil(t, mm, "claimed an unknown message")
			require.Equal(t, messaging.StatusPending, mm.status, "round %d: claimed a message that was not Pending", round)
			require.Equal(t, ch, mm.channel)
			mm.status = messaging.StatusSending
		}
		n := 1 + rng.IntN(15)
		updates := make([]delivery.StatusUpdate, n)
		want := make([]bool, n)
		for i := range updates {
			u := delivery.StatusUpdate{Status: statuses[rng.IntN(len(statuses))], At: at(round), DueAt: at(round)}
			if rng.IntN(20) == 0 {
				u.MessageID = f.id() // unknown
			} else {
				u.MessageID = order[rng.IntN(len(order))]
				if i > 0 && rng.IntN(5) == 0 {
					u.MessageID = updates[rng.IntN(i)].MessageID // the same message twice in a batch
				}
			}
			if mm := model[u.MessageID]; mm != nil && mm.status.CanAdvance(u.Status) {
				mm.status = u.Status
				want[i] = true
			}
			updates[i] = u
		}
		require.Equal(t, want, f.apply(updates...), "round %d: applied updates", round)
		check(round)
	}
	for _, id := range order {
		mm := model[id]
		require.Equal(t, mm.status, f.getMessage(mm.companyID, id).Status, "message %s", id)
	}
	f.requireReconciled()
}

// testApplyUpdatesConcurrent: concurrent updates of one campaign's
// messages keep its counters exact.
func testApplyUpdatesConcurrent(f *fixture) {
	t := f.t
	a := f.company("A")
	const workers, each = 8, 25
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, workers*each, at(0), messaging.CampaignInProgress)
	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(61), workers*each), workers*each)

	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for _, s := range []messaging.MessageStatus{messaging.StatusSent, messaging.StatusDelivered} {
				updates := make([]delivery.StatusUpdate, each)
				for i := range updates {
					updates[i] = delivery.StatusUpdate{MessageID: msgs[w*each+i].ID, Status: s, At: at(2)}
				}
				ok, err := f.s.ApplyUpdates(f.ctx, updates)
				if err == nil && slices.Contains(ok, false) {
					err = fmt.Errorf("an update was not applied: %v", ok)
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for w, err := range errs {
		require.NoError(t, err, "worker %d", w)
	}
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Delivered: workers * each}, messaging.StatusCounts{})
	require.Zero(t, f.pending(a.ID))
	f.requireReconciled()
}

// testRecoverExpired: Sending messages whose lease ended before now go
// back to Pending, keeping their due time; nothing else moves (heartbeats
// not looked at).
func testRecoverExpired(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 5, at(0), messaging.CampaignInProgress)
	require.Equal(t, idsOf(msgs[:3]), ids(f.claim(messaging.ChannelSMS, at(1), at(60), 3)))
	require.Equal(t, idsOf(msgs[3:4]), ids(f.claim(messaging.ChannelSMS, at(1), at(120), 1)))
	require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: msgs[2].ID, Status: messaging.StatusSent, At: at(2)}))
	require.Equal(t, 4, f.pending(a.ID))

	n, err := f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(60)})
	require.NoError(t, err)
	require.Zero(t, n, "a lease ending at now has not ended before now")

	n, err = f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(61)})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, m := range msgs[:2] {
		got := f.getMessage(a.ID, m.ID)
		require.Equal(t, messaging.StatusPending, got.Status)
		requireTime(t, "DueAt", m.DueAt, got.DueAt, nil)
		require.Equal(t, 1, got.Attempts)
	}
	require.Equal(t, messaging.StatusSent, f.getMessage(a.ID, msgs[2].ID).Status)
	still := f.getMessage(a.ID, msgs[3].ID)
	require.Equal(t, messaging.StatusSending, still.Status)
	requireTime(t, "LeaseUntil", at(120), still.LeaseUntil, nil)
	untouched := f.getMessage(a.ID, msgs[4].ID)
	requireSame(t, *msgs[4], untouched)
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 3, Sending: 1, Sent: 1}, messaging.StatusCounts{})
	require.Equal(t, 4, f.pending(a.ID), "recovery does not change the pending count")

	n, err = f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(61)})
	require.NoError(t, err)
	require.Zero(t, n)

	again := f.claim(messaging.ChannelSMS, at(61), at(121), 10)
	require.Equal(t, []messaging.ID{msgs[0].ID, msgs[1].ID, msgs[4].ID}, ids(again), "oldest due first: recovered messages keep their due time")
	require.Equal(t, []int{2, 2, 1}, []int{again[0].Attempts, again[1].Attempts, again[2].Attempts})
	f.requireReconciled()
}

// testCompleteDrained: InProgress bulk campaigns with nothing Pending or
// Sending (fallback SMS included) complete; transactional, Queuing and
// Ready ones never do; later receipts still count.
func testCompleteDrained(f *fixture) {
	t := f.t
	co := f.company("A")
	drained, dMsgs := f.bulk(co.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignInProgress)
	sending, sMsgs := f.bulk(co.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	retrying, rMsgs := f.bulk(co.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	chat, cMsgs := f.bulk(co.ID, messaging.ChannelChat, 1, at(0), messaging.CampaignInProgress)
	tx := f.transactional(co.ID, messaging.ChannelSMS)
	txMsg := f.newMessage(tx, f.nextPhone(), at(0))
	f.admit(co.ID, txMsg)
	queuing, _ := f.bulk(co.ID, messaging.ChannelSMS, 0, at(0), messaging.CampaignQueuing)
	ready, _ := f.bulk(co.ID, messaging.ChannelSMS, 0, at(0), messaging.CampaignReady)

	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(61), 100), 5)
	require.Len(t, f.claim(messaging.ChannelChat, at(1), at(61), 100), 1)
	retry := delivery.StatusUpdate{MessageID: rMsgs[0].ID, Status: messaging.StatusPending, At: at(2), DueAt: at(1000)}
	require.Equal(t, []bool{true, true, true, true, true}, f.apply(
		delivery.StatusUpdate{MessageID: dMsgs[0].ID, Status: messaging.StatusSent, At: at(2)},
		delivery.StatusUpdate{MessageID: dMsgs[1].ID, Status: messaging.StatusFailed, At: at(2)},
		delivery.StatusUpdate{MessageID: cMsgs[0].ID, Status: messaging.StatusFailed, At: at(2), Details: "chat error 9"},
		delivery.StatusUpdate{MessageID: txMsg.ID, Status: messaging.StatusSent, At: at(2)},
		retry,
	))
	fb := f.fallbackFor(cMsgs[0], at(3))
	f.admit(co.ID, fb)

	status := func(c messaging.Campaign) messaging.CampaignStatus { return f.getCampaign(co.ID, c.ID).Status }
	complete := func(sec, want int) {
		t.Helper()
		done, err := f.s.CompleteDrained(f.ctx, at(sec))
		require.NoError(t, err)
		require.Len(t, done, want, "campaigns completed at %d", sec)
		for _, c := range done {
			got := f.getCampaign(c.CompanyID, c.ID)
			require.Equal(t, messaging.CampaignCompleted, got.Status, "the campaign named is the one completed")
			require.Equal(t, got.Name, c.Name)
		}
	}

	complete(9, 1)
	got := f.getCampaign(co.ID, drained.ID)
	require.Equal(t, messaging.CampaignCompleted, got.Status)
	require.NotNil(t, got.CompletedAt)
	requireTime(t, "CompletedAt", at(9), *got.CompletedAt, nil)
	for _, c := range []messaging.Campaign{sending, retrying, chat, tx} {
		require.Equal(t, messaging.CampaignInProgress, status(c), "campaign %s", c.ID)
	}
	require.Equal(t, messaging.CampaignQueuing, status(queuing))
	require.Equal(t, messaging.CampaignReady, status(ready))

	require.Equal(t, []bool{true, true}, f.apply(
		delivery.StatusUpdate{MessageID: sMsgs[0].ID, Status: messaging.StatusSent, At: at(10)},
		delivery.StatusUpdate{MessageID: fb.ID, Status: messaging.StatusSent, At: at(10)},
	))
	complete(11, 2)
	for _, c := range []messaging.Campaign{sending, chat} {
		got := f.getCampaign(co.ID, c.ID)
		require.Equal(t, messaging.CampaignCompleted, got.Status)
		requireTime(t, "CompletedAt", at(11), *got.CompletedAt, nil)
	}
	complete(12, 0)
	require.Equal(t, messaging.CampaignInProgress, status(retrying))
	require.Equal(t, messaging.CampaignInProgress, status(tx), "transactional campaigns never complete")

	// Receipts after completion still count.
	require.Equal(t, []bool{true, true}, f.apply(
		delivery.StatusUpdate{MessageID: dMsgs[0].ID, Status: messaging.StatusDelivered, At: at(20)},
		delivery.StatusUpdate{MessageID: fb.ID, Status: messaging.StatusDelivered, At: at(20)},
	))
	got = f.getCampaign(co.ID, drained.ID)
	require.Equal(t, messaging.CampaignCompleted, got.Status)
	require.Equal(t, messaging.StatusCounts{Delivered: 1, Failed: 1}, got.Counts)
	requireTime(t, "CompletedAt", at(9), *got.CompletedAt, nil)
	f.requireCounts(co.ID, chat.ID, messaging.StatusCounts{Failed: 1}, messaging.StatusCounts{Delivered: 1})
	f.requireReconciled()
}

// testLateFallback: a fallback SMS written into a campaign that completed
// before the chat failure was known (a late failed callback) is claimed
// and sent like any other; the campaign stays Completed and counts it.
func testLateFallback(f *fixture) {
	t := f.t
	co := f.company("A")
	chat, msgs := f.bulk(co.ID, messaging.ChannelChat, 2, at(0), messaging.CampaignInProgress)
	require.Len(t, f.claim(messaging.ChannelChat, at(1), at(61), 10), 2)
	require.Equal(t, []bool{true, true}, f.apply(
		delivery.StatusUpdate{MessageID: msgs[0].ID, Status: messaging.StatusSent, At: at(2)},
		delivery.StatusUpdate{MessageID: msgs[1].ID, Status: messaging.StatusSent, At: at(2)},
	))
	done, err := f.s.CompleteDrained(f.ctx, at(3))
	require.NoError(t, err)
	require.Len(t, done, 1)

	fb := f.fallbackFor(msgs[1], at(4))
	f.admit(co.ID, fb)
	require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: msgs[1].ID, Status: messaging.StatusFailed, At: at(4), Details: "NOT_VIBER_USER (9)"}))
	claimed := f.claim(messaging.ChannelSMS, at(5), at(65), 10)
	require.Equal(t, []messaging.ID{fb.ID}, ids(claimed))
	require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: fb.ID, Status: messaging.StatusDelivered, At: at(6)}))
	got := f.getCampaign(co.ID, chat.ID)
	require.Equal(t, messaging.CampaignCompleted, got.Status)
	f.requireCounts(co.ID, chat.ID, messaging.StatusCounts{Sent: 1, Failed: 1}, messaging.StatusCounts{Delivered: 1})
	require.Empty(t, f.claim(messaging.ChannelSMS, at(7), at(67), 10))
	require.Equal(t, 0, f.pending(co.ID))
	f.requireReconciled()
}

// testBacklog: the messages of InProgress campaigns not handed to a
// provider yet, by channel, fallback SMS as SMS; those of campaigns not
// started, and those sent or failed, are not counted.
func testBacklog(f *fixture) {
	t := f.t
	backlog := func() map[messaging.Channel]int {
		t.Helper()
		b, err := f.s.Backlog(f.ctx)
		require.NoError(t, err)
		for ch, n := range b {
			if n == 0 {
				delete(b, ch)
			}
		}
		return b
	}
	require.Empty(t, backlog(), "a new store")
	co := f.company("A")
	_, sms := f.bulk(co.ID, messaging.ChannelSMS, 4, at(0), messaging.CampaignInProgress)
	f.bulk(co.ID, messaging.ChannelSMS, 5, at(0), messaging.CampaignReady)
	_, chat := f.bulk(co.ID, messaging.ChannelChat, 3, at(0), messaging.CampaignInProgress)
	require.Equal(t, map[messaging.Channel]int{messaging.ChannelSMS: 4, messaging.ChannelChat: 3}, backlog())

	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(61), 2), 2)
	require.Equal(t, map[messaging.Channel]int{messaging.ChannelSMS: 4, messaging.ChannelChat: 3}, backlog(), "Sending is not handed over yet")
	require.Equal(t, []bool{true, true}, f.apply(
		delivery.StatusUpdate{MessageID: sms[0].ID, Status: messaging.StatusSent, At: at(2)},
		delivery.StatusUpdate{MessageID: sms[1].ID, Status: messaging.StatusFailed, At: at(2), Details: "x"},
	))
	require.Len(t, f.claim(messaging.ChannelChat, at(3), at(63), 1), 1)
	fb := f.fallbackFor(chat[0], at(4))
	f.admit(co.ID, fb)
	require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: chat[0].ID, Status: messaging.StatusFailed, At: at(4), Details: "NOT_VIBER_USER (9)"}))
	require.Equal(t, map[messaging.Channel]int{messaging.ChannelSMS: 3, messaging.ChannelChat: 2}, backlog(),
		"two SMS and the fallback SMS; two chat messages")
}

// testRecoverClaims: the claims of an owner whose heartbeat is older than
// StaleBefore, or who never sent one, go back to Pending, unless the owner
// is the caller (Self); those of a live owner stay, unless it is the Owner
// of the recovery (a restarted process taking back its previous run's
// claims); a forgotten claimer's claims count as stale.
func testRecoverClaims(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 8, at(0), messaging.CampaignInProgress)
	require.NoError(t, f.s.Heartbeat(f.ctx, "live", at(1)))
	require.NoError(t, f.s.Heartbeat(f.ctx, "dead", at(1)))
	require.NoError(t, f.s.Heartbeat(f.ctx, "restarted", at(1)))
	require.NoError(t, f.s.Heartbeat(f.ctx, "gone", at(1)))
	live := f.claimFor("live", messaging.ChannelSMS, at(1), at(600), 2)
	dead := f.claimFor("dead", messaging.ChannelSMS, at(1), at(600), 2)
	restarted := f.claimFor("restarted", messaging.ChannelSMS, at(1), at(600), 1)
	never := f.claimFor("never", messaging.ChannelSMS, at(1), at(600), 1)
	gone := f.claimFor("gone", messaging.ChannelSMS, at(1), at(600), 1)
	require.Equal(t, idsOf(msgs[:7]), ids(slices.Concat(live, dead, restarted, never, gone)))
	require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: dead[1].ID, Status: messaging.StatusSent, At: at(2)}))

	require.NoError(t, f.s.Heartbeat(f.ctx, "live", at(20)))
	require.NoError(t, f.s.Heartbeat(f.ctx, "restarted", at(20)))
	require.NoError(t, f.s.Heartbeat(f.ctx, "gone", at(20)))
	require.NoError(t, f.s.ForgetClaimer(f.ctx, "gone"))
	require.NoError(t, f.s.ForgetClaimer(f.ctx, "unknown"), "forgetting an unknown claimer is no error")

	n, err := f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(21), StaleBefore: at(11)})
	require.NoError(t, err)
	require.Equal(t, 3, n, "dead's unsent claim, never's and gone's")
	for _, m := range []messaging.Message{dead[0], never[0], gone[0]} {
		got := f.getMessage(a.ID, m.ID)
		require.Equal(t, messaging.StatusPending, got.Status)
		requireTime(t, "DueAt", m.DueAt, got.DueAt, nil)
	}
	require.Equal(t, messaging.StatusSent, f.getMessage(a.ID, dead[1].ID).Status, "a recorded send is not taken back")
	for _, m := range slices.Concat(live, restarted) {
		require.Equal(t, messaging.StatusSending, f.getMessage(a.ID, m.ID).Status, "live claims stay")
	}
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 4, Sending: 3, Sent: 1}, messaging.StatusCounts{})

	n, err = f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(22), StaleBefore: at(12), Owner: "restarted"})
	require.NoError(t, err)
	require.Equal(t, 1, n, "the restarted owner's claim, though its heartbeat is fresh")
	require.Equal(t, messaging.StatusPending, f.getMessage(a.ID, restarted[0].ID).Status)
	for _, m := range live {
		require.Equal(t, messaging.StatusSending, f.getMessage(a.ID, m.ID).Status)
	}

	n, err = f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(40), StaleBefore: at(30), Self: "live"})
	require.NoError(t, err)
	require.Zero(t, n, "a caller never takes back its own claims for a late heartbeat")
	n, err = f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(40), StaleBefore: at(30), Self: "other"})
	require.NoError(t, err)
	require.Equal(t, 2, n, "live stopped beating")
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 7, Sent: 1}, messaging.StatusCounts{})
	require.Equal(t, 7, f.pending(a.ID))

	again := f.claimFor("live", messaging.ChannelSMS, at(40), at(600), 10)
	require.Len(t, again, 7)
	f.requireReconciled()
}

// testRecoverUnknownClaims: a claim listed in Recovery.Unknown (its owner
// and its lease) goes back to Pending though its owner is the caller with
// a fresh heartbeat and its lease runs on; its messages already recorded
// stay, and so do the claims of the same owner with another lease and of
// another owner with the same lease.
func testRecoverUnknownClaims(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 8, at(0), messaging.CampaignInProgress)
	require.NoError(t, f.s.Heartbeat(f.ctx, "live", at(1)))
	require.NoError(t, f.s.Heartbeat(f.ctx, "other", at(1)))
	lease := at(600)
	lost := f.claimFor("live", messaging.ChannelSMS, at(1), lease, 3)
	kept := f.claimFor("live", messaging.ChannelSMS, at(1), lease.Add(time.Microsecond), 2)
	others := f.claimFor("other", messaging.ChannelSMS, at(1), lease, 1)
	anon := f.claimFor("", messaging.ChannelSMS, at(1), lease.Add(2*time.Microsecond), 1)
	require.Equal(t, idsOf(msgs[:7]), ids(slices.Concat(lost, kept, others, anon)))
	require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: lost[2].ID, Status: messaging.StatusSent, At: at(2)}))

	n, err := f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(3), StaleBefore: at(0), Self: "live",
		Unknown: []delivery.ClaimRef{{Owner: "live", LeaseUntil: lease}}})
	require.NoError(t, err)
	require.Equal(t, 2, n, "the unknown claim's two messages still Sending")
	for _, m := range lost[:2] {
		got := f.getMessage(a.ID, m.ID)
		require.Equal(t, messaging.StatusPending, got.Status)
		requireTime(t, "DueAt", m.DueAt, got.DueAt, nil)
	}
	require.Equal(t, messaging.StatusSent, f.getMessage(a.ID, lost[2].ID).Status, "a recorded send is not taken back")
	for _, m := range slices.Concat(kept, others, anon) {
		require.Equal(t, messaging.StatusSending, f.getMessage(a.ID, m.ID).Status, "another claim stays")
	}
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 3, Sending: 4, Sent: 1}, messaging.StatusCounts{})

	n, err = f.s.RecoverClaims(f.ctx, delivery.Recovery{Now: at(4), Unknown: []delivery.ClaimRef{
		{Owner: "live", LeaseUntil: lease}, {LeaseUntil: lease.Add(2 * time.Microsecond)}, {Owner: "live", LeaseUntil: at(900)}}})
	require.NoError(t, err)
	require.Equal(t, 1, n, "the claim of no owner; the first claim has nothing Sending left, the third matches none")
	require.Equal(t, messaging.StatusPending, f.getMessage(a.ID, anon[0].ID).Status)
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 4, Sending: 3, Sent: 1}, messaging.StatusCounts{})
	require.Equal(t, 7, f.pending(a.ID))

	again := f.claimFor("live", messaging.ChannelSMS, at(5), at(700), 10)
	require.Equal(t, idsOf([]*messaging.Message{msgs[0], msgs[1], msgs[6], msgs[7]}), ids(again), "taken back, oldest first")
	f.requireReconciled()
}

// testApplyUpdatesChannel: an update whose Channel is set applies only to
// a message of that channel; the others are skipped as if unknown, their
// counters untouched.
func testApplyUpdatesChannel(f *fixture) {
	t := f.t
	a := f.company("A")
	sc, sms := f.bulk(a.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	cc, chat := f.bulk(a.ID, messaging.ChannelChat, 1, at(0), messaging.CampaignInProgress)
	f.claim(messaging.ChannelSMS, at(1), at(60), 1)
	f.claim(messaging.ChannelChat, at(1), at(60), 1)
	require.Equal(t, []bool{true, true}, f.apply(
		delivery.StatusUpdate{MessageID: sms[0].ID, Status: messaging.StatusSent, At: at(2)},
		delivery.StatusUpdate{MessageID: chat[0].ID, Status: messaging.StatusSent, At: at(2)}))

	require.Equal(t, []bool{false, true, false}, f.apply(
		delivery.StatusUpdate{MessageID: sms[0].ID, Status: messaging.StatusSeen, At: at(3), Channel: messaging.ChannelChat},
		delivery.StatusUpdate{MessageID: chat[0].ID, Status: messaging.StatusDelivered, At: at(3), Channel: messaging.ChannelChat},
		delivery.StatusUpdate{MessageID: chat[0].ID, Status: messaging.StatusSeen, At: at(4), Channel: messaging.ChannelSMS}))
	require.Equal(t, messaging.StatusSent, f.getMessage(a.ID, sms[0].ID).Status)
	require.Equal(t, messaging.StatusDelivered, f.getMessage(a.ID, chat[0].ID).Status)
	f.requireCounts(a.ID, sc.ID, messaging.StatusCounts{Sent: 1}, messaging.StatusCounts{})
	f.requireCounts(a.ID, cc.ID, messaging.StatusCounts{Delivered: 1}, messaging.StatusCounts{})

	require.Equal(t, []bool{true}, f.apply(
		delivery.StatusUpdate{MessageID: sms[0].ID, Status: messaging.StatusDelivered, At: at(5), Channel: messaging.ChannelSMS}))
	f.requireCounts(a.ID, sc.ID, messaging.StatusCounts{Delivered: 1}, messaging.StatusCounts{})
	f.requireReconciled()
}

// testApplyUpdatesCompany: an update whose CompanyID is set applies only
// to a message of that company; the others are skipped as if unknown,
// their counters untouched.
func testApplyUpdatesCompany(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	cc, chat := f.bulk(a.ID, messaging.ChannelChat, 1, at(0), messaging.CampaignInProgress)
	f.claim(messaging.ChannelChat, at(1), at(60), 1)
	require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: chat[0].ID, Status: messaging.StatusSent, At: at(2)}))

	require.Equal(t, []bool{false, true, false}, f.apply(
		delivery.StatusUpdate{MessageID: chat[0].ID, Status: messaging.StatusDelivered, At: at(3), CompanyID: b.ID},
		delivery.StatusUpdate{MessageID: chat[0].ID, Status: messaging.StatusDelivered, At: at(3), CompanyID: a.ID},
		delivery.StatusUpdate{MessageID: chat[0].ID, Status: messaging.StatusSeen, At: at(4), CompanyID: b.ID}))
	require.Equal(t, messaging.StatusDelivered, f.getMessage(a.ID, chat[0].ID).Status)
	f.requireCounts(a.ID, cc.ID, messaging.StatusCounts{Delivered: 1}, messaging.StatusCounts{})
	f.requireReconciled()
}

// testMessageByID: a message of any company by its id alone (the chat
// callbacks' view), as GetMessage gives it; an unknown id is NotFound.
func testMessageByID(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	_, ma := f.bulk(a.ID, messaging.ChannelChat, 1, at(0), messaging.CampaignInProgress)
	_, mb := f.bulk(b.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	for _, m := range []*messaging.Message{ma[0], mb[0]} {
		got, err := f.s.MessageByID(f.ctx, m.ID)
		require.NoError(t, err)
		requireSame(t, f.getMessage(m.CompanyID, m.ID), got)
	}
	_, err := f.s.MessageByID(f.ctx, messaging.ID{9})
	requireNotFound(t, err)
}

// testClaimPriorityAndQuotas: a claim takes transactional messages before
// older bulk ones, and no more of a capped company than its quota (none at
// 0), whichever of its campaigns they belong to, while the companies it
// does not list are not capped.
func testClaimPriorityAndQuotas(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	bulkA, bulkMsgs := f.bulk(a.ID, messaging.ChannelSMS, 6, at(1), messaging.CampaignInProgress)
	txA := f.transactional(a.ID, messaging.ChannelSMS)
	txMsgs := []*messaging.Message{f.newMessage(txA, f.nextPhone(), at(5)), f.newMessage(txA, f.nextPhone(), at(6))}
	f.admit(a.ID, txMsgs...)
	bulkB, bMsgs := f.bulk(b.ID, messaging.ChannelSMS, 3, at(2), messaging.CampaignInProgress)

	got := f.claim(messaging.ChannelSMS, at(10), at(70), 3)
	require.ElementsMatch(t, idsOf([]*messaging.Message{txMsgs[0], txMsgs[1], bulkMsgs[0]}), ids(got),
		"both transactional messages, then the oldest bulk one")

	claimQ := func(limit int, quotas map[messaging.ID]int) []messaging.Message {
		t.Helper()
		ms, err := f.s.ClaimDue(f.ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: at(10), LeaseUntil: at(70), Limit: limit, Quotas: quotas})
		require.NoError(t, err)
		return ms
	}
	require.Empty(t, claimQ(10, map[messaging.ID]int{a.ID: 0, b.ID: 0}), "both companies at quota 0")
	got = claimQ(10, map[messaging.ID]int{a.ID: 2})
	require.Equal(t, idsOf(append([]*messaging.Message{bulkMsgs[1], bulkMsgs[2]}, bMsgs...)), ids(got),
		"two of A (its quota), every one of B (not capped)")
	f.requireCounts(a.ID, bulkA.ID, messaging.StatusCounts{Pending: 3, Sending: 3}, messaging.StatusCounts{})
	f.requireCounts(b.ID, bulkB.ID, messaging.StatusCounts{Sending: 3}, messaging.StatusCounts{})

	// Quotas of several campaigns of one company add up to one quota.
	bulkA2, bulk2Msgs := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignInProgress)
	got = claimQ(10, map[messaging.ID]int{a.ID: 2, b.ID: 5})
	require.Equal(t, idsOf(bulk2Msgs), ids(got), "the quota of A went to its oldest messages, in the other campaign")
	got = claimQ(1, map[messaging.ID]int{a.ID: 5})
	require.Equal(t, idsOf(bulkMsgs[3:4]), ids(got), "the claim's limit still holds")
	f.requireCounts(a.ID, bulkA2.ID, messaging.StatusCounts{Sending: 2}, messaging.StatusCounts{})
	f.requireCounts(a.ID, bulkA.ID, messaging.StatusCounts{Pending: 2, Sending: 4}, messaging.StatusCounts{})
	f.requireReconciled()
}

// testClaimDirectFirst: the messages of a direct send (a hidden campaign,
// of mode Bulk so that it completes) are claimed with the transactional
// ones, before older messages of visible bulk campaigns, with quotas or
// without.
func testClaimDirectFirst(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	_, bulkMsgs := f.bulk(a.ID, messaging.ChannelSMS, 4, at(1), messaging.CampaignInProgress)
	direct := f.newCampaign(b.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 2, at(5))
	direct.Hidden = true
	direct = f.createCampaign(direct)
	directMsgs := f.newMessages(direct, 2, at(5))
	require.NoError(t, f.s.InsertMessages(f.ctx, directMsgs))
	f.transition(direct, messaging.CampaignQueuing, messaging.CampaignInProgress, at(5))

	got := f.claim(messaging.ChannelSMS, at(10), at(70), 1)
	require.Equal(t, idsOf(directMsgs[:1]), ids(got), "the direct send's message before the older bulk ones")
	got, err := f.s.ClaimDue(f.ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: at(10), LeaseUntil: at(70), Limit: 2,
		Quotas: map[messaging.ID]int{a.ID: 5}})
	require.NoError(t, err)
	require.ElementsMatch(t, idsOf([]*messaging.Message{directMsgs[1], bulkMsgs[0]}), ids(got),
		"with quotas too: the direct one first, then the oldest bulk one")
	f.requireReconciled()
}

// testHaltedCampaigns: of the campaigns asked about, the paused ones and
// the cancelled ones are halted (true when cancelled); those in progress,
// completed or unknown are not.
func testHaltedCampaigns(f *fixture) {
	t := f.t
	a := f.company("A")
	running, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(1), messaging.CampaignInProgress)
	paused, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(1), messaging.CampaignInProgress)
	f.transition(paused, messaging.CampaignInProgress, messaging.CampaignPaused, at(2))
	cancelled, _ := f.bulk(a.ID, messaging.ChannelSMS, 1, at(1), messaging.CampaignInProgress)
	require.NoError(t, f.s.CancelCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: cancelled.ID,
		From: []messaging.CampaignStatus{messaging.CampaignInProgress}, To: messaging.CampaignCompleted, At: at(3)}))
	done, _ := f.bulk(a.ID, messaging.ChannelSMS, 0, at(1), messaging.CampaignInProgress)
	f.transition(done, messaging.CampaignInProgress, messaging.CampaignCompleted, at(4))

	got, err := f.s.HaltedCampaigns(f.ctx, []messaging.ID{running.ID, paused.ID, cancelled.ID, done.ID, f.id()})
	require.NoError(t, err)
	require.Equal(t, map[messaging.ID]bool{paused.ID: false, cancelled.ID: true}, got)
	got, err = f.s.HaltedCampaigns(f.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

// testClaimCampaignQuotas: a claim takes no more of a campaign than its
// quota (none at 0), beside the campaigns not listed and together with the
// companies' quotas.
func testClaimCampaignQuotas(f *fixture) {
	t := f.t
	a := f.company("A")
	one, oneMsgs := f.bulk(a.ID, messaging.ChannelSMS, 5, at(1), messaging.CampaignInProgress)
	two, twoMsgs := f.bulk(a.ID, messaging.ChannelSMS, 3, at(2), messaging.CampaignInProgress)
	claim := func(limit int, quotas, campaigns map[messaging.ID]int) []messaging.Message {
		t.Helper()
		ms, err := f.s.ClaimDue(f.ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: at(10), LeaseUntil: at(70), Limit: limit,
			Quotas: quotas, CampaignQuotas: campaigns})
		require.NoError(t, err)
		return ms
	}
	require.Equal(t, idsOf(twoMsgs[:2]), ids(claim(10, nil, map[messaging.ID]int{one.ID: 0, two.ID: 2})),
		"none of the first campaign, two of the second")
	require.Equal(t, idsOf(append(oneMsgs[:1:1], twoMsgs[2])), ids(claim(10, nil, map[messaging.ID]int{one.ID: 1})),
		"one of the first, the rest of the second (not listed)")
	require.Equal(t, idsOf(oneMsgs[1:3]), ids(claim(10, map[messaging.ID]int{a.ID: 2}, map[messaging.ID]int{one.ID: 3})),
		"the company's quota holds too")
	f.requireCounts(a.ID, one.ID, messaging.StatusCounts{Pending: 2, Sending: 3}, messaging.StatusCounts{})
	f.requireCounts(a.ID, two.ID, messaging.StatusCounts{Sending: 3}, messaging.StatusCounts{})
	f.requireReconciled()
}
