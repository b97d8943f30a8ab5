package storetest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// receipts applies receipts at now and returns their outcomes.
func (f *fixture) receipts(now int, rs ...delivery.Receipt) []delivery.ReceiptOutcome {
	f.t.Helper()
	out, err := f.s.ApplyReceipts(f.ctx, rs, at(now))
	require.NoError(f.t, err)
	require.Len(f.t, out, len(rs))
	return out
}

// sent is the update recording m Sent at sec with these part ids.
func sent(m *messaging.Message, sec int, parts ...string) delivery.StatusUpdate {
	return delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent, At: at(sec), ProviderMessageID: parts[0], PartIDs: parts}
}

// rcpt is a receipt of part pid.
func rcpt(pid, state, errCode string, sec int) delivery.Receipt {
	return delivery.Receipt{ProviderID: pid, State: state, Err: errCode, At: at(sec)}
}

// sentBulk creates an InProgress SMS campaign of n messages, all claimed.
func (f *fixture) sentBulk(companyID messaging.ID, n int) (messaging.Campaign, []*messaging.Message) {
	f.t.Helper()
	c, msgs := f.bulk(companyID, messaging.ChannelSMS, n, at(0), messaging.CampaignInProgress)
	require.Len(f.t, f.claim(messaging.ChannelSMS, at(1), at(600), n), n)
	return c, msgs
}

// testReceiptsAfterSent: receipts of single-part messages recorded Sent
// end them Delivered or Failed with the API's details and the receipt's
// error code, once; other states change nothing.
func testReceiptsAfterSent(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.sentBulk(a.ID, 6)
	var ups []delivery.StatusUpdate
	for i, m := range msgs {
		ups = append(ups, sent(m, 2, fmt.Sprintf("P%d", i)))
	}
	require.Equal(t, []bool{true, true, true, true, true, true}, f.apply(ups...))

	out := f.receipts(10,
		rcpt("P0", delivery.StateDelivered, "000", 5),
		rcpt("P1", delivery.StateUndeliverable, "001", 6),
		rcpt("P2", delivery.StateExpired, "002", 7),
		rcpt("P3", delivery.StateRejected, "003", 8),
		rcpt("P4", delivery.StateEnroute, "000", 9),
		rcpt("P0", delivery.StateDelivered, "000", 5), // repeated in the same batch
	)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptApplied, delivery.ReceiptApplied, delivery.ReceiptApplied,
		delivery.ReceiptApplied, delivery.ReceiptIgnored, delivery.ReceiptDuplicate}, out)

	get := func(i int) messaging.Message { return f.getMessage(a.ID, msgs[i].ID) }
	m0 := get(0)
	require.Equal(t, messaging.StatusDelivered, m0.Status)
	require.Equal(t, "P0", m0.ProviderMessageID)
	require.NotNil(t, m0.DeliveredAt)
	requireTime(t, "DeliveredAt", at(5), *m0.DeliveredAt, nil)
	requireTime(t, "SentAt", at(2), *m0.SentAt, nil)
	requireTime(t, "UpdatedAt", at(10), m0.UpdatedAt, nil) // when the receipt was applied
	for i, want := range []struct{ details, code string }{{"UNDELIVERED", "001"}, {"EXPIRED", "002"}, {"REJECTED", "003"}} {
		m := get(i + 1)
		require.Equal(t, messaging.StatusFailed, m.Status, "message %d", i+1)
		require.Equal(t, want.details, m.Details)
		require.Equal(t, want.code, m.SMSErrorCode)
		require.Nil(t, m.DeliveredAt)
	}
	require.Equal(t, messaging.StatusSent, get(4).Status, "ENROUTE changes nothing")
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sent: 2, Delivered: 1, Failed: 3}, messaging.StatusCounts{})

	// Repeated and contradicting receipts change nothing.
	out = f.receipts(11,
		rcpt("P0", delivery.StateUndeliverable, "009", 12),
		rcpt("P1", delivery.StateDelivered, "000", 12),
		rcpt("P1", delivery.StateUndeliverable, "001", 6),
		rcpt("P4", delivery.StateDelivered, "000", 13),
	)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptDuplicate, delivery.ReceiptDuplicate, delivery.ReceiptDuplicate, delivery.ReceiptApplied}, out)
	require.Equal(t, m0, get(0))
	require.Equal(t, "UNDELIVERED", get(1).Details)
	require.Equal(t, messaging.StatusDelivered, get(4).Status)
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sent: 1, Delivered: 2, Failed: 3}, messaging.StatusCounts{})

	// A done date before the send (an SMSC's has minute precision): the
	// delivery is recorded at the send, not before it.
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptApplied}, f.receipts(14, rcpt("P5", delivery.StateDelivered, "000", 1)))
	m5 := get(5)
	require.Equal(t, messaging.StatusDelivered, m5.Status)
	requireTime(t, "DeliveredAt", at(2), *m5.DeliveredAt, nil)
	requireTime(t, "UpdatedAt", at(14), m5.UpdatedAt, nil)
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Delivered: 3, Failed: 3}, messaging.StatusCounts{})
	require.Equal(t, 0, f.pending(a.ID))
	f.requireReconciled()
}

