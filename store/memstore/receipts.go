package memstore

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// receiptState holds what the delivery store keeps beside messages: SMS
// parts by provider id, receipts that came before their part was recorded,
// and chat sequence numbers. The zero value is ready to use.
type receiptState struct {
	parts   map[string]*smsPart       // by provider id
	partsOf map[messaging.ID][]string // a message's part ids, in part order
	seqs    map[messaging.ID]int64
	lastSeq int64
}

// smsPart is a part of an SMS recorded Sent, or a receipt kept until its
// part is recorded (message zero).
type smsPart struct {
	message messaging.ID
	count   int
	receipt *delivery.PartReceipt
	created time.Time
}

func (r *receiptState) init() {
	if r.parts == nil {
		r.parts = map[string]*smsPart{}
		r.partsOf = map[messaging.ID][]string{}
		r.seqs = map[messaging.ID]int64{}
	}
}

// recordParts records the parts of message id, sent at, and applies the
// receipts kept for them. A part id recorded before for another message
// (an SMSC that reuses ids) now names this one.
func (s *Store) recordParts(id messaging.ID, partIDs []string, at time.Time) {
	r := &s.receipts
	r.init()
	var early []*smsPart
	for _, pid := range partIDs {
		old := r.parts[pid]
		p := &smsPart{message: id, count: len(partIDs), created: at}
		if old != nil && old.message.IsZero() {
			p.receipt = old.receipt
			early = append(early, p)
		}
		r.parts[pid] = p
	}
	r.partsOf[id] = append([]string(nil), partIDs...)
	for _, p := range early {
		s.applyPart(p, at) // recorded with the send it waited for
	}
}

// applyPart applies the receipt just recorded on part p to its message, and
// reports whether it decided the message's status.
//
// It reports whether the receipts decided the message's status, and the
// status they moved it to ("" when it could not move).
func (s *Store) applyPart(p *smsPart, now time.Time) (bool, messaging.MessageStatus) {
	var recorded []delivery.PartReceipt
	for _, pid := range s.receipts.partsOf[p.message] {
		if q := s.receipts.parts[pid]; q != nil && q != p && q.message == p.message && q.receipt != nil {
			recorded = append(recorded, *q.receipt)
		}
	}
	u, ok := delivery.PartsUpdate(p.message, p.count, recorded, *p.receipt)
	if ok && s.applyUpdate(u, now) {
		return true, u.Status
	}
	return ok, ""
}

