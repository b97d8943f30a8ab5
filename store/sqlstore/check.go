package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldhq/herald/messaging"
)

// CheckCounters recomputes every campaign's counters and each company's
// pending count from the message rows and returns where the stored ones
// differ (messaging.CounterDrift); none when the store is in good order.
// It reads one snapshot (a read-only transaction, repeatable read on
// Postgres), so that writes going on meanwhile do not show as drift, and
// scans the whole messages table: it is an operator's check (herald
// check), not a request path.
func (s *Store) CheckCounters(ctx context.Context) (_ []messaging.Drift, err error) {
	defer keepUnavailable(&err)
	opts := &sql.TxOptions{ReadOnly: true}
	if s.dialect == dialectPostgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.read.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("check counters: %w", err)
	}
	defer func() { _ = tx.Rollback() }()

	rows, err := tx.QueryContext(ctx, s.placeholders("SELECT "+campaignColumns+" FROM campaigns"))
	if err != nil {
		return nil, fmt.Errorf("check counters: read campaigns: %w", err)
	}
	campaigns, err := collect(rows, scanCampaign)
	if err != nil {
		return nil, fmt.Errorf("check counters: read campaigns: %w", err)
	}

	counted := map[messaging.ID]messaging.Counted{}
	rows, err = tx.QueryContext(ctx, "SELECT campaign_id, fallback_for IS NOT NULL, status, COUNT(*) FROM messages "+
		"GROUP BY campaign_id, fallback_for IS NOT NULL, status")
	if err != nil {
		return nil, fmt.Errorf("check counters: count messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id messaging.ID
		var fallback bool
		var status messaging.MessageStatus
		var n int
		if err := rows.Scan(&id, &fallback, &status, &n); err != nil {
			return nil, fmt.Errorf("check counters: count messages: %w", err)
		}
		c := counted[id]
		if fallback {
			c.FallbackCounts.Add(status, n)
		} else {
			c.Counts.Add(status, n)
		}
		counted[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check counters: count messages: %w", err)
	}

	rows, err = tx.QueryContext(ctx, s.placeholders("SELECT campaign_id, fallback_for IS NOT NULL, COUNT(*) FROM messages "+
		"WHERE status = 'Sent' AND unconfirmed = ? GROUP BY campaign_id, fallback_for IS NOT NULL"), true)
	if err != nil {
		return nil, fmt.Errorf("check counters: count unconfirmed messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id messaging.ID
		var fallback bool
		var n int
		if err := rows.Scan(&id, &fallback, &n); err != nil {
			return nil, fmt.Errorf("check counters: count unconfirmed messages: %w", err)
		}
		c := counted[id]
		if fallback {
			c.FallbackCounts.Unconfirmed = n
		} else {
			c.Counts.Unconfirmed = n
		}
		counted[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check counters: count unconfirmed messages: %w", err)
	}

	pending := map[messaging.ID]int{}
	rows, err = tx.QueryContext(ctx, "SELECT id, pending_count FROM companies")
	if err != nil {
		return nil, fmt.Errorf("check counters: read companies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id messaging.ID
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("check counters: read companies: %w", err)
		}
		pending[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check counters: read companies: %w", err)
	}
	// A campaign retention purged keeps its counters without its messages.
	rows, err = tx.QueryContext(ctx, "SELECT id FROM campaigns WHERE purge_state <> 0")
	if err != nil {
		return nil, fmt.Errorf("check counters: read purged campaigns: %w", err)
	}
	defer rows.Close()
	purged := map[messaging.ID]bool{}
	for rows.Next() {
		var id messaging.ID
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("check counters: read purged campaigns: %w", err)
		}
		purged[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check counters: read purged campaigns: %w", err)
	}
	for i, c := range campaigns {
		if purged[c.ID] {
			campaigns[i].Counts, campaigns[i].FallbackCounts = counted[c.ID].Counts, counted[c.ID].FallbackCounts
		}
	}
	return messaging.CounterDrift(campaigns, counted, pending), nil
}
