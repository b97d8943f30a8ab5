package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// purgeMargin widens the span of message ids PurgeFinished looks in:
// the ids of a campaign's messages carry the time they were made, from
// the campaign's creation to its end, by clocks that may differ a little
// between processes.
const purgeMargin = time.Minute

// purgeMessages deletes a batch of a finished campaign's messages: the
// next ones in id order from the cursor, within the span of ids of the
// campaign's life.
// The span bounds the outer scan too, so that Postgres reads only the
// partitions of messages the span covers.
const purgeMessages = "DELETE FROM messages WHERE id >= ? AND id <= ? AND id IN (SELECT id FROM messages WHERE id >= ? AND id <= ? " +
	"AND campaign_id = ? AND status NOT IN ('Pending', 'Sending') ORDER BY id LIMIT ?) RETURNING id"

// purgeSettings makes Postgres read a purge batch through the primary key
// in id order, stopping at the batch's last row. With the row estimates of
// statistics older than the table's growth (a campaign delivered since the
// last ANALYZE), it chose a bitmap of every row in the span, read all of
// them and sorted them for each batch of 1,000: half a second and 70,000
// pages a batch on a table of a million messages, against 2 ms and 4,000.
// Seq scans and sorts are ruled out too, for the same estimates could
// prefer reading the whole table and sorting it. purgeSettingsReset puts
// the planner back for the rest of the transaction.
const (
	purgeSettings      = "SET LOCAL enable_bitmapscan = off; SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off"
	purgeSettingsReset = "RESET enable_bitmapscan; RESET enable_seqscan; RESET enable_sort"
)

// PurgeFinished implements campaign.CampaignStore. A campaign's messages
// are found by their ids (UUIDv7, which begin with the time they were
// made) between its creation and its end, each margin wide, through the
// primary key: no index of messages by campaign is kept for it.
//
// On Postgres it first drops, at most once a minute, the old partitions of
// messages whose every message may go (dropExpiredPartitions); the rows
// left, in partitions that must stay, are deleted as above.
func (s *Store) PurgeFinished(ctx context.Context, p campaign.Purge) (_ campaign.Purged, err error) {
	defer keepUnavailable(&err)
	if s.partitions != nil && s.partitions.dropDue(p.Now) {
		if _, err := s.dropExpiredPartitions(ctx, p.FinishedBefore); err != nil {
			s.partitions.dropFailed(p.Now)
			return campaign.Purged{}, fmt.Errorf("drop expired partitions: %w", err)
		}
	}
	var out campaign.Purged
	err = s.write(ctx, "purge finished campaign", func(tx *txn) error {
		out = campaign.Purged{}
		const cols = "SELECT id, created_at, COALESCE(completed_at, updated_at), purge_cursor FROM campaigns "
		var id messaging.ID
		var cursor nullID // NULL: the zero id
		var created, finished time.Time
		err := tx.QueryRowContext(ctx, cols+"WHERE purge_state = 1 LIMIT 1").Scan(&id, timeDst{&created}, timeDst{&finished}, &cursor)
		if errors.Is(err, sql.ErrNoRows) {
			err = tx.QueryRowContext(ctx, cols+"WHERE purge_state = 0 AND status IN ('Completed', 'Failed') "+
				"AND COALESCE(completed_at, updated_at) < ? ORDER BY COALESCE(completed_at, updated_at), id LIMIT 1",
				s.ts(p.FinishedBefore)).Scan(&id, timeDst{&created}, timeDst{&finished}, &cursor)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err == nil {
				_, err = tx.ExecContext(ctx, "UPDATE campaigns SET purge_state = 1 WHERE id = ?", s.id(id))
			}
		}
		if err != nil {
			return fmt.Errorf("find a campaign to purge: %w", err)
		}
		out.Campaign = id
		// Messages still being sent (a fallback SMS inserted after the
		// campaign completed) are left. Each batch starts where the last
		// one ended (purge_cursor), so the rows of other campaigns in the
		// span are read once, not once a batch.
		from := idAt(created.Add(-purgeMargin), 0)
		if !cursor.id.IsZero() {
			from = cursor.id
		}
		if s.dialect == dialectPostgres {
			if _, err := tx.ExecContext(ctx, purgeSettings); err != nil {
				return fmt.Errorf("purge messages: %w", err)
			}
		}
		lo, hi := s.id(from), s.id(idAt(finished.Add(purgeMargin), 0xff))
		rows, err := tx.QueryContext(ctx, purgeMessages, lo, hi, lo, hi, s.id(id), p.Limit)
		if err != nil {
			return fmt.Errorf("purge messages: %w", err)
		}
		n, last := 0, from
		for rows.Next() {
			var gone messaging.ID
			if err := rows.Scan(&gone); err != nil {
				rows.Close()
				return fmt.Errorf("purge messages: %w", err)
			}
			n++
			if bytes.Compare(gone[:], last[:]) > 0 {
				last = gone
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("purge messages: %w", err)
		}
		if s.dialect == dialectPostgres {
			if _, err := tx.ExecContext(ctx, purgeSettingsReset); err != nil {
				return fmt.Errorf("purge messages: %w", err)
			}
		}
		if n > 0 {
			if _, err := tx.ExecContext(ctx, "UPDATE campaigns SET purge_cursor = ? WHERE id = ?", s.id(last), s.id(id)); err != nil {
				return fmt.Errorf("purge messages: %w", err)
			}
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM survey_results WHERE id IN (SELECT id FROM survey_results WHERE campaign_id = ? LIMIT ?)",
			s.id(id), p.Limit)
		if err != nil {
			return fmt.Errorf("purge survey results: %w", err)
		}
		r, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("purge survey results: %w", err)
		}
		out.Messages, out.Results = n, int(r)
		if out.Messages < p.Limit && out.Results < p.Limit {
			if _, err := tx.ExecContext(ctx, "UPDATE campaigns SET purge_state = 2, purged_at = ? WHERE id = ?", s.ts(p.Now), s.id(id)); err != nil {
				return fmt.Errorf("mark purged: %w", err)
			}
			out.Done = true
		}
		return nil
	})
	return out, err
}

// idAt is the smallest (fill 0) or largest (fill 0xff) UUIDv7 made in the
// millisecond of t.
func idAt(t time.Time, fill byte) messaging.ID {
	var id messaging.ID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(id[:6], ms[2:])
	for i := 6; i < len(id); i++ {
		id[i] = fill
	}
	return id
}