// testReceiptsBeforeSent: a receipt of a part not recorded yet is kept
// and applied when the part is; one of a Sent that was not applied stays
// kept.
func testReceiptsBeforeSent(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.sentBulk(a.ID, 3)

	out := f.receipts(3,
		rcpt("E0", delivery.StateDelivered, "000", 3),
		rcpt("E1", delivery.StateRejected, "003", 4),
		rcpt("E0", delivery.StateDelivered, "000", 3),
		rcpt("E2", delivery.StateAccepted, "000", 3),
	)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued, delivery.ReceiptQueued, delivery.ReceiptDuplicate, delivery.ReceiptIgnored}, out)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptDuplicate}, f.receipts(4, rcpt("E1", delivery.StateRejected, "003", 4)))
	for _, m := range msgs {
		require.Equal(t, messaging.StatusSending, f.getMessage(a.ID, m.ID).Status, "a kept receipt touches no message")
	}

	require.Equal(t, []bool{true, true, true}, f.apply(sent(msgs[0], 5, "E0"), sent(msgs[1], 5, "E1"), sent(msgs[2], 5, "E2")))
	m0 := f.getMessage(a.ID, msgs[0].ID)
	require.Equal(t, messaging.StatusDelivered, m0.Status)
	requireTime(t, "SentAt", at(5), *m0.SentAt, nil)
	// The receipt's time is before the send was recorded: a delivery is
	// never earlier than its send, and updatedAt is when it was recorded.
	requireTime(t, "DeliveredAt", at(5), *m0.DeliveredAt, nil)
	requireTime(t, "UpdatedAt", at(5), m0.UpdatedAt, nil)
	m1 := f.getMessage(a.ID, msgs[1].ID)
	require.Equal(t, messaging.StatusFailed, m1.Status)
	require.Equal(t, "REJECTED", m1.Details)
	require.Equal(t, "003", m1.SMSErrorCode)
	require.Equal(t, messaging.StatusSent, f.getMessage(a.ID, msgs[2].ID).Status, "an ignored receipt was not kept")
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sent: 1, Delivered: 1, Failed: 1}, messaging.StatusCounts{})

	// The receipts were used up with their parts: repeats are duplicates.
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptDuplicate, delivery.ReceiptApplied},
		f.receipts(6, rcpt("E0", delivery.StateDelivered, "000", 3), rcpt("E2", delivery.StateDelivered, "000", 6)))

	// A Sent that is not applied records no parts.
	_, more := f.sentBulk(a.ID, 1)
	require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: more[0].ID, Status: messaging.StatusFailed, At: at(7), Details: "gave up"}))
	require.Equal(t, []bool{false}, f.apply(sent(more[0], 8, "X0")))
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued}, f.receipts(9, rcpt("X0", delivery.StateDelivered, "000", 9)))
	require.Equal(t, "gave up", f.getMessage(a.ID, more[0].ID).Details)
	f.requireReconciled()
}