// ApplyReceipts implements delivery.Store.
func (s *Store) ApplyReceipts(ctx context.Context, receipts []delivery.Receipt, now time.Time) ([]delivery.ReceiptOutcome, error) {
	if err := s.lock(ctx, "apply receipts"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out, _ := s.applyReceipts(receipts, now)
	return out, nil
}

// ApplyBatch implements delivery.Store.
func (s *Store) ApplyBatch(ctx context.Context, updates []delivery.StatusUpdate, receipts []delivery.Receipt, now time.Time) (delivery.BatchResult, error) {
	if err := s.lock(ctx, "apply status updates and receipts"); err != nil {
		return delivery.BatchResult{}, err
	}
	defer s.mu.Unlock()
	res := delivery.BatchResult{Applied: make([]bool, len(updates)), Then: make([]messaging.MessageStatus, len(updates))}
	for i, u := range updates {
		res.Applied[i] = s.applyUpdate(u, u.At)
		// Only the receipts kept for the parts it recorded move the
		// message on within applyUpdate.
		m := s.messages[u.MessageID]
		if !res.Applied[i] {
			continue
		}
		if m.Status != u.Status {
			res.Then[i] = m.Status
		}
		if u.Status == messaging.StatusDelivered || res.Then[i] == messaging.StatusDelivered {
			if res.DeliveredAfter == nil {
				res.DeliveredAfter = make([]time.Duration, len(updates))
			}
			res.DeliveredAfter[i] = deliveredAfter(m)
		}
	}
	res.Outcomes, res.Moved = s.applyReceipts(receipts, now)
	for i, st := range res.Moved {
		if st != messaging.StatusDelivered {
			continue
		}
		if res.MovedAfter == nil {
			res.MovedAfter = make([]time.Duration, len(receipts))
		}
		if p := s.receipts.parts[receipts[i].ProviderID]; p != nil {
			if m := s.messages[p.message]; m != nil {
				res.MovedAfter[i] = deliveredAfter(m)
			}
		}
	}
	return res, nil
}

// deliveredAfter returns how long after its Sent m was delivered
// (delivery.MessageState.DeliveredAfter).
func deliveredAfter(m *messaging.Message) time.Duration {
	st := delivery.MessageState{SentAt: m.SentAt, DeliveredAt: m.DeliveredAt}
	return st.DeliveredAfter()
}

// applyReceipts applies receipts under the lock, and returns their
// outcomes and the statuses they moved their messages to.
func (s *Store) applyReceipts(receipts []delivery.Receipt, now time.Time) ([]delivery.ReceiptOutcome, []messaging.MessageStatus) {
	r := &s.receipts
	r.init()
	out := make([]delivery.ReceiptOutcome, len(receipts))
	moved := make([]messaging.MessageStatus, len(receipts))
	for i, rc := range receipts {
		if st, _ := delivery.ReceiptStatus(rc.State); st == "" {
			out[i] = delivery.ReceiptIgnored
			continue
		}
		pr := &delivery.PartReceipt{State: rc.State, Err: rc.Err, At: rc.At}
		p := r.parts[rc.ProviderID]
		switch {
		case p == nil:
			r.parts[rc.ProviderID] = &smsPart{receipt: pr, created: now}
			out[i] = delivery.ReceiptQueued
		case p.receipt != nil:
			out[i] = delivery.ReceiptDuplicate
		default:
			p.receipt = pr
			out[i] = delivery.ReceiptPartial
			if decided, st := s.applyPart(p, now); decided {
				out[i], moved[i] = delivery.ReceiptApplied, st
			}
		}
	}
	return out, moved
}

// ChatSeqs implements delivery.Store. The counter starts at the time of
// the first assignment in microseconds since the epoch, so that a new
// store does not hand out numbers a provider saw from an earlier one.
func (s *Store) ChatSeqs(ctx context.Context, ids []messaging.ID) ([]int64, error) {
	if err := s.lock(ctx, "assign chat sequence numbers"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r := &s.receipts
	r.init()
	if r.lastSeq == 0 {
		r.lastSeq = time.Now().UnixMicro()
	}
	out := make([]int64, len(ids))
	for i, id := range ids {
		if s.messages[id] == nil {
			continue
		}
		seq, ok := r.seqs[id]
		if !ok {
			r.lastSeq++
			seq = r.lastSeq
			r.seqs[id] = seq
		}
		out[i] = seq
	}
	return out, nil
}

// PurgeReceipts implements delivery.Store.
func (s *Store) PurgeReceipts(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.lock(ctx, "purge receipts"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	r := &s.receipts
	type old struct {
		pid     string
		created time.Time
	}
	var olds []old
	for pid, p := range r.parts {
		if p.created.Before(before) {
			olds = append(olds, old{pid, p.created})
		}
	}
	slices.SortFunc(olds, func(a, b old) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.pid, b.pid))
	})
	n := min(max(limit, 0), len(olds))
	for _, o := range olds[:n] {
		delete(r.parts, o.pid)
	}
	for id, pids := range r.partsOf {
		left := false
		for _, pid := range pids {
			if p := r.parts[pid]; p != nil && p.message == id {
				left = true
				break
			}
		}
		if !left {
			delete(r.partsOf, id)
		}
	}
	return n, nil
}

// ExpireReceipts implements delivery.Store: the parts recorded from the
// last call's sentBefore up to this one's, still without a receipt, make
// their messages that are Sent unconfirmed.
func (s *Store) ExpireReceipts(ctx context.Context, sentBefore, now time.Time, details string) (int, error) {
	if err := s.lock(ctx, "expire receipts"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if !sentBefore.After(s.receiptSweep) {
		return 0, nil
	}
	from := s.receiptSweep
	s.receiptSweep = sentBefore
	n := 0
	for _, p := range s.receipts.parts {
		if p.message.IsZero() || p.receipt != nil || p.created.Before(from) || !p.created.Before(sentBefore) {
			continue
		}
		m := s.messages[p.message]
		if _, done := s.unconfirmed[m.ID]; done || m.Status != messaging.StatusSent {
			continue
		}
		s.unconfirmed[m.ID] = struct{}{}
		countsOf(s.campaigns[m.CampaignID], m).Unconfirmed++
		m.Details, m.UpdatedAt = details, now
		n++
	}
	return n, nil
}
