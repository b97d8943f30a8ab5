package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/delivery"
)

// contactKey is one person of one chat service.
type contactKey struct {
	service int64
	phone   string
}

// RecordInbound implements accounts.ChatContacts.
func (s *Store) RecordInbound(ctx context.Context, serviceID int64, phone string, at time.Time) error {
	if err := s.lock(ctx, "record inbound"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	k := contactKey{serviceID, phone}
	if last, ok := s.contacts[k]; !ok || at.After(last) {
		s.contacts[k] = at
	}
	return nil
}

// LastInbound implements accounts.ChatContacts.
func (s *Store) LastInbound(ctx context.Context, serviceID int64, phone string) (time.Time, bool, error) {
	if err := s.lock(ctx, "last inbound"); err != nil {
		return time.Time{}, false, err
	}
	defer s.mu.Unlock()
	at, ok := s.contacts[contactKey{serviceID, phone}]
	return at, ok, nil
}

// Seen implements accounts.CallbackReplays.
func (s *Store) Seen(ctx context.Context, key string, until time.Time) (bool, error) {
	if err := s.lock(ctx, "record callback"); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	if _, ok := s.replays[key]; ok {
		return true, nil
	}
	s.replays[key] = until
	return false, nil
}

// Forget implements accounts.CallbackReplays.
func (s *Store) Forget(ctx context.Context, key string) error {
	if err := s.lock(ctx, "forget callback"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	delete(s.replays, key)
	return nil
}

// PurgeReplays implements accounts.CallbackReplays, oldest first.
func (s *Store) PurgeReplays(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.lock(ctx, "purge callbacks"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var old []string
	for k, until := range s.replays {
		if until.Before(before) {
			old = append(old, k)
		}
	}
	slices.SortFunc(old, func(a, b string) int { return s.replays[a].Compare(s.replays[b]) })
	old = old[:min(len(old), max(limit, 0))]
	for _, k := range old {
		delete(s.replays, k)
	}
	return len(old), nil
}

// ApplyUpdatesOnce implements delivery.OnceUpdater, under one hold of the
// lock: the keys are recorded, then the updates whose keys were new
// applied, as ApplyUpdates does.
func (s *Store) ApplyUpdatesOnce(ctx context.Context, keys []delivery.ReplayKey, updates []delivery.StatusUpdate,
	keyOf []int) ([]bool, []bool, error) {
	if len(keyOf) != len(updates) {
		return nil, nil, fmt.Errorf("memstore apply status updates once: %d key indexes for %d updates", len(keyOf), len(updates))
	}
	if err := s.lock(ctx, "apply status updates once"); err != nil {
		return nil, nil, err
	}
	defer s.mu.Unlock()
	seen := make([]bool, len(keys))
	for i, k := range keys {
		if _, ok := s.replays[k.Key]; ok {
			seen[i] = true
			continue
		}
		s.replays[k.Key] = k.Until
	}
	applied := make([]bool, len(updates))
	for i, u := range updates {
		if k := keyOf[i]; k < 0 || !seen[k] {
			applied[i] = s.applyUpdate(u, u.At)
		}
	}
	return seen, applied, nil
}
