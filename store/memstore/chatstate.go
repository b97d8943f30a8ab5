package memstore

import (
	"context"
	"slices"
	"time"
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
