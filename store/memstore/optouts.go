package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/webhook"
)

// optOutKey names one opt-out.
type optOutKey struct {
	company messaging.ID
	phone   string
	scope   optout.Scope
}

// AddOptOut implements optout.Store.
func (s *Store) AddOptOut(ctx context.Context, o optout.OptOut) (bool, error) {
	if err := s.lock(ctx, "add an opt-out"); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	if s.optOuts == nil {
		s.optOuts = map[optOutKey]optout.OptOut{}
	}
	k := optOutKey{o.CompanyID, o.Phone, o.Scope}
	if _, ok := s.optOuts[k]; ok {
		return false, nil
	}
	s.optOuts[k] = o
	s.emitOptOut(o.CompanyID, o.Phone, o.Scope, o.Source, true, o.CreatedAt)
	s.failPendingOf(o.CompanyID, o.Phone, o.Scope, o.CreatedAt)
	return true, nil
}

// failPendingOf ends Failed (DetailsOptedOut) the company's Pending
// messages to phone that scope covers, under the lock: those not handed
// to a provider yet are never sent.
func (s *Store) failPendingOf(companyID messaging.ID, phone string, scope optout.Scope, at time.Time) {
	for _, id := range s.byPhone.get(companyID, phone) {
		if m := s.messages[id]; m != nil && m.Status == messaging.StatusPending && scope.Covers(m.Channel) {
			s.applyUpdate(delivery.StatusUpdate{MessageID: id, Status: messaging.StatusFailed, At: at, Details: campaign.DetailsOptedOut}, at)
		}
	}
}

// RemoveOptOut implements optout.Store.
func (s *Store) RemoveOptOut(ctx context.Context, companyID messaging.ID, phone string, scope optout.Scope, source optout.Source, at time.Time) (bool, error) {
	if err := s.lock(ctx, "remove an opt-out"); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	k := optOutKey{companyID, phone, scope}
	if _, ok := s.optOuts[k]; !ok {
		return false, nil
	}
	delete(s.optOuts, k)
	s.emitOptOut(companyID, phone, scope, source, false, at)
	return true, nil
}

// emitOptOut writes the optout.changed event of a change when the company
// subscribes to it.
func (s *Store) emitOptOut(companyID messaging.ID, phone string, scope optout.Scope, source optout.Source, out bool, at time.Time) {
	if eps := s.subscribers(companyID, webhook.OptOutChanged); len(eps) > 0 {
		s.emit(webhook.OptOutEvent(s.outbox.ids.New(), companyID, phone, string(scope), string(source), out, at), eps)
	}
}

// ListOptOuts implements optout.Store.
func (s *Store) ListOptOuts(ctx context.Context, companyID messaging.ID, f optout.Filter) ([]optout.OptOut, int, error) {
	if err := s.lock(ctx, "list opt-outs"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var all []optout.OptOut
	for _, o := range s.optOuts {
		if o.CompanyID == companyID && (f.Phone == "" || o.Phone == f.Phone) {
			all = append(all, o)
		}
	}
	slices.SortFunc(all, func(a, b optout.OptOut) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		if c := strings.Compare(a.Phone, b.Phone); c != 0 {
			return c
		}
		return strings.Compare(string(a.Scope), string(b.Scope))
	})
	from := min(f.Offset(), len(all))
	return all[from:min(from+f.PageSize, len(all))], len(all), nil
}

// OptedOut implements optout.Store.
func (s *Store) OptedOut(ctx context.Context, companyID messaging.ID, phones []string, ch messaging.Channel) (map[string]bool, error) {
	if err := s.lock(ctx, "read opt-outs"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, p := range phones {
		for _, sc := range []optout.Scope{optout.All, optout.Chat} {
			if _, ok := s.optOuts[optOutKey{companyID, p, sc}]; ok && sc.Covers(ch) {
				out[p] = true
			}
		}
	}
	return out, nil
}

// Keywords implements optout.Store.
func (s *Store) Keywords(ctx context.Context, companyID messaging.ID) (optout.Keywords, bool, error) {
	if err := s.lock(ctx, "read keywords"); err != nil {
		return optout.Keywords{}, false, err
	}
	defer s.mu.Unlock()
	k, ok := s.keywords[companyID]
	return optout.Keywords{Out: slices.Clone(k.Out), In: slices.Clone(k.In)}, ok, nil
}

// SetKeywords implements optout.Store.
func (s *Store) SetKeywords(ctx context.Context, companyID messaging.ID, k optout.Keywords) error {
	if err := s.lock(ctx, "set keywords"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.keywords == nil {
		s.keywords = map[messaging.ID]optout.Keywords{}
	}
	s.keywords[companyID] = optout.Keywords{Out: slices.Clone(k.Out), In: slices.Clone(k.In)}
	return nil
}

// keywordsOf returns the company's keywords, under the lock.
func (s *Store) keywordsOf(companyID messaging.ID) optout.Keywords {
	if k, ok := s.keywords[companyID]; ok {
		return k
	}
	return optout.DefaultKeywords()
}
