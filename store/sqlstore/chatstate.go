package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RecordInbound implements accounts.ChatContacts.
func (s *Store) RecordInbound(ctx context.Context, serviceID int64, phone string, at time.Time) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "record inbound", func(tx *txn) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO chat_contacts (service_id, phone, last_inbound_at) VALUES (?, ?, ?) "+
			"ON CONFLICT (service_id, phone) DO UPDATE SET last_inbound_at = excluded.last_inbound_at "+
			"WHERE excluded.last_inbound_at > chat_contacts.last_inbound_at", serviceID, phone, s.ts(at))
		if err != nil {
			return fmt.Errorf("record inbound: %w", err)
		}
		return nil
	})
}

// LastInbound implements accounts.ChatContacts.
func (s *Store) LastInbound(ctx context.Context, serviceID int64, phone string) (_ time.Time, _ bool, err error) {
	defer keepUnavailable(&err)
	var at time.Time
	err = s.read.QueryRowContext(ctx, "SELECT last_inbound_at FROM chat_contacts WHERE service_id = ? AND phone = ?", serviceID, phone).Scan(timeDst{&at})
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("last inbound: %w", err)
	}
	return at, true, nil
}

// Seen implements accounts.CallbackReplays: the key is inserted unless
// it is there, in one statement, so that two processes taking the same
// callback at once see one first.
func (s *Store) Seen(ctx context.Context, key string, until time.Time) (_ bool, err error) {
	defer keepUnavailable(&err)
	var n int64
	err = s.write(ctx, "record callback", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO chat_replays (replay_key, until) VALUES (?, ?) ON CONFLICT (replay_key) DO NOTHING", key, s.ts(until))
		if err != nil {
			return fmt.Errorf("record callback: %w", err)
		}
		n, err = res.RowsAffected()
		if err != nil {
			return fmt.Errorf("record callback: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return n == 0, nil
}

// Forget implements accounts.CallbackReplays.
func (s *Store) Forget(ctx context.Context, key string) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "forget callback", func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM chat_replays WHERE replay_key = ?", key); err != nil {
			return fmt.Errorf("forget callback: %w", err)
		}
		return nil
	})
}

// PurgeReplays implements accounts.CallbackReplays, oldest first through
// the index on until.
func (s *Store) PurgeReplays(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer keepUnavailable(&err)
	var n int64
	err = s.write(ctx, "purge callbacks", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM chat_replays WHERE replay_key IN (SELECT replay_key FROM chat_replays WHERE until < ? ORDER BY until LIMIT ?)",
			s.ts(before), limit)
		if err != nil {
			return fmt.Errorf("purge callbacks: %w", err)
		}
		n, err = res.RowsAffected()
		if err != nil {
			return fmt.Errorf("purge callbacks: %w", err)
		}
		return nil
	})
	return int(n), err
}
