package memstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// CreateCampaign implements campaign.CampaignStore: it reserves c.Planned
// of the company's pending capacity or writes nothing.
func (s *Store) CreateCampaign(ctx context.Context, c *messaging.Campaign, maxPending int) error {
	if err := s.lock(ctx, "create campaign"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	co := s.companies[c.CompanyID]
	if co == nil {
		return messaging.CompanyNotFound(c.CompanyID)
	}
	if _, ok := s.campaigns[c.ID]; ok {
		return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "campaign %s already exists", c.ID)
	}
	if co.pending+c.Planned > maxPending {
		return messaging.CapacityExceeded(messaging.Capacity{CurrentPending: co.pending, RequestedCount: c.Planned, MaxAllowed: maxPending})
	}
	v := cloneCampaign(c)
	v.Counts, v.FallbackCounts = messaging.StatusCounts{}, messaging.StatusCounts{}
	s.campaigns[c.ID] = &campaignRow{c: v}
	co.pending += c.Planned
	return nil
}

// GetCampaign implements campaign.CampaignStore and survey.Store.
func (s *Store) GetCampaign(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error) {
	if err := s.lock(ctx, "get campaign"); err != nil {
		return messaging.Campaign{}, err
	}
	defer s.mu.Unlock()
	cr := s.campaigns[id]
	if cr == nil || cr.c.CompanyID != companyID {
		return messaging.Campaign{}, messaging.CampaignNotFound(id)
	}
	return cloneCampaign(&cr.c), nil
}

