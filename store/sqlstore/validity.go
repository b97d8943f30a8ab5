package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// ExpireMessages implements delivery.Store. Messages with an expiry of
// their own are found through the partial index of Pending messages by
// expires_at; those of a campaign past its validity through the campaigns
// that have one (a partial index) and the claim index. On Postgres the
// messages a claim holds are skipped: they are being sent.
func (s *Store) ExpireMessages(ctx context.Context, now time.Time, limit int) (_ int, err error) {
	defer keepUnavailable(&err)
	// Most sweeps find nothing: they look first without taking the
	// writer (on SQLite, the one writer of the database).
	over, err := s.campaignsPastValidity(ctx, s.read, now)
	if err != nil {
		return 0, err
	}
	if len(over) == 0 {
		var one int
		err = s.read.QueryRowContext(ctx, "SELECT 1 FROM messages WHERE status = 'Pending' AND expires_at IS NOT NULL AND expires_at <= ? LIMIT 1",
			s.ts(now)).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("expire messages: %w", err)
		}
	}
	var n int
	err = s.write(ctx, "expire messages", func(tx *txn) error {
		n = 0
		skip := ""
		if s.dialect == dialectPostgres {
			skip = " FOR UPDATE SKIP LOCKED"
		}
		ids, err := s.collectIDs(ctx, tx, "SELECT id FROM messages WHERE status = 'Pending' AND expires_at IS NOT NULL AND expires_at <= ? "+
			"ORDER BY expires_at LIMIT ?"+skip, s.ts(now), limit)
		if err != nil {
			return err
		}
		if len(ids) < limit {
			over, err := s.campaignsPastValidity(ctx, tx, now)
			if err != nil {
				return err
			}
			for _, c := range over {
				if len(ids) >= limit {
					break
				}
				more, err := s.collectIDs(ctx, tx, "SELECT id FROM messages WHERE campaign_id = ? AND status = 'Pending' AND expires_at IS NULL LIMIT ?"+skip,
					s.id(c), limit-len(ids))
				if err != nil {
					return err
				}
				ids = append(ids, more...)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		slicesSortIDs(ids)
		states, err := s.lockMessages(ctx, tx, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if st := states[id]; st != nil && st.apply(delivery.StatusUpdate{MessageID: id, Status: messaging.StatusFailed, At: now,
				Details: messaging.DetailsExpired}, now) {
				st.changed = true
				n++
			}
		}
		return s.writeStates(ctx, tx, states)
	})
	return n, err
}

// collectIDs runs a query of ids in the transaction.
func (s *Store) collectIDs(ctx context.Context, tx *txn, q string, args ...any) ([]messaging.ID, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("expire messages: %w", err)
	}
	var ids []messaging.ID
	for rows.Next() {
		var id messaging.ID
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("expire messages: %w", err)
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("expire messages: %w", err)
	}
	return ids, nil
}

// queryer runs a query: the store's reader, or a transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// campaignsPastValidity returns the bulk and direct campaigns in progress
// or paused whose start plus validity is not after now.
func (s *Store) campaignsPastValidity(ctx context.Context, q queryer, now time.Time) ([]messaging.ID, error) {
	rows, err := q.QueryContext(ctx, "SELECT id, started_at, valid_for FROM campaigns WHERE valid_for > 0 "+
		"AND status IN ('InProgress', 'Paused') AND mode <> 'Transactional' AND started_at IS NOT NULL AND pending + fb_pending > 0")
	if err != nil {
		return nil, fmt.Errorf("expire messages: %w", err)
	}
	var over []messaging.ID
	for rows.Next() {
		var id messaging.ID
		var started time.Time
		var valid int64
		if err := rows.Scan(&id, timeDst{&started}, &valid); err != nil {
			rows.Close()
			return nil, fmt.Errorf("expire messages: %w", err)
		}
		if !started.Add(time.Duration(valid) * time.Second).After(now) {
			over = append(over, id)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("expire messages: %w", err)
	}
	return over, nil
}
