package memstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// webhookRows are the webhook endpoints, by id and in the order created.
type webhookRows struct {
	byID   map[messaging.ID]*webhook.Endpoint
	order  []messaging.ID
	leases map[messaging.ID]webhookLease
}

// copyEndpoint returns e sharing no memory with it.
func copyEndpoint(e webhook.Endpoint) webhook.Endpoint {
	e.Events = slices.Clone(e.Events)
	if e.DisabledAt != nil {
		t := *e.DisabledAt
		e.DisabledAt = &t
	}
	return e
}

// CreateWebhook implements webhook.Store.
func (s *Store) CreateWebhook(ctx context.Context, e *webhook.Endpoint, max int) error {
	if err := s.lock(ctx, "create webhook"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.webhooks.byID == nil {
		s.webhooks.byID = map[messaging.ID]*webhook.Endpoint{}
	}
	n := 0
	for _, w := range s.webhooks.byID {
		if w.CompanyID == e.CompanyID {
			n++
		}
	}
	if n >= max {
		return tooManyWebhooks(max)
	}
	c := copyEndpoint(*e)
	s.webhooks.byID[e.ID] = &c
	s.webhooks.order = append(s.webhooks.order, e.ID)
	return nil
}

// tooManyWebhooks is the error of a company that has max endpoints.
func tooManyWebhooks(max int) error {
	return messaging.Invalidf("url", "a company may register at most %d webhook endpoints", max)
}

// ListWebhooks implements webhook.Store.
func (s *Store) ListWebhooks(ctx context.Context, companyID messaging.ID) ([]webhook.Endpoint, error) {
	if err := s.lock(ctx, "list webhooks"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []webhook.Endpoint
	for _, id := range s.webhooks.order {
		if e := s.webhooks.byID[id]; e != nil && e.CompanyID == companyID {
			out = append(out, copyEndpoint(*e))
		}
	}
	return out, nil
}

// GetWebhook implements webhook.Store.
func (s *Store) GetWebhook(ctx context.Context, companyID, id messaging.ID) (webhook.Endpoint, error) {
	if err := s.lock(ctx, "get webhook"); err != nil {
		return webhook.Endpoint{}, err
	}
	defer s.mu.Unlock()
	e := s.webhooks.byID[id]
	if e == nil || e.CompanyID != companyID {
		return webhook.Endpoint{}, webhook.NotFound(id)
	}
	return copyEndpoint(*e), nil
}

// DeleteWebhook implements webhook.Store.
func (s *Store) DeleteWebhook(ctx context.Context, companyID, id messaging.ID) error {
	if err := s.lock(ctx, "delete webhook"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e := s.webhooks.byID[id]
	if e == nil || e.CompanyID != companyID {
		return webhook.NotFound(id)
	}
	delete(s.webhooks.byID, id)
	s.webhooks.order = slices.DeleteFunc(s.webhooks.order, func(x messaging.ID) bool { return x == id })
	return nil
}

// RotateWebhookSecret implements webhook.Store.
func (s *Store) RotateWebhookSecret(ctx context.Context, companyID, id messaging.ID, secret string, previousUntil time.Time) (webhook.Endpoint, error) {
	if err := s.lock(ctx, "rotate webhook secret"); err != nil {
		return webhook.Endpoint{}, err
	}
	defer s.mu.Unlock()
	e := s.webhooks.byID[id]
	if e == nil || e.CompanyID != companyID {
		return webhook.Endpoint{}, webhook.NotFound(id)
	}
	e.PreviousSecret, e.PreviousUntil, e.Secret = e.Secret, previousUntil, secret
	return copyEndpoint(*e), nil
}

// outbox holds the events written and their deliveries, in the order
// written.
type outbox struct {
	ids        *messaging.IDGenerator
	deliveries []*webhook.Delivery
	byID       map[messaging.ID]*webhook.Delivery
}

// subscribers returns the enabled endpoints of company subscribed to t,
// oldest first.
func (s *Store) subscribers(company messaging.ID, t webhook.EventType) []messaging.ID {
	var out []messaging.ID
	for _, id := range s.webhooks.order {
		if e := s.webhooks.byID[id]; e != nil && e.CompanyID == company && e.Subscribes(t) {
			out = append(out, id)
		}
	}
	return out
}

// emit writes ev (its ID set here) with a delivery for each endpoint of
// its company subscribed to its type.
func (s *Store) emit(ev webhook.Event, endpoints []messaging.ID) {
	if s.outbox.byID == nil {
		s.outbox.byID = map[messaging.ID]*webhook.Delivery{}
	}
	for _, ep := range endpoints {
		d := &webhook.Delivery{ID: s.outbox.ids.New(), EndpointID: ep, Event: ev, NextAt: ev.CreatedAt}
		s.outbox.deliveries = append(s.outbox.deliveries, d)
		s.outbox.byID[d.ID] = d
	}
}

// emitMessageStatus writes the message.status event of m, which moved to
// its status at, when its company subscribes to it.
func (s *Store) emitMessageStatus(m *messaging.Message, at time.Time) {
	eps := s.subscribers(m.CompanyID, webhook.MessageStatus)
	if len(eps) == 0 {
		return
	}
	s.emit(webhook.MessageStatusEvent(s.outbox.ids.New(), m, at), eps)
}

// emitCampaignStatus writes the campaign.status event of c, which moved
// to its status at, when its company subscribes to it.
func (s *Store) emitCampaignStatus(c *messaging.Campaign, at time.Time) {
	eps := s.subscribers(c.CompanyID, webhook.CampaignStatus)
	if len(eps) == 0 {
		return
	}
	s.emit(webhook.CampaignStatusEvent(s.outbox.ids.New(), c, at), eps)
}

// WaitingDeliveries implements webhook.Outbox.
func (s *Store) WaitingDeliveries(ctx context.Context, endpointID messaging.ID, limit int) ([]webhook.Delivery, error) {
	if err := s.lock(ctx, "read waiting deliveries"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []webhook.Delivery
	for _, d := range s.outbox.deliveries {
		if len(out) == limit {
			break
		}
		if d.EndpointID == endpointID && d.State == webhook.Waiting {
			c := *d
			c.Event.Data = slices.Clone(d.Event.Data)
			out = append(out, c)
		}
	}
	return out, nil
}

// webhookLease is who sends to an endpoint, until when.
type webhookLease struct {
	owner string
	until time.Time
}

// LeaseWebhooks implements webhook.Outbox.
func (s *Store) LeaseWebhooks(ctx context.Context, owner string, now, until time.Time) ([]webhook.Endpoint, error) {
	if err := s.lock(ctx, "lease webhooks"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if s.webhooks.leases == nil {
		s.webhooks.leases = map[messaging.ID]webhookLease{}
	}
	var out []webhook.Endpoint
	for _, id := range s.webhooks.order {
		e := s.webhooks.byID[id]
		if e == nil || e.DisabledAt != nil {
			continue
		}
		if l, ok := s.webhooks.leases[id]; ok && l.owner != owner && !l.until.Before(now) {
			continue
		}
		s.webhooks.leases[id] = webhookLease{owner: owner, until: until}
		out = append(out, copyEndpoint(*e))
	}
	return out, nil
}

// RecordAttempts implements webhook.Outbox.
func (s *Store) RecordAttempts(ctx context.Context, attempts []webhook.Attempt) error {
	if err := s.lock(ctx, "record webhook attempts"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for _, a := range attempts {
		d := s.outbox.byID[a.DeliveryID]
		if d == nil {
			continue
		}
		at := a.At
		d.Attempts++
		d.LastAt, d.LastStatus, d.LastError, d.LastLatency = &at, a.Status, a.Error, a.Latency
		d.State, d.NextAt = a.State, a.NextAt
	}
	return nil
}

// DisableWebhook implements webhook.Outbox.
func (s *Store) DisableWebhook(ctx context.Context, id messaging.ID, at time.Time, reason string) error {
	if err := s.lock(ctx, "disable webhook"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e := s.webhooks.byID[id]
	if e == nil {
		return webhook.NotFound(id)
	}
	e.DisabledAt, e.DisabledReason = &at, reason
	delete(s.webhooks.leases, id)
	return nil
}

// PurgeEvents implements webhook.Purger.
func (s *Store) PurgeEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.lock(ctx, "purge webhook events"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	// Ids are UUIDv7s made when the rows were written: those written
	// before the cut sort below the first id of its millisecond.
	var cut messaging.ID
	ms := uint64(before.UnixMilli())
	for i := range 6 {
		cut[i] = byte(ms >> (8 * (5 - i)))
	}
	gone := map[messaging.ID]bool{}
	for _, d := range s.outbox.deliveries {
		if len(gone) == limit && !gone[d.Event.ID] {
			break
		}
		if bytes.Compare(d.Event.ID[:], cut[:]) >= 0 {
			break
		}
		gone[d.Event.ID] = true
	}
	s.outbox.deliveries = slices.DeleteFunc(s.outbox.deliveries, func(d *webhook.Delivery) bool {
		if gone[d.Event.ID] {
			delete(s.outbox.byID, d.ID)
			return true
		}
		return false
	})
	return len(gone), nil
}

// ListDeliveries implements webhook.Store.
func (s *Store) ListDeliveries(ctx context.Context, companyID, endpointID messaging.ID, page messaging.PageRequest) ([]webhook.Delivery, int, error) {
	if err := s.lock(ctx, "list webhook deliveries"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	if e := s.webhooks.byID[endpointID]; e == nil || e.CompanyID != companyID {
		return nil, 0, webhook.NotFound(endpointID)
	}
	var all []webhook.Delivery
	for i := len(s.outbox.deliveries) - 1; i >= 0; i-- {
		if d := s.outbox.deliveries[i]; d.EndpointID == endpointID {
			c := *d
			c.Event.Data = slices.Clone(d.Event.Data)
			all = append(all, c)
		}
	}
	slices.SortStableFunc(all, func(a, b webhook.Delivery) int { return bytes.Compare(b.Event.ID[:], a.Event.ID[:]) })
	from := min(page.Offset(), len(all))
	return all[from:min(from+page.PageSize, len(all))], len(all), nil
}

// Redeliver implements webhook.Store.
func (s *Store) Redeliver(ctx context.Context, companyID, endpointID, eventID messaging.ID, now time.Time) error {
	if err := s.lock(ctx, "redeliver"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if e := s.webhooks.byID[endpointID]; e == nil || e.CompanyID != companyID {
		return webhook.NotFound(endpointID)
	}
	for _, d := range s.outbox.deliveries {
		if d.EndpointID == endpointID && d.Event.ID == eventID {
			d.State, d.NextAt = webhook.Waiting, now
			return nil
		}
	}
	return messaging.NotFoundf("no delivery of event %s", eventID)
}