// ListCampaigns implements campaign.CampaignStore.
func (s *Store) ListCampaigns(ctx context.Context, companyID messaging.ID, f messaging.CampaignFilter) ([]messaging.Campaign, int, error) {
	if err := s.lock(ctx, "list campaigns"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var all []*messaging.Campaign
	for _, cr := range s.campaigns {
		c := &cr.c
		if c.CompanyID == companyID && !c.Hidden && (f.Mode == "" || c.Mode == f.Mode) && (f.Status == "" || c.Status == f.Status) {
			all = append(all, c)
		}
	}
	slices.SortFunc(all, func(a, b *messaging.Campaign) int { return newestFirst(a.CreatedAt, b.CreatedAt, a.ID, b.ID) })
	rows := page(all, f.PageRequest)
	out := make([]messaging.Campaign, len(rows))
	for i, c := range rows {
		out[i] = cloneCampaign(c)
	}
	return out, len(all), nil
}

// QueuingCampaigns implements campaign.CampaignStore.
func (s *Store) QueuingCampaigns(ctx context.Context, createdBefore time.Time, limit int) ([]messaging.Campaign, error) {
	if err := s.lock(ctx, "list queuing campaigns"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var all []*messaging.Campaign
	for _, cr := range s.campaigns {
		c := &cr.c
		if c.Status == messaging.CampaignQueuing && c.CreatedAt.Before(createdBefore) {
			all = append(all, c)
		}
	}
	slices.SortFunc(all, func(a, b *messaging.Campaign) int { return -newestFirst(a.CreatedAt, b.CreatedAt, a.ID, b.ID) })
	out := make([]messaging.Campaign, 0, min(limit, len(all)))
	for _, c := range all[:min(limit, len(all))] {
		out = append(out, cloneCampaign(c))
	}
	return out, nil
}

// ScheduleCampaign implements campaign.CampaignStore.
func (s *Store) ScheduleCampaign(ctx context.Context, companyID, id messaging.ID, at, now time.Time) error {
	if err := s.lock(ctx, "schedule campaign"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	cr := s.campaigns[id]
	if cr == nil || cr.c.CompanyID != companyID {
		return messaging.CampaignNotFound(id)
	}
	if cr.c.Status != messaging.CampaignReady {
		return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "campaign %s is %s, not Ready", id, cr.c.Status)
	}
	cr.c.ScheduledAt, cr.c.UpdatedAt = cloneTime(&at), now
	return nil
}

// DueCampaigns implements campaign.CampaignStore.
func (s *Store) DueCampaigns(ctx context.Context, now time.Time, limit int) ([]messaging.Campaign, error) {
	if err := s.lock(ctx, "due campaigns"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var all []*messaging.Campaign
	for _, cr := range s.campaigns {
		if c := &cr.c; c.Status == messaging.CampaignReady && c.ScheduledAt != nil && !c.ScheduledAt.After(now) {
			all = append(all, c)
		}
	}
	slices.SortFunc(all, func(a, b *messaging.Campaign) int {
		if c := a.ScheduledAt.Compare(*b.ScheduledAt); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
	out := make([]messaging.Campaign, 0, min(limit, len(all)))
	for _, c := range all[:min(limit, len(all))] {
		out = append(out, cloneCampaign(c))
	}
	return out, nil
}

// TransitionCampaign implements campaign.CampaignStore.
func (s *Store) TransitionCampaign(ctx context.Context, t messaging.CampaignTransition) error {
	companyID, id, from, to, at, reason := t.CompanyID, t.CampaignID, t.From, t.To, t.At, t.Reason
	if err := s.lock(ctx, "transition campaign"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	cr := s.campaigns[id]
	if cr == nil || cr.c.CompanyID != companyID {
		return messaging.CampaignNotFound(id)
	}
	c := &cr.c
	if !slices.Contains(from, c.Status) {
		return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "campaign %s is %s, not one of %v", id, c.Status, from)
	}
	if t.Scheduled && (c.ScheduledAt == nil || c.ScheduledAt.After(at)) {
		return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "campaign %s is not scheduled at or before %s", id, at)
	}
	if to == messaging.CampaignInProgress && c.Status == messaging.CampaignReady && !t.Scheduled {
		c.ScheduledAt = nil // started by hand
	}
	co := s.companies[c.CompanyID]
	if c.Status == messaging.CampaignQueuing && to != messaging.CampaignQueuing {
		if to == messaging.CampaignFailed {
			co.release(pendingOf(c), time.Now())
			s.deleteMessages(cr, cr.messages)
			cr.messages = nil
			c.Counts, c.FallbackCounts = messaging.StatusCounts{}, messaging.StatusCounts{}
		} else {
			co.release(reserved(c), time.Now())
		}
	}
	c.Status, c.UpdatedAt = to, at
	switch to {
	case messaging.CampaignInProgress:
		if c.StartedAt == nil { // a resumed campaign keeps its start
			c.StartedAt = cloneTime(&at)
		}
		for _, mid := range cr.messages {
			if m := s.messages[mid]; m.Status == messaging.StatusPending {
				s.pushDue(m)
			}
		}
	case messaging.CampaignCompleted:
		c.CompletedAt = cloneTime(&at)
	case messaging.CampaignFailed:
		c.FailureReason = reason
	}
	s.emitCampaignStatus(c, at)
	return nil
}

// deleteMessages removes the messages ids of cr from the store and its
// indexes (not from cr.messages). Entries left in the due heaps are
// dropped when popped.
func (s *Store) deleteMessages(cr *campaignRow, ids []messaging.ID) {
	gone := make(map[messaging.ID]struct{}, len(ids))
	phones := map[lookupKey]struct{}{}
	externals := map[lookupKey]struct{}{}
	for _, id := range ids {
		m := s.messages[id]
		gone[id] = struct{}{}
		phones[lookupKey{m.CompanyID, m.Phone}] = struct{}{}
		if m.ExternalUserID != "" {
			externals[lookupKey{m.CompanyID, m.ExternalUserID}] = struct{}{}
		}
		delete(s.messages, id)
		delete(s.sending, id)
	}
	for k := range phones {
		s.byPhone.remove(k.company, k.value, gone)
	}
	for k := range externals {
		s.byExternal.remove(k.company, k.value, gone)
	}
}

// InsertMessages implements campaign.CampaignStore: all or nothing, counted
// in the campaigns' counters, without changing the pending count.
func (s *Store) InsertMessages(ctx context.Context, msgs []*messaging.Message) error {
	if err := s.lock(ctx, "insert messages"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.insert(msgs, messaging.NilID)
}

// AdmitMessages implements campaign.CampaignStore: the pending count grows
// by len(msgs) within maxPending, or nothing is written.
func (s *Store) AdmitMessages(ctx context.Context, companyID messaging.ID, msgs []*messaging.Message, maxPending int) error {
	if err := s.lock(ctx, "admit messages"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	co := s.companies[companyID]
	if co == nil {
		return messaging.CompanyNotFound(companyID)
	}
	unsent := 0
	for _, m := range msgs {
		cr := s.campaigns[m.CampaignID]
		if cr == nil || cr.c.CompanyID != companyID {
			return messaging.CampaignNotFound(m.CampaignID)
		}
		if !m.IsFallback() && cr.c.Status != messaging.CampaignInProgress {
			return notActive(m.CampaignID, cr.c.Status)
		}
		if m.IsFallback() && cr.c.CancelledAt != nil && m.Status.Unsent() {
			// A chat failure reported after the cancel: its fallback SMS
			// is recorded, and not sent.
			m.Status, m.Details = messaging.StatusFailed, campaign.DetailsCancelled
		}
		if m.Status.Unsent() {
			unsent++
		}
	}
	if co.pending+unsent > maxPending {
		return messaging.CapacityExceeded(messaging.Capacity{CurrentPending: co.pending, RequestedCount: unsent, MaxAllowed: maxPending})
	}
	if err := s.insert(msgs, companyID); err != nil {
		return err
	}
	co.pending += unsent
	return nil
}

// insert writes msgs, all or nothing. A non-zero companyID requires every
// message to belong to that company.
func (s *Store) insert(msgs []*messaging.Message, companyID messaging.ID) error {
	rows := make([]messaging.Message, len(msgs)) // one allocation for the batch
	var cr *campaignRow
	for i, m := range msgs {
		if cr == nil || cr.c.ID != m.CampaignID {
			cr = s.campaigns[m.CampaignID]
		}
		var err error
		switch {
		case cr == nil || cr.c.CompanyID != m.CompanyID || (!companyID.IsZero() && m.CompanyID != companyID):
			err = messaging.CampaignNotFound(m.CampaignID)
		case s.messages[m.ID] != nil:
			err = messaging.Errorf(messaging.Conflict, messaging.NameConflict, "message %s already exists", m.ID)
		}
		if err != nil {
			for _, done := range msgs[:i] {
				delete(s.messages, done.ID)
			}
			return err
		}
		copyMessage(&rows[i], m)
		s.messages[m.ID] = &rows[i]
	}
	cr = nil
	var phones, externals map[string]idList
	for i := range rows {
		m := &rows[i]
		if cr == nil || cr.c.ID != m.CampaignID {
			cr = s.campaigns[m.CampaignID]
			phones, externals = s.byPhone.of(m.CompanyID), s.byExternal.of(m.CompanyID)
		}
		cr.messages = append(cr.messages, m.ID)
		count(cr, m, "", m.Status)
		add(phones, m.Phone, m.ID)
		if m.ExternalUserID != "" {
			add(externals, m.ExternalUserID, m.ID)
		}
		switch m.Status {
		case messaging.StatusSending:
			s.sending[m.ID] = ""
		case messaging.StatusPending:
			if sendable(cr, m) {
				s.pushDue(m)
			}
		}
	}
	return nil
}

// ListMessages implements campaign.CampaignStore.
func (s *Store) ListMessages(ctx context.Context, companyID messaging.ID, f messaging.MessageFilter) ([]messaging.Message, int, error) {
	if err := s.lock(ctx, "list messages"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	match := func(m *messaging.Message) bool {
		return m.CompanyID == companyID && (f.Phone == "" || m.Phone == f.Phone) &&
			(f.ExternalUserID == "" || m.ExternalUserID == f.ExternalUserID) && inRange(m.CreatedAt, f.From, f.To) &&
			(f.CampaignID.IsZero() || m.CampaignID == f.CampaignID) && (f.Status == "" || m.Status == f.Status)
	}
	var all []*messaging.Message
	collect := func(ids []messaging.ID) {
		for _, id := range ids {
			if m := s.messages[id]; m != nil && match(m) {
				all = append(all, m)
			}
		}
	}
	switch {
	case f.Phone != "":
		collect(s.byPhone.get(companyID, f.Phone))
	case f.ExternalUserID != "":
		collect(s.byExternal.get(companyID, f.ExternalUserID))
	default:
		for _, m := range s.messages {
			if match(m) {
				all = append(all, m)
			}
		}
	}
	if f.CampaignID.IsZero() || f.Phone != "" || f.ExternalUserID != "" {
		slices.SortFunc(all, func(a, b *messaging.Message) int { return newestFirst(a.CreatedAt, b.CreatedAt, a.ID, b.ID) })
	} else { // a campaign's messages, newest first by id (creation order)
		slices.SortFunc(all, func(a, b *messaging.Message) int { return bytes.Compare(b.ID[:], a.ID[:]) })
	}
	rows := page(all, f.PageRequest)
	out := make([]messaging.Message, len(rows))
	for i, m := range rows {
		copyMessage(&out[i], m)
	}
	return out, len(all), nil
}

// CampaignMessagesAfter implements campaign.CampaignStore.
func (s *Store) CampaignMessagesAfter(ctx context.Context, companyID, campaignID, after messaging.ID, limit int) ([]messaging.Message, error) {
	if err := s.lock(ctx, "read campaign messages"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	cr := s.campaigns[campaignID]
	if cr == nil || cr.c.CompanyID != companyID {
		return nil, nil
	}
	var ids []messaging.ID
	for _, id := range cr.messages {
		if bytes.Compare(id[:], after[:]) > 0 && s.messages[id] != nil {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b messaging.ID) int { return bytes.Compare(a[:], b[:]) })
	out := make([]messaging.Message, min(limit, len(ids)))
	for i := range out {
		copyMessage(&out[i], s.messages[ids[i]])
	}
	return out, nil
}

// GetMessage implements campaign.CampaignStore.
func (s *Store) GetMessage(ctx context.Context, companyID, id messaging.ID) (messaging.Message, error) {
	if err := s.lock(ctx, "get message"); err != nil {
		return messaging.Message{}, err
	}
	defer s.mu.Unlock()
	m := s.messages[id]
	if m == nil || m.CompanyID != companyID {
		return messaging.Message{}, messaging.MessageNotFound(id)
	}
	return cloneMessage(m), nil
}

// MessageByID implements delivery.EventStore.
func (s *Store) MessageByID(ctx context.Context, id messaging.ID) (messaging.Message, error) {
	if err := s.lock(ctx, "message by id"); err != nil {
		return messaging.Message{}, err
	}
	defer s.mu.Unlock()
	m := s.messages[id]
	if m == nil {
		return messaging.Message{}, messaging.MessageNotFound(id)
	}
	return cloneMessage(m), nil
}

// PendingCount implements campaign.CampaignStore. An unknown company has
// nothing pending.
func (s *Store) PendingCount(ctx context.Context, companyID messaging.ID) (int, error) {
	if err := s.lock(ctx, "pending count"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if co := s.companies[companyID]; co != nil {
		return co.pending, nil
	}
	return 0, nil
}

// CountWaiting implements campaign.CampaignStore.
func (s *Store) CountWaiting(ctx context.Context, campaignID messaging.ID, now time.Time) (int, error) {
	if err := s.lock(ctx, "count waiting messages"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	cr := s.campaigns[campaignID]
	if cr == nil {
		return 0, nil
	}
	n := 0
	for _, id := range cr.messages {
		if m := s.messages[id]; m != nil && m.Status == messaging.StatusPending && m.DueAt.After(now) {
			n++
		}
	}
	return n, nil
}

// CapacityUse implements campaign.CampaignStore.
func (s *Store) CapacityUse(ctx context.Context, companyID messaging.ID) (messaging.CapacityUse, error) {
	if err := s.lock(ctx, "capacity use"); err != nil {
		return messaging.CapacityUse{}, err
	}
	defer s.mu.Unlock()
	co := s.companies[companyID]
	if co == nil {
		return messaging.CapacityUse{}, messaging.CompanyNotFound(companyID)
	}
	width := int64(drainBucket / time.Second)
	b := time.Now().Unix() / width
	use := messaging.CapacityUse{Since: time.Unix((b-1)*width, 0), HeldBy: map[messaging.CampaignStatus]int{}}
	switch co.drain.bucket {
	case b:
		use.Drained = co.drain.cur + co.drain.prev
	case b - 1:
		use.Drained = co.drain.cur
	}
	for _, cr := range s.campaigns {
		if cr.c.CompanyID == companyID {
			if n := pendingOf(&cr.c); n > 0 {
				use.HeldBy[cr.c.Status] += n
			}
		}
	}
	return use, nil
}

// ReconcilePending implements campaign.CampaignStore.
func (s *Store) ReconcilePending(ctx context.Context) (int, error) {
	if err := s.lock(ctx, "reconcile pending"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	want := make(map[messaging.ID]int, len(s.companies))
	for _, cr := range s.campaigns {
		want[cr.c.CompanyID] += pendingOf(&cr.c)
	}
	fixed := 0
	for id, co := range s.companies {
		if co.pending != want[id] {
			co.pending = want[id]
			fixed++
		}
	}
	return fixed, nil
}

// CheckCounters recomputes every campaign's counters and each company's
// pending count from the messages and returns where the stored ones
// differ (messaging.CounterDrift).
func (s *Store) CheckCounters(ctx context.Context) ([]messaging.Drift, error) {
	if err := s.lock(ctx, "check counters"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	campaigns := make([]messaging.Campaign, 0, len(s.campaigns))
	counted := make(map[messaging.ID]messaging.Counted, len(s.campaigns))
	for id, cr := range s.campaigns {
		campaigns = append(campaigns, cr.c)
		var n messaging.Counted
		for _, mid := range cr.messages {
			m := s.messages[mid]
			c := &n.Counts
			if m.IsFallback() {
				c = &n.FallbackCounts
			}
			c.Add(m.Status, 1)
			if _, ok := s.unconfirmed[mid]; ok && m.Status == messaging.StatusSent {
				c.Unconfirmed++
			}
		}
		counted[id] = n
		if cr.purge != notPurged { // its counters outlive its messages
			c := &campaigns[len(campaigns)-1]
			c.Counts, c.FallbackCounts = n.Counts, n.FallbackCounts
		}
	}
	pending := make(map[messaging.ID]int, len(s.companies))
	for id, co := range s.companies {
		pending[id] = co.pending
	}
	return messaging.CounterDrift(campaigns, counted, pending), nil
}

// CancelCampaign implements campaign.CampaignStore.
func (s *Store) CancelCampaign(ctx context.Context, t messaging.CampaignTransition) error {
	if err := s.lock(ctx, "cancel campaign"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	cr := s.campaigns[t.CampaignID]
	if cr == nil || cr.c.CompanyID != t.CompanyID {
		return messaging.CampaignNotFound(t.CampaignID)
	}
	c := &cr.c
	if !slices.Contains(t.From, c.Status) {
		return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "campaign %s is %s, not one of %v", t.CampaignID, c.Status, t.From)
	}
	for _, id := range cr.messages {
		if m := s.messages[id]; m != nil && m.Status == messaging.StatusPending {
			s.applyUpdate(delivery.StatusUpdate{MessageID: id, Status: messaging.StatusFailed, At: t.At, Details: campaign.DetailsCancelled}, t.At)
		}
	}
	c.Status, c.UpdatedAt = messaging.CampaignCompleted, t.At
	c.CompletedAt, c.CancelledAt = cloneTime(&t.At), cloneTime(&t.At)
	s.emitCampaignStatus(c, t.At)
	return nil
}

// notActive is the error of a message admitted to a campaign that is not
// in progress (paused or cancelled meanwhile).
func notActive(id messaging.ID, status messaging.CampaignStatus) error {
	return messaging.Errorf(messaging.Invalid, messaging.NameCampaignNotActive, "Campaign %s is %s, not InProgress", id, status)
}

// ExpireMessages implements delivery.Store.
func (s *Store) ExpireMessages(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := s.lock(ctx, "expire messages"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	for _, cr := range s.campaigns {
		c := &cr.c
		campaignOver := c.ValidFor > 0 && c.StartedAt != nil && c.Mode != messaging.ModeTransactional &&
			(c.Status == messaging.CampaignInProgress || c.Status == messaging.CampaignPaused) && !c.StartedAt.Add(c.ValidFor).After(now)
		for _, id := range cr.messages {
			if n == limit {
				return n, nil
			}
			m := s.messages[id]
			if m == nil || m.Status != messaging.StatusPending {
				continue
			}
			if (m.ExpiresAt != nil && !m.ExpiresAt.After(now)) || (m.ExpiresAt == nil && campaignOver) {
				s.applyUpdate(delivery.StatusUpdate{MessageID: id, Status: messaging.StatusFailed, At: now, Details: messaging.DetailsExpired}, now)
				n++
			}
		}
	}
	return n, nil
}

// SummarizeMessages implements campaign.CampaignStore.
func (s *Store) SummarizeMessages(ctx context.Context, companyID messaging.ID, since time.Time) ([]messaging.MessageTally, error) {
	if err := s.lock(ctx, "summarize messages"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	counts := map[messaging.MessageTally]int{}
	for _, m := range s.messages {
		if (!companyID.IsZero() && m.CompanyID != companyID) || m.CreatedAt.Before(since) {
			continue
		}
		k := messaging.MessageTally{CompanyID: m.CompanyID, Channel: m.Channel, Status: m.Status}
		if m.Status == messaging.StatusFailed {
			k.Reason = m.Details
		}
		counts[k]++
	}
	out := make([]messaging.MessageTally, 0, len(counts))
	for k, n := range counts {
		k.Count = n
		out = append(out, k)
	}
	slices.SortFunc(out, messaging.CompareTallies)
	return out, nil
}
