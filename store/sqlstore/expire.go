package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// receiptSweep names the receipt timeout's row in sweeps.
const receiptSweep = "receipts"

// sweepSlice is the most time of sends one transaction of the receipt
// sweep looks at, from the first part it has not looked at: a process
// back from a long stop catches up slice by slice, each committed, rather
// than in one transaction that could outlast the store timeout and be
// rolled back every time.
const sweepSlice = time.Minute

// ExpireReceipts implements delivery.Store. It looks at the SMS parts
// recorded since its last run and before sentBefore (through their
// created_at index, so each part is looked at once whatever the size of
// the table) whose receipt has not come, and marks their messages that are
// still Sent unconfirmed, with details, with the counters, a transaction
// per sweepSlice of send time. Where it got to is kept in the sweeps
// table: a process that was stopped for a while catches up, and processes
// sharing the database take turns (on Postgres the sweep row is locked).
func (s *Store) ExpireReceipts(ctx context.Context, sentBefore, now time.Time, details string) (_ int, err error) {
	defer keepUnavailable(&err)
	total := 0
	for {
		n, done, err := s.expireSlice(ctx, sentBefore, now, details)
		total += n
		if err != nil || done {
			return total, err
		}
	}
}

// expireSlice is one transaction of ExpireReceipts: the parts of at most
// sweepSlice from where the sweep got to. done tells that it reached
// sentBefore.
func (s *Store) expireSlice(ctx context.Context, sentBefore, now time.Time, details string) (n int, done bool, err error) {
	err = s.write(ctx, "expire receipts", func(tx *txn) error {
		n, done = 0, false
		lock := ""
		if s.dialect == dialectPostgres {
			lock = " FOR UPDATE"
		}
		var from time.Time
		var upto any
		if s.dialect == dialectPostgres {
			upto = new(time.Time)
		} else {
			upto = new(int64)
		}
		err := tx.QueryRowContext(ctx, "SELECT upto FROM sweeps WHERE name = ?"+lock, receiptSweep).Scan(upto)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read the sweep: %w", err)
		case s.dialect == dialectPostgres:
			from = *upto.(*time.Time)
		default:
			from = time.UnixMicro(*upto.(*int64))
		}
		done = true
		if !sentBefore.After(from) {
			return nil
		}
		// The slice begins at the first part of the window, so that
		// stretches without sends cost nothing.
		var first *time.Time
		if err := tx.QueryRowContext(ctx, "SELECT MIN(created_at) FROM sms_parts WHERE created_at >= ? AND created_at < ?",
			s.ts(from), s.ts(sentBefore)).Scan(timePtrDst{&first}); err != nil {
			return fmt.Errorf("read the next part: %w", err)
		}
		if first != nil {
			if to := first.Add(sweepSlice); to.Before(sentBefore) {
				sentBefore, done = to, false
			}
		}
		// One-part SMS keep no receipt in their part's row (their
		// message's status records it), so most parts of the span have
		// state NULL: only those whose message is still Sent are read.
		rows, err := tx.QueryContext(ctx, "SELECT DISTINCT p.message_id FROM sms_parts p JOIN messages m ON m.id = p.message_id "+
			"WHERE p.created_at >= ? AND p.created_at < ? AND p.state IS NULL AND m.status = 'Sent' AND m.unconfirmed = ?",
			s.ts(from), s.ts(sentBefore), false)
		if err != nil {
			return fmt.Errorf("find parts without receipt: %w", err)
		}
		var ids []messaging.ID
		for rows.Next() {
			var id messaging.ID
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("find parts without receipt: %w", err)
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("find parts without receipt: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("find parts without receipt: %w", err)
		}
		slices.SortFunc(ids, compareIDs)
		deltas := map[messaging.ID]*counterDelta{}
		for chunk := range slices.Chunk(ids, 1000) {
			rows, err := s.rawQuery(ctx, tx, "UPDATE messages SET unconfirmed = ?, details = ?, updated_at = ? WHERE "+
				s.jsonIDsIn("id")+" AND status = 'Sent' AND unconfirmed = ? RETURNING campaign_id, fallback_for IS NOT NULL",
				true, details, s.ts(now), s.jsonIDs(chunk), false)
			if err != nil {
				return fmt.Errorf("mark messages unconfirmed: %w", err)
			}
			marked, err := countMoves(rows, deltas, func(d *counterDelta, fallback bool) { d.unconfirm(fallback, 1) })
			n += marked
			if err != nil {
				return fmt.Errorf("mark messages unconfirmed: %w", err)
			}
		}
		if err := s.applyDeltas(ctx, tx, deltas); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO sweeps (name, upto) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET upto = excluded.upto",
			receiptSweep, s.ts(sentBefore))
		if err != nil {
			return fmt.Errorf("record the sweep: %w", err)
		}
		return nil
	})
	return n, done, err
}