// testReceiptsLongMessages: a long message is Delivered once every part
// is, at the latest receipt's time, and Failed at its first failed part,
// whatever the order of receipts and of the recording of its parts.
func testReceiptsLongMessages(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.sentBulk(a.ID, 5)
	require.Equal(t, []bool{true, true, true}, f.apply(
		sent(msgs[0], 2, "A1", "A2", "A3"),
		sent(msgs[1], 2, "B1", "B2"),
		sent(msgs[2], 2, "C1", "C2"),
	))
	status := func(i int) messaging.MessageStatus { return f.getMessage(a.ID, msgs[i].ID).Status }

	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptPartial, delivery.ReceiptPartial},
		f.receipts(10, rcpt("A2", delivery.StateDelivered, "000", 9), rcpt("A1", delivery.StateDelivered, "000", 7)))
	require.Equal(t, messaging.StatusSent, status(0))
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptDuplicate}, f.receipts(11, rcpt("A2", delivery.StateDelivered, "000", 9)))
	require.Equal(t, messaging.StatusSent, status(0), "a repeated part does not count twice")
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptApplied}, f.receipts(12, rcpt("A3", delivery.StateDelivered, "000", 8)))
	m0 := f.getMessage(a.ID, msgs[0].ID)
	require.Equal(t, messaging.StatusDelivered, m0.Status)
	requireTime(t, "DeliveredAt", at(9), *m0.DeliveredAt, nil)

	// Both parts in one batch; a failed part fails the message.
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptPartial, delivery.ReceiptApplied},
		f.receipts(13, rcpt("B2", delivery.StateDelivered, "000", 13), rcpt("B1", delivery.StateDelivered, "000", 12)))
	require.Equal(t, messaging.StatusDelivered, status(1))
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptPartial, delivery.ReceiptApplied, delivery.ReceiptDuplicate},
		f.receipts(14, rcpt("C1", delivery.StateDelivered, "000", 14), rcpt("C2", delivery.StateExpired, "002", 14),
			rcpt("C2", delivery.StateDelivered, "000", 15)))
	m2 := f.getMessage(a.ID, msgs[2].ID)
	require.Equal(t, messaging.StatusFailed, m2.Status)
	require.Equal(t, "EXPIRED", m2.Details)
	require.Equal(t, "002", m2.SMSErrorCode)

	// Parts whose receipts came before and after they were recorded.
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued, delivery.ReceiptQueued},
		f.receipts(15, rcpt("D2", delivery.StateDelivered, "000", 15), rcpt("E1", delivery.StateDelivered, "000", 15)))
	require.Equal(t, []bool{true, true}, f.apply(sent(msgs[3], 16, "D1", "D2", "D3"), sent(msgs[4], 16, "E1", "E2")))
	require.Equal(t, messaging.StatusSent, status(3))
	require.Equal(t, messaging.StatusSent, status(4))
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptPartial, delivery.ReceiptApplied, delivery.ReceiptApplied},
		f.receipts(17, rcpt("D1", delivery.StateDelivered, "000", 17), rcpt("D3", delivery.StateDelivered, "000", 18),
			rcpt("E2", delivery.StateDelivered, "000", 17)))
	require.Equal(t, messaging.StatusDelivered, status(3))
	require.Equal(t, messaging.StatusDelivered, status(4))
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Delivered: 4, Failed: 1}, messaging.StatusCounts{})

	// Every part's receipt before the message was recorded Sent.
	_, late := f.sentBulk(a.ID, 1)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued, delivery.ReceiptQueued},
		f.receipts(20, rcpt("F1", delivery.StateDelivered, "000", 19), rcpt("F2", delivery.StateDelivered, "000", 20)))
	require.Equal(t, []bool{true}, f.apply(sent(late[0], 21, "F1", "F2")))
	ml := f.getMessage(a.ID, late[0].ID)
	require.Equal(t, messaging.StatusDelivered, ml.Status)
	requireTime(t, "DeliveredAt", at(21), *ml.DeliveredAt, nil) // not before the send
	f.requireReconciled()
}

// testReceiptsPartIDReused: a part id the SMSC gives again names the new
// part; receipts then go to the new message.
func testReceiptsPartIDReused(f *fixture) {
	t := f.t
	a := f.company("A")
	_, msgs := f.sentBulk(a.ID, 2)
	require.Equal(t, []bool{true}, f.apply(sent(msgs[0], 2, "R1")))
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptApplied}, f.receipts(3, rcpt("R1", delivery.StateDelivered, "000", 3)))
	require.Equal(t, []bool{true}, f.apply(sent(msgs[1], 4, "R1")))
	require.Equal(t, messaging.StatusSent, f.getMessage(a.ID, msgs[1].ID).Status, "the old part's receipt is not the new one's")
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptApplied}, f.receipts(5, rcpt("R1", delivery.StateUndeliverable, "001", 5)))
	require.Equal(t, messaging.StatusFailed, f.getMessage(a.ID, msgs[1].ID).Status)
	require.Equal(t, messaging.StatusDelivered, f.getMessage(a.ID, msgs[0].ID).Status)
}

