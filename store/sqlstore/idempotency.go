package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/messaging"
)

const idemColumns = "hash, done, status, content_type, body, created_at, updated_at"

// scanIdem reads idemColumns into r.
func scanIdem(row interface{ Scan(...any) error }, r *idempotency.Record) error {
	var hash, body []byte
	var done int
	err := row.Scan(&hash, &done, &r.Response.Status, &r.Response.ContentType, &body, timeDst{&r.CreatedAt}, timeDst{&r.UpdatedAt})
	if err != nil {
		return err
	}
	copy(r.Hash[:], hash)
	r.Done, r.Response.Body = done == 1, body
	return nil
}

// ClaimIdempotencyKey implements idempotency.Store. On Postgres the row is
// locked while it is looked at; two first requests racing to insert it
// are told apart by the primary key (one inserts, the other reads it).
func (s *Store) ClaimIdempotencyKey(ctx context.Context, r idempotency.Request, now, expiredBefore, abandonedBefore time.Time) (_ idempotency.Record, _ bool, err error) {
	defer keepUnavailable(&err)
	var held idempotency.Record
	var claimed bool
	err = s.write(ctx, "claim an idempotency key", func(tx *txn) error {
		held, claimed = idempotency.Record{Request: r}, false
		res, err := tx.ExecContext(ctx, "INSERT INTO idempotency_keys (company_id, idem_key, hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "+
			"ON CONFLICT DO NOTHING", s.id(r.CompanyID), r.Key, r.Hash[:], s.ts(now), s.ts(now))
		if err != nil {
			return fmt.Errorf("claim an idempotency key: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("claim an idempotency key: %w", err)
		} else if n == 1 {
			claimed = true
			return nil
		}
		lock := ""
		if s.dialect == dialectPostgres {
			lock = " FOR UPDATE"
		}
		err = scanIdem(tx.QueryRowContext(ctx, "SELECT "+idemColumns+" FROM idempotency_keys WHERE company_id = ? AND idem_key = ?"+lock,
			s.id(r.CompanyID), r.Key), &held)
		if err != nil {
			return fmt.Errorf("read an idempotency key: %w", err)
		}
		if !held.CreatedAt.Before(expiredBefore) && (held.Done || !held.UpdatedAt.Before(abandonedBefore)) {
			return nil
		}
		// Expired, or abandoned by a process that died: taken over.
		if _, err := tx.ExecContext(ctx, "UPDATE idempotency_keys SET hash = ?, done = 0, status = 0, content_type = '', body = NULL, "+
			"created_at = ?, updated_at = ? WHERE company_id = ? AND idem_key = ?", r.Hash[:], s.ts(now), s.ts(now), s.id(r.CompanyID), r.Key); err != nil {
			return fmt.Errorf("take over an idempotency key: %w", err)
		}
		held, claimed = idempotency.Record{Request: r}, true
		return nil
	})
	return held, claimed, err
}

// GetIdempotencyKey implements idempotency.Store.
func (s *Store) GetIdempotencyKey(ctx context.Context, companyID messaging.ID, key string) (_ idempotency.Record, err error) {
	defer keepUnavailable(&err)
	r := idempotency.Record{Request: idempotency.Request{CompanyID: companyID, Key: key}}
	err = scanIdem(s.read.QueryRowContext(ctx, "SELECT "+idemColumns+" FROM idempotency_keys WHERE company_id = ? AND idem_key = ?",
		s.id(companyID), key), &r)
	if errors.Is(err, sql.ErrNoRows) {
		return r, messaging.Errorf(messaging.NotFound, messaging.NameNotFound, "no idempotency key %q", key)
	}
	if err != nil {
		return r, fmt.Errorf("read an idempotency key: %w", err)
	}
	return r, nil
}

// CompleteIdempotencyKey implements idempotency.Store.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, r idempotency.Request, resp idempotency.Response, now time.Time) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "complete an idempotency key", func(tx *txn) error {
		body := resp.Body
		if body == nil {
			body = []byte{}
		}
		_, err := tx.ExecContext(ctx, "UPDATE idempotency_keys SET done = 1, status = ?, content_type = ?, body = ?, updated_at = ? "+
			"WHERE company_id = ? AND idem_key = ? AND hash = ? AND done = 0", resp.Status, resp.ContentType, body, s.ts(now), s.id(r.CompanyID), r.Key, r.Hash[:])
		if err != nil {
			return fmt.Errorf("complete an idempotency key: %w", err)
		}
		return nil
	})
}

// ReleaseIdempotencyKey implements idempotency.Store.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, r idempotency.Request) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "release an idempotency key", func(tx *txn) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM idempotency_keys WHERE company_id = ? AND idem_key = ? AND hash = ? AND done = 0",
			s.id(r.CompanyID), r.Key, r.Hash[:])
		if err != nil {
			return fmt.Errorf("release an idempotency key: %w", err)
		}
		return nil
	})
}

// PurgeIdempotencyKeys implements idempotency.Store, oldest first through
// the index on created_at.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer keepUnavailable(&err)
	var n int64
	err = s.write(ctx, "purge idempotency keys", func(tx *txn) error {
		where := "created_at < ? ORDER BY created_at LIMIT ?"
		var q string
		if s.dialect == dialectPostgres {
			q = "DELETE FROM idempotency_keys WHERE (company_id, idem_key) IN (SELECT company_id, idem_key FROM idempotency_keys WHERE " + where + ")"
		} else {
			q = "DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE " + where + ")"
		}
		res, err := tx.ExecContext(ctx, q, s.ts(before), limit)
		if err != nil {
			return fmt.Errorf("purge idempotency keys: %w", err)
		}
		n, err = res.RowsAffected()
		if err != nil {
			return fmt.Errorf("purge idempotency keys: %w", err)
		}
		return nil
	})
	return int(n), err
}
