package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/messaging"
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
// callback at once see one first. It is SeenAll of one key.
func (s *Store) Seen(ctx context.Context, key string, until time.Time) (bool, error) {
	seen, err := s.SeenAll(ctx, []string{key}, until)
	if err != nil {
		return false, err
	}
	return seen[0], nil
}

// SeenAll records keys until the time given, in one transaction, and
// reports for each whether it was recorded before: a key given twice is
// recorded before for its second. The keys of concurrent calls share the
// transaction (group commit): on SQLite, whose one writer the status
// updates need too, a transaction for each callback, or for each report
// of a batch, cost more than the statuses. The caller waits for the
// transaction of its keys even when ctx ends first, so that keys are
// never recorded behind an error: the provider's next delivery would be
// refused as a replay.
func (s *Store) SeenAll(ctx context.Context, keys []string, until time.Time) (_ []bool, err error) {
	defer keepUnavailable(&err)
	if len(keys) == 0 {
		return nil, nil
	}
	return s.replays.Do(context.WithoutCancel(ctx), replayItem{keys: keys, until: until}, nil)
}

// replayItem is the callback keys of one call, and until when they are
// kept.
type replayItem struct {
	keys  []string
	until time.Time
}

// Group commit of callback keys: at most replayBatch calls a
// transaction, and a transaction at most replayWriteTimeout long.
const (
	replayBatch        = 256
	replayWriteTimeout = 30 * time.Second
)

// newReplays returns the group committer of SeenAll.
func (s *Store) newReplays() *groupcommit.Committer[replayItem, []bool] {
	return &groupcommit.Committer[replayItem, []bool]{Max: replayBatch, Min: 1, Write: s.writeReplays}
}

// writeReplays inserts the keys of items in one statement, in key order
// (two processes inserting the same keys at once then wait for each other
// in the same order, never in a cycle), and reports for each key whether
// it was there before: a key given twice is there for its second. The
// statement returns the keys it inserted; the others were there.
func (s *Store) writeReplays(items []replayItem) ([][]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), replayWriteTimeout)
	defer cancel()
	until := map[string]time.Time{}
	for _, it := range items {
		for _, k := range it.keys {
			if _, ok := until[k]; !ok {
				until[k] = it.until
			}
		}
	}
	inserted := make(map[string]bool, len(until))
	err := s.write(ctx, "record callbacks", func(tx *txn) error {
		return s.insertReplays(ctx, tx, until, inserted)
	})
	if err != nil {
		return nil, err
	}
	out := make([][]bool, len(items))
	for i, it := range items {
		out[i] = make([]bool, len(it.keys))
		for k, key := range it.keys {
			// The first item naming a key inserted it; the others find it.
			out[i][k] = !inserted[key]
			delete(inserted, key)
		}
	}
	return out, nil
}

// insertReplays inserts the keys of until (each kept until its time) in
// one statement, in key order (two processes inserting the same keys at
// once then wait for each other in the same order, never in a cycle), and
// sets inserted (cleared first) to the keys it inserted: the others were
// there.
func (s *Store) insertReplays(ctx context.Context, tx *txn, until map[string]time.Time, inserted map[string]bool) error {
	clear(inserted)
	if len(until) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(until))
	rows := s.newJSONRows(len(keys))
	for _, k := range keys {
		rows.row().text(k).ts(until[k])
	}
	q := "INSERT INTO chat_replays (replay_key, until) " + s.jsonSelect([]string{"replay_key", "until"}, []int{jsonText, jsonTime}) +
		" WHERE true ON CONFLICT (replay_key) DO NOTHING RETURNING replay_key"
	rs, err := s.rawQuery(ctx, tx, q, rows.String())
	if err != nil {
		return fmt.Errorf("record callbacks: %w", err)
	}
	for rs.Next() {
		var k string
		if err := rs.Scan(&k); err != nil {
			rs.Close()
			return fmt.Errorf("record callbacks: %w", err)
		}
		inserted[k] = true
	}
	if err := errors.Join(rs.Err(), rs.Close()); err != nil {
		return fmt.Errorf("record callbacks: %w", err)
	}
	return nil
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

// ApplyUpdatesOnce implements delivery.OnceUpdater. In one transaction it
// inserts the keys first, in key order as SeenAll does, and then applies
// the updates whose keys were new, as ApplyUpdates does: a process taking
// the same keys at once waits for this transaction on the first of them,
// and then finds them recorded.
func (s *Store) ApplyUpdatesOnce(ctx context.Context, keys []delivery.ReplayKey, updates []delivery.StatusUpdate,
	keyOf []int) (_, _ []bool, err error) {
	defer keepUnavailable(&err)
	if len(keyOf) != len(updates) {
		return nil, nil, fmt.Errorf("apply status updates once: %d key indexes for %d updates", len(keyOf), len(updates))
	}
	until := make(map[string]time.Time, len(keys))
	for _, k := range keys {
		if _, ok := until[k.Key]; !ok {
			until[k.Key] = k.Until
		}
	}
	inserted := make(map[string]bool, len(until))
	taken := make(map[string]bool, len(until))
	seen := make([]bool, len(keys))
	applied := make([]bool, len(updates))
	todo := make([]delivery.StatusUpdate, 0, len(updates))
	at := make([]int, 0, len(updates)) // todo[j] is updates[at[j]]
	s.prepareQueries(ctx)
	err = s.write(ctx, "apply status updates once", func(tx *txn) error {
		clear(applied)
		clear(taken)
		todo, at = todo[:0], at[:0]
		if err := s.insertReplays(ctx, tx, until, inserted); err != nil {
			return err
		}
		for i, k := range keys {
			// The first of the keys given twice is the one inserted.
			seen[i] = !inserted[k.Key] || taken[k.Key]
			taken[k.Key] = true
		}
		for i, u := range updates {
			if k := keyOf[i]; k < 0 || !seen[k] {
				todo, at = append(todo, u), append(at, i)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		res := delivery.BatchResult{Applied: make([]bool, len(todo)), Then: make([]messaging.MessageStatus, len(todo))}
		if err := s.applyBatchTx(ctx, tx, todo, updatedIDs(todo), nil, nil, nil, time.Time{}, &res); err != nil {
			return err
		}
		for j, ok := range res.Applied {
			applied[at[j]] = ok
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return seen, applied, nil
}