// testReceiptsConcurrent: receipts of the parts of long messages, applied
// from many goroutines while other goroutines record the parts, are never
// lost: every message ends Delivered, counters exact.
func testReceiptsConcurrent(f *fixture) {
	t := f.t
	a := f.company("A")
	const n, parts, workers = 60, 3, 6
	c, msgs := f.sentBulk(a.ID, n)
	pid := func(i, p int) string { return fmt.Sprintf("M%03d-%d", i, p) }
	var rs []delivery.Receipt
	for i := range n {
		for p := range parts {
			rs = append(rs, rcpt(pid(i, p), delivery.StateDelivered, "000", 10))
		}
	}
	// Each receipt goes out twice, in a shuffled order.
	rs = append(rs, rs...)
	for i := range rs {
		j := (i*7919 + 13) % len(rs)
		rs[i], rs[j] = rs[j], rs[i]
	}
	const chunk = 4
	var wg sync.WaitGroup
	errs := make([]error, 2*workers)
	for w := range workers {
		wg.Go(func() { // receipts, in chunks: chunk k goes to worker k mod workers
			for k := w * chunk; k < len(rs); k += workers * chunk {
				if _, err := f.s.ApplyReceipts(f.ctx, rs[k:min(k+chunk, len(rs))], at(10)); err != nil {
					errs[w] = err
					return
				}
			}
		})
		wg.Go(func() { // the recording of the parts
			for i := w; i < n; i += workers {
				ids := make([]string, parts)
				for p := range ids {
					ids[p] = pid(i, p)
				}
				if _, err := f.s.ApplyUpdates(f.ctx, []delivery.StatusUpdate{sent(msgs[i], 5, ids...)}); err != nil {
					errs[workers+w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	// Apply every receipt once more, in one batch: nothing changes after.
	_, err := f.s.ApplyReceipts(f.ctx, rs, at(11))
	require.NoError(t, err)
	for i, m := range msgs {
		require.Equal(t, messaging.StatusDelivered, f.getMessage(a.ID, m.ID).Status, "message %d", i)
	}
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Delivered: n}, messaging.StatusCounts{})
	f.requireReconciled()
}

// testChatSeqs: every message gets its own number, the same every time.
func testChatSeqs(f *fixture) {
	t := f.t
	a := f.company("A")
	_, msgs := f.bulk(a.ID, messaging.ChannelChat, 40, at(0), messaging.CampaignInProgress)
	ids := idsOf(msgs)
	unknown := f.id()

	first, err := f.s.ChatSeqs(f.ctx, append(slices.Clone(ids[:10]), unknown))
	require.NoError(t, err)
	require.Len(t, first, 11)
	require.Zero(t, first[10], "an unknown message has no number")

	const workers = 4
	got := make([][]int64, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			// Every worker asks for every message, in its own order.
			order := slices.Clone(ids)
			if w%2 == 1 {
				slices.Reverse(order)
			}
			seqs, err := f.s.ChatSeqs(f.ctx, order)
			if w%2 == 1 {
				slices.Reverse(seqs)
			}
			got[w], errs[w] = seqs, err
		})
	}
	wg.Wait()
	for w := range workers {
		require.NoError(t, errs[w])
		require.Equal(t, got[0], got[w], "worker %d saw other numbers", w)
	}
	require.Equal(t, first[:10], got[0][:10], "numbers never change")
	seen := map[int64]bool{}
	for _, seq := range got[0] {
		require.Positive(t, seq)
		require.False(t, seen[seq], "number %d given twice", seq)
		seen[seq] = true
	}
	again, err := f.s.ChatSeqs(f.ctx, []messaging.ID{ids[5], ids[5]})
	require.NoError(t, err)
	require.Equal(t, []int64{got[0][5], got[0][5]}, again)
}

// testPurgeReceipts: parts and kept receipts older than the horizon are
// forgotten; a receipt of a forgotten part is kept again.
func testPurgeReceipts(f *fixture) {
	t := f.t
	a := f.company("A")
	_, msgs := f.sentBulk(a.ID, 2)
	require.Equal(t, []bool{true, true}, f.apply(sent(msgs[0], 10, "O1"), sent(msgs[1], 30, "N1")))
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued}, f.receipts(15, rcpt("K1", delivery.StateDelivered, "000", 15)))

	// In batches, oldest first: the part recorded at 10, then the receipt
	// kept at 15.
	n, err := f.s.PurgeReceipts(f.ctx, at(20), 1)
	require.NoError(t, err)
	require.Equal(t, 1, n, "one of two")
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued}, f.receipts(16, rcpt("O1", delivery.StateDelivered, "000", 16)),
		"the oldest, the part recorded at 10, went first")
	n, err = f.s.PurgeReceipts(f.ctx, at(20), 10)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the old kept receipt, and the receipt of O1 just kept")
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued, delivery.ReceiptApplied, delivery.ReceiptQueued},
		f.receipts(40, rcpt("O1", delivery.StateDelivered, "000", 40), rcpt("N1", delivery.StateDelivered, "000", 40),
			rcpt("K1", delivery.StateDelivered, "000", 15)))
	require.Equal(t, messaging.StatusSent, f.getMessage(a.ID, msgs[0].ID).Status)
	require.Equal(t, messaging.StatusDelivered, f.getMessage(a.ID, msgs[1].ID).Status)
	n, err = f.s.PurgeReceipts(f.ctx, at(20), 10)
	require.NoError(t, err)
	require.Zero(t, n)
}

