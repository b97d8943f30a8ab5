package memstore

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// ClaimDue implements delivery.Store: transactional campaigns' messages
// first, then oldest due first (DueAt, then id). The messages of a company
// past its quota are looked at and left, so a large backlog of a capped
// company makes claims slower; this store is for tests and small runs.
func (s *Store) ClaimDue(ctx context.Context, c delivery.Claim) ([]messaging.Message, error) {
	if err := s.lock(ctx, "claim due messages"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	channel, now, limit := c.Channel, c.Now, c.Limit
	h := s.due[channel]
	if h == nil || limit <= 0 {
		return nil, nil
	}
	var out []messaging.Message
	var taken, takenOf map[messaging.ID]int // by company, by campaign
	var held []dueEntry                     // entries of companies past their quota, pushed back
	defer func() {
		for _, e := range held {
			heap.Push(h, e)
		}
	}()
	for len(out) < limit && h.Len() > 0 {
		if (*h)[0].due.After(now) {
			// Not due; a bulk entry due now may still lie behind a
			// transactional one that is not.
			if (*h)[0].bulk {
				break
			}
			held = append(held, heap.Pop(h).(dueEntry))
			continue
		}
		e := heap.Pop(h).(dueEntry)
		m, cr, ok := s.claimable(e)
		if !ok {
			continue
		}
		cq, campaignCapped := c.CampaignQuotas[m.CampaignID]
		if campaignCapped && takenOf[m.CampaignID] >= cq {
			held = append(held, e)
			continue
		}
		if q, capped := c.Quotas[m.CompanyID]; capped {
			if taken[m.CompanyID] >= q {
				held = append(held, e)
				continue
			}
			if taken == nil {
				taken = map[messaging.ID]int{}
			}
			taken[m.CompanyID]++
		}
		if campaignCapped {
			if takenOf == nil {
				takenOf = map[messaging.ID]int{}
			}
			takenOf[m.CampaignID]++
		}
		count(cr, m, m.Status, messaging.StatusSending)
		m.Status = messaging.StatusSending
		m.Attempts++
		m.LeaseUntil = c.LeaseUntil
		m.UpdatedAt = now
		s.sending[m.ID] = c.Owner
		out = append(out, cloneMessage(m))
	}
	// Picked transactional first, returned oldest first.
	slices.SortFunc(out, func(a, b messaging.Message) int {
		return cmp.Or(a.DueAt.Compare(b.DueAt), bytes.Compare(a.ID[:], b.ID[:]))
	})
	return out, nil
}

// ApplyUpdates implements delivery.Store. Updates apply in order; an
// update of an unknown message is not applied.
func (s *Store) ApplyUpdates(ctx context.Context, updates []delivery.StatusUpdate) ([]bool, error) {
	if err := s.lock(ctx, "apply status updates"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	applied := make([]bool, len(updates))
	for i, u := range updates {
		applied[i] = s.applyUpdate(u, u.At)
	}
	return applied, nil
}

// applyUpdate applies u at now (see delivery.StatusUpdate.Times) when its
// move is allowed, and reports whether it did. An applied update to Sent with PartIDs records the SMS parts and
// applies the receipts that came before them. A message of a cancelled
// campaign never goes back to Pending: an allowed update to Pending fails
// it CANCELLED instead, as the cancel failed the campaign's other waiting
// messages, and is reported not applied.
func (s *Store) applyUpdate(u delivery.StatusUpdate, now time.Time) bool {
	m := s.messages[u.MessageID]
	if m == nil {
		return false
	}
	st := delivery.MessageState{
		Status: m.Status, Channel: m.Channel, CompanyID: m.CompanyID, UpdatedAt: m.UpdatedAt,
		SentAt: m.SentAt, DeliveredAt: m.DeliveredAt, SeenAt: m.SeenAt,
		ProviderMessageID: m.ProviderMessageID, Details: m.Details, SMSErrorCode: m.SMSErrorCode, Route: m.Route,
	}
	if !u.Apply(&st, now) {
		return false
	}
	cr := s.campaigns[m.CampaignID]
	if u.Status == messaging.StatusPending && cr.c.CancelledAt != nil {
		s.applyUpdate(delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusFailed, At: u.At, Details: campaign.DetailsCancelled}, now)
		return false
	}
	old := m.Status
	count(cr, m, old, u.Status)
	if _, ok := s.unconfirmed[m.ID]; ok && old == messaging.StatusSent {
		delete(s.unconfirmed, m.ID)
		countsOf(cr, m).Unconfirmed--
	}
	if old.Unsent() && !u.Status.Unsent() {
		s.companies[m.CompanyID].release(1, time.Now())
	}
	m.Status, m.UpdatedAt = st.Status, st.UpdatedAt
	m.SentAt, m.DeliveredAt, m.SeenAt = cloneTime(st.SentAt), cloneTime(st.DeliveredAt), cloneTime(st.SeenAt)
	m.ProviderMessageID, m.Details, m.SMSErrorCode, m.Route = st.ProviderMessageID, st.Details, st.SMSErrorCode, st.Route
	switch {
	case u.Status == messaging.StatusSending:
		s.sending[m.ID] = ""
	case old == messaging.StatusSending:
		delete(s.sending, m.ID)
	}
	if st.DueAt != nil {
		m.DueAt = *st.DueAt
		if sendable(cr, m) {
			s.pushDue(m)
		}
	}
	if m.Status != old && m.Status != messaging.StatusSending {
		s.emitMessageStatus(m, now)
	}
	if u.Status == messaging.StatusSent && len(u.PartIDs) > 0 {
		s.recordParts(m.ID, u.PartIDs, u.At)
	}
	return true
}

// Heartbeat implements delivery.Store.
func (s *Store) Heartbeat(ctx context.Context, owner string, at time.Time) error {
	if err := s.lock(ctx, "write the claim heartbeat"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.claimers[owner] = at
	return nil
}

// ForgetClaimer implements delivery.Store.
func (s *Store) ForgetClaimer(ctx context.Context, owner string) error {
	if err := s.lock(ctx, "remove the claim heartbeat"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	delete(s.claimers, owner)
	return nil
}

// RecoverClaims implements delivery.Store (messages keep their due time;
// those of a cancelled campaign fail CANCELLED):
// leases ending strictly before
// r.Now have ended, and so have the claims of owners whose heartbeat is
// older than r.StaleBefore or missing, those of r.Owner, and those of
// r.Unknown (same owner, same lease).
func (s *Store) RecoverClaims(ctx context.Context, r delivery.Recovery) (int, error) {
	if err := s.lock(ctx, "recover ended claims"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	now := r.Now
	ended := func(m *messaging.Message, owner string) bool {
		switch {
		case m.LeaseUntil.Before(now):
			return true
		case slices.ContainsFunc(r.Unknown, func(c delivery.ClaimRef) bool {
			return c.Owner == owner && c.LeaseUntil.Equal(m.LeaseUntil)
		}):
			return true
		case owner == "":
			return false
		case owner == r.Owner:
			return true
		case r.StaleBefore.IsZero() || owner == r.Self:
			return false
		}
		beat, ok := s.claimers[owner]
		return !ok || beat.Before(r.StaleBefore)
	}
	var expired []*messaging.Message
	for id, owner := range s.sending {
		if m := s.messages[id]; ended(m, owner) {
			expired = append(expired, m)
		}
	}
	// Pushed in id order so that equal due times keep a stable order.
	slices.SortFunc(expired, func(a, b *messaging.Message) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	for _, m := range expired {
		cr := s.campaigns[m.CampaignID]
		if cr.c.CancelledAt != nil {
			// Its campaign was cancelled: it fails as the campaign's
			// other waiting messages did.
			s.applyUpdate(delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusFailed, At: now, Details: campaign.DetailsCancelled}, now)
			continue
		}
		count(cr, m, m.Status, messaging.StatusPending)
		m.Status, m.UpdatedAt = messaging.StatusPending, now
		delete(s.sending, m.ID)
		if sendable(cr, m) {
			s.pushDue(m)
		}
	}
	return len(expired), nil
}

// Backlog implements delivery.Store.
func (s *Store) Backlog(ctx context.Context) (map[messaging.Channel]int, error) {
	if err := s.lock(ctx, "read the backlog"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := map[messaging.Channel]int{}
	for _, cr := range s.campaigns {
		if c := &cr.c; c.Status == messaging.CampaignInProgress {
			out[c.Channel] += c.Counts.Unsent()
			out[messaging.ChannelSMS] += c.FallbackCounts.Unsent()
		}
	}
	return out, nil
}

// HaltedCampaigns implements delivery.Store.
func (s *Store) HaltedCampaigns(ctx context.Context, ids []messaging.ID) (map[messaging.ID]bool, error) {
	if err := s.lock(ctx, "read halted campaigns"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := map[messaging.ID]bool{}
	for _, id := range ids {
		cr := s.campaigns[id]
		if cr != nil && (cr.c.Status == messaging.CampaignPaused || cr.c.CancelledAt != nil) {
			out[id] = cr.c.CancelledAt != nil
		}
	}
	return out, nil
}

// CompleteDrained implements delivery.Store.
func (s *Store) CompleteDrained(ctx context.Context, now time.Time) ([]delivery.Completed, error) {
	if err := s.lock(ctx, "complete drained campaigns"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var done []delivery.Completed
	for _, cr := range s.campaigns {
		c := &cr.c
		if c.Status == messaging.CampaignInProgress && c.Mode == messaging.ModeBulk &&
			c.Counts.Unsent() == 0 && c.FallbackCounts.Unsent() == 0 {
			c.Status, c.UpdatedAt, c.CompletedAt = messaging.CampaignCompleted, now, cloneTime(&now)
			s.emitCampaignStatus(c, now)
			done = append(done, delivery.Completed{ID: c.ID, CompanyID: c.CompanyID, Name: c.Name})
		}
	}
	return done, nil
}

// Features implements delivery.Store: one write at a time, under the
// store's mutex.
func (s *Store) Features() delivery.Features { return delivery.Features{WriteConcurrency: 1} }
