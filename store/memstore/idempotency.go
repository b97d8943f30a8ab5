package memstore

import (
	"bytes"
	"context"
	"time"

	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/messaging"
)

// idemKey is a company's idempotency key.
type idemKey struct {
	company messaging.ID
	key     string
}

// cloneRecord copies r, sharing nothing with it.
func cloneRecord(r *idempotency.Record) idempotency.Record {
	v := *r
	v.Response.Body = bytes.Clone(r.Response.Body)
	return v
}

// ClaimIdempotencyKey implements idempotency.Store.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, r idempotency.Request, now, expiredBefore, abandonedBefore time.Time) (idempotency.Record, bool, error) {
	if err := s.lock(ctx, "claim an idempotency key"); err != nil {
		return idempotency.Record{}, false, err
	}
	defer s.mu.Unlock()
	k := idemKey{r.CompanyID, r.Key}
	if held := s.idem[k]; held != nil && !held.CreatedAt.Before(expiredBefore) && (held.Done || !held.UpdatedAt.Before(abandonedBefore)) {
		return cloneRecord(held), false, nil
	}
	rec := &idempotency.Record{Request: r, CreatedAt: now, UpdatedAt: now}
	s.idem[k] = rec
	return cloneRecord(rec), true, nil
}

// GetIdempotencyKey implements idempotency.Store.
func (s *Store) GetIdempotencyKey(ctx context.Context, companyID messaging.ID, key string) (idempotency.Record, error) {
	if err := s.lock(ctx, "read an idempotency key"); err != nil {
		return idempotency.Record{}, err
	}
	defer s.mu.Unlock()
	held := s.idem[idemKey{companyID, key}]
	if held == nil {
		return idempotency.Record{}, messaging.Errorf(messaging.NotFound, messaging.NameNotFound, "no idempotency key %q", key)
	}
	return cloneRecord(held), nil
}

// CompleteIdempotencyKey implements idempotency.Store.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, r idempotency.Request, resp idempotency.Response, now time.Time) error {
	if err := s.lock(ctx, "complete an idempotency key"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if held := s.idem[idemKey{r.CompanyID, r.Key}]; held != nil && held.Hash == r.Hash && !held.Done {
		held.Done, held.UpdatedAt = true, now
		held.Response = resp
		held.Response.Body = bytes.Clone(resp.Body)
	}
	return nil
}

// ReleaseIdempotencyKey implements idempotency.Store.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, r idempotency.Request) error {
	if err := s.lock(ctx, "release an idempotency key"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	k := idemKey{r.CompanyID, r.Key}
	if held := s.idem[k]; held != nil && held.Hash == r.Hash && !held.Done {
		delete(s.idem, k)
	}
	return nil
}

// PurgeIdempotencyKeys implements idempotency.Store.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.lock(ctx, "purge idempotency keys"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	for k, r := range s.idem {
		if n == limit {
			break
		}
		if r.CreatedAt.Before(before) {
			delete(s.idem, k)
			n++
		}
	}
	return n, nil
}