// testApplyUpdatesText: details, error codes and provider ids keep every
// character: quotes, backslashes, control characters, non-ASCII text.
func testApplyUpdatesText(f *fixture) {
	t := f.t
	a := f.company("A")
	_, msgs := f.sentBulk(a.ID, 2)
	details := "Gave up: \"quoted\" \\ back\\slash\nnew line\ttab \x01 ünïcödé 你好 🙂 'single'"
	require.Equal(t, []bool{true, true}, f.apply(
		delivery.StatusUpdate{MessageID: msgs[0].ID, Status: messaging.StatusFailed, At: at(2), Details: details, SMSErrorCode: "0x\"0B\""},
		sent(msgs[1], 2, `id-"1"\x`, "ü-2"),
	))
	m0 := f.getMessage(a.ID, msgs[0].ID)
	require.Equal(t, details, m0.Details)
	require.Equal(t, "0x\"0B\"", m0.SMSErrorCode)
	require.Equal(t, `id-"1"\x`, f.getMessage(a.ID, msgs[1].ID).ProviderMessageID)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptPartial, delivery.ReceiptApplied},
		f.receipts(3, rcpt(`id-"1"\x`, delivery.StateDelivered, "000", 3), rcpt("ü-2", delivery.StateDelivered, "000", 3)))
	require.Equal(t, messaging.StatusDelivered, f.getMessage(a.ID, msgs[1].ID).Status)
}

// testApplyBatch: updates then receipts in one call; a receipt of a part
// recorded by an update of the same call applies at once. The result names
// every status a message moved to once: by its update, by the receipts
// kept for the parts an update recorded (Then), or by a receipt (Moved).
func testApplyBatch(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.sentBulk(a.ID, 6)
	require.Equal(t, []bool{true}, f.apply(sent(msgs[3], 1, "Z1")))
	kept, err := f.s.ApplyReceipts(f.ctx, []delivery.Receipt{rcpt("K4", delivery.StateDelivered, "000", 1)}, at(1))
	require.NoError(t, err)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued}, kept)
	br, err := f.s.ApplyBatch(f.ctx,
		[]delivery.StatusUpdate{sent(msgs[0], 2, "B0"), sent(msgs[1], 2, "B1a", "B1b"), sent(msgs[0], 3, "again"),
			{MessageID: msgs[2].ID, Status: messaging.StatusPending, At: at(2), DueAt: at(9)},
			sent(msgs[4], 2, "K4"), sent(msgs[5], 2, "C5a", "C5b")},
		[]delivery.Receipt{rcpt("B0", delivery.StateDelivered, "000", 4), rcpt("B1b", delivery.StateDelivered, "000", 4),
			rcpt("B1a", delivery.StateUndeliverable, "001", 5), rcpt("Z1", delivery.StateExpired, "002", 5),
			rcpt("NONE", delivery.StateDelivered, "000", 5), rcpt("B0", delivery.StateDelivered, "000", 4),
			rcpt("C5a", delivery.StateUndeliverable, "001", 5)},
		at(6))
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, false, true, true, true}, br.Applied)
	require.Equal(t, []messaging.MessageStatus{"", "", "", "", messaging.StatusDelivered, ""}, br.Then,
		"the receipt kept for K4 delivers msgs[4] once its Sent is recorded")
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptApplied, delivery.ReceiptPartial, delivery.ReceiptApplied,
		delivery.ReceiptApplied, delivery.ReceiptQueued, delivery.ReceiptDuplicate, delivery.ReceiptApplied}, br.Outcomes)
	require.Equal(t, []messaging.MessageStatus{messaging.StatusDelivered, "", messaging.StatusFailed, messaging.StatusFailed, "", "",
		messaging.StatusFailed}, br.Moved)
	m0 := f.getMessage(a.ID, msgs[0].ID)
	require.Equal(t, messaging.StatusDelivered, m0.Status)
	requireTime(t, "SentAt", at(2), *m0.SentAt, nil)
	requireTime(t, "DeliveredAt", at(4), *m0.DeliveredAt, nil)
	m1 := f.getMessage(a.ID, msgs[1].ID)
	require.Equal(t, messaging.StatusFailed, m1.Status)
	require.Equal(t, "UNDELIVERED", m1.Details)
	require.Equal(t, "EXPIRED", f.getMessage(a.ID, msgs[3].ID).Details)
	require.Equal(t, messaging.StatusDelivered, f.getMessage(a.ID, msgs[4].ID).Status)
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 1, Delivered: 2, Failed: 3}, messaging.StatusCounts{})
	require.Equal(t, 1, f.pending(a.ID))

	// The second failed part of a failed message decides its status again
	// but moves nothing.
	br, err = f.s.ApplyBatch(f.ctx, nil, []delivery.Receipt{rcpt("C5b", delivery.StateUndeliverable, "001", 7)}, at(7))
	require.NoError(t, err)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptApplied}, br.Outcomes)
	require.Equal(t, []messaging.MessageStatus{""}, br.Moved)
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 1, Delivered: 2, Failed: 3}, messaging.StatusCounts{})

	br, err = f.s.ApplyBatch(f.ctx, nil, nil, at(8))
	require.NoError(t, err)
	require.Empty(t, br.Applied)
	require.Empty(t, br.Outcomes)
	f.requireReconciled()
}

// testApplyBatchDeliveredAfter: for each update and receipt that moved its
// message to Delivered, the result says how long after its Sent the
// message was delivered (its DeliveredAt minus its SentAt); 0 for the
// others, and for a delivery that came before any Sent was recorded.
func testApplyBatchDeliveredAfter(f *fixture) {
	t := f.t
	a := f.company("A")
	_, msgs := f.sentBulk(a.ID, 5)
	require.Equal(t, []bool{true, true}, f.apply(sent(msgs[0], 10, "L0"), sent(msgs[1], 10, "L1a", "L1b")))
	kept, err := f.s.ApplyReceipts(f.ctx, []delivery.Receipt{rcpt("K2", delivery.StateDelivered, "000", 25)}, at(25))
	require.NoError(t, err)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued}, kept)
	br, err := f.s.ApplyBatch(f.ctx,
		[]delivery.StatusUpdate{sent(msgs[2], 20, "K2"),
			{MessageID: msgs[3].ID, Status: messaging.StatusSent, At: at(10)},
			{MessageID: msgs[3].ID, Status: messaging.StatusDelivered, At: at(70)},
			{MessageID: msgs[4].ID, Status: messaging.StatusDelivered, At: at(30)}},
		[]delivery.Receipt{rcpt("L0", delivery.StateDelivered, "000", 100), rcpt("L1a", delivery.StateDelivered, "000", 40),
			rcpt("L1b", delivery.StateDelivered, "000", 55), rcpt("L0", delivery.StateDelivered, "000", 100)},
		at(200))
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true, true}, br.Applied)
	require.Equal(t, []messaging.MessageStatus{messaging.StatusDelivered, "", "", ""}, br.Then)
	require.Equal(t, []messaging.MessageStatus{messaging.StatusDelivered, "", messaging.StatusDelivered, ""}, br.Moved)
	orZeros := func(d []time.Duration, n int) []time.Duration {
		if d == nil {
			return make([]time.Duration, n)
		}
		return d
	}
	require.Equal(t, []time.Duration{5 * time.Second, 0, time.Minute, 0}, orZeros(br.DeliveredAfter, 4),
		"the receipt kept for K2, 5 s after its Sent; a Delivered update 60 s after its Sent; one before any Sent")
	require.Equal(t, []time.Duration{90 * time.Second, 0, 45 * time.Second, 0}, orZeros(br.MovedAfter, 4),
		"a one-part message; a long one with its last part; a duplicate")
	for i, want := range []time.Duration{90 * time.Second, 45 * time.Second, 5 * time.Second, time.Minute, 0} {
		m := f.getMessage(a.ID, msgs[i].ID)
		require.Equal(t, messaging.StatusDelivered, m.Status)
		require.Equal(t, want, m.DeliveredAt.Sub(*m.SentAt), "message %d", i)
	}

	// Nothing delivered: no duration.
	br, err = f.s.ApplyBatch(f.ctx, nil, []delivery.Receipt{rcpt("L0", delivery.StateDelivered, "000", 101)}, at(201))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{0}, orZeros(br.MovedAfter, 1))
	f.requireReconciled()
}

// testExpireReceipts: Sent SMS one of whose parts, recorded before the
// cut, has no receipt become unconfirmed (still Sent, details set, counted
// in Unconfirmed); each part is looked at once; a receipt that comes
// later still settles the message and it leaves the count.
func testExpireReceipts(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.sentBulk(a.ID, 4)
	require.Equal(t, []bool{true, true, true, true}, f.apply(
		sent(msgs[0], 2, "a0"), sent(msgs[1], 2, "b0"), sent(msgs[2], 3, "c0", "c1"), sent(msgs[3], 10, "d0")))
	f.receipts(4, rcpt("a0", delivery.StateDelivered, "000", 4), rcpt("c0", delivery.StateDelivered, "000", 4))

	n, err := f.s.ExpireReceipts(f.ctx, at(5), at(100), "NO_RECEIPT")
	require.NoError(t, err)
	require.Equal(t, 2, n, "b0 and c1 have no receipt; a0 has; d0 was sent after the cut")
	for _, m := range msgs[1:3] {
		got := f.getMessage(a.ID, m.ID)
		require.Equal(t, messaging.StatusSent, got.Status)
		require.Equal(t, "NO_RECEIPT", got.Details)
	}
	require.Empty(t, f.getMessage(a.ID, msgs[3].ID).Details)
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sent: 3, Delivered: 1, Unconfirmed: 2}, messaging.StatusCounts{})
	f.requireReconciled()

	n, err = f.s.ExpireReceipts(f.ctx, at(5), at(101), "NO_RECEIPT")
	require.NoError(t, err)
	require.Zero(t, n, "nothing new before the same cut")
	n, err = f.s.ExpireReceipts(f.ctx, at(20), at(102), "NO_RECEIPT")
	require.NoError(t, err)
	require.Equal(t, 1, n, "d0, recorded since the last cut")
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sent: 3, Delivered: 1, Unconfirmed: 3}, messaging.StatusCounts{})

	// Late receipts settle unconfirmed messages.
	f.receipts(200, rcpt("b0", delivery.StateDelivered, "000", 150), rcpt("c1", delivery.StateUndeliverable, "001", 160))
	require.Equal(t, messaging.StatusDelivered, f.getMessage(a.ID, msgs[1].ID).Status)
	require.Equal(t, messaging.StatusFailed, f.getMessage(a.ID, msgs[2].ID).Status)
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Sent: 1, Delivered: 2, Failed: 1, Unconfirmed: 1}, messaging.StatusCounts{})
	f.requireReconciled()
}
