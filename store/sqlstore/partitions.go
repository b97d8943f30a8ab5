package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// On Postgres the messages table is partitioned by range of id (migration
// message_partitions). Ids are UUIDv7, so a range of ids is a range of
// creation times: the store keeps partitions made ahead of the clock, new
// messages land in the newest, whose indexes are small, and retention drops
// an old partition whole once every message in it may go.

// DefaultPartitionSpan is the range of creation times one partition of
// messages holds when Config.PartitionSpan is zero.
const DefaultPartitionSpan = 7 * 24 * time.Hour

// MinPartitionSpan is the shortest Config.PartitionSpan.
const MinPartitionSpan = time.Minute

// partitionsAhead is how many spans past the clock the partitions reach:
// an insert lands in the default partition only when the store could not
// make partitions for that long.
const partitionsAhead = 2

// partitionLockTimeout bounds the wait for the locks that attaching and
// dropping a partition take: the maintenance gives way to long
// transactions and tries again later, rather than queueing every query of
// messages behind its lock.
const partitionLockTimeout = "5s"

// dropCheckEvery spaces the checks of old partitions that PurgeFinished
// makes before it deletes rows.
const dropCheckEvery = time.Minute

func (c Config) partitionSpan() time.Duration {
	if c.PartitionSpan <= 0 {
		return DefaultPartitionSpan
	}
	return max(c.PartitionSpan, MinPartitionSpan)
}

// partition is one range partition of messages: ids from lo (included;
// zero with unbounded) to hi (excluded).
type partition struct {
	name      string
	lo, hi    messaging.ID
	unbounded bool
}

// loTime and hiTime are the creation times the partition's bounds stand for.
func (p partition) loTime() time.Time { return p.lo.Time() }
func (p partition) hiTime() time.Time { return p.hi.Time() }

// partitionBound reads the bounds pg_get_expr prints for a partition:
// FOR VALUES FROM (MINVALUE) TO ('…') or FROM ('…') TO ('…').
var partitionBound = regexp.MustCompile(`^FOR VALUES FROM \((MINVALUE|'[0-9a-f-]{36}')\) TO \('([0-9a-f-]{36})'\)$`)

// messagePartitions lists the range partitions of messages, oldest first
// (the default partition is not one of them).
func messagePartitions(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}) ([]partition, error) {
	rows, err := q.QueryContext(ctx, "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "+
		"JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'messages'::regclass")
	if err != nil {
		return nil, fmt.Errorf("list the partitions of messages: %w", err)
	}
	defer rows.Close()
	var out []partition
	for rows.Next() {
		var name, bound string
		if err := rows.Scan(&name, &bound); err != nil {
			return nil, fmt.Errorf("list the partitions of messages: %w", err)
		}
		if bound == "DEFAULT" {
			continue
		}
		m := partitionBound.FindStringSubmatch(bound)
		if m == nil {
			return nil, fmt.Errorf("partition %s of messages: bounds %q not understood", name, bound)
		}
		p := partition{name: name, unbounded: m[1] == "MINVALUE"}
		if !p.unbounded {
			if p.lo, err = messaging.ParseID(m[1][1 : len(m[1])-1]); err != nil {
				return nil, fmt.Errorf("partition %s of messages: %w", name, err)
			}
		}
		if p.hi, err = messaging.ParseID(m[2]); err != nil {
			return nil, fmt.Errorf("partition %s of messages: %w", name, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the partitions of messages: %w", err)
	}
	slices.SortFunc(out, func(a, b partition) int { return a.hiTime().Compare(b.hiTime()) })
	return out, nil
}

// nextPartitions returns the ranges of the partitions to make after the
// newest one, which ends at hi, so that they reach partitionsAhead spans
// past now. Bounds fall on multiples of span since Go's zero time (a week
// begins on a Monday, 00:00 UTC); a gap
// of whole spans in the past (the store did not run) becomes one
// partition.
func nextPartitions(hi, now time.Time, span time.Duration) [][2]time.Time {
	var out [][2]time.Time
	until := now.Add(partitionsAhead * span)
	current := now.Truncate(span)
	for hi.Before(until) {
		next := hi.Truncate(span).Add(span)
		if next.Before(current) {
			next = current
		}
		out = append(out, [2]time.Time{hi, next})
		hi = next
	}
	return out
}

// partitionName names the partition of messages starting at lo.
func partitionName(lo time.Time) string {
	return "messages_p" + lo.UTC().Format("20060102t1504")
}

// EnsurePartitions makes the partitions of messages that the clock will
// need within two partition spans of now (Postgres; SQLite keeps one
// table). The store calls it when it opens and then in the background; a
// program may call it after moving the clock. Messages that landed in the
// default partition meanwhile move into the partition made for them.
func (s *Store) EnsurePartitions(ctx context.Context, now time.Time) (err error) {
	if s.dialect != dialectPostgres {
		return nil
	}
	defer keepUnavailable(&err)
	parts, err := messagePartitions(ctx, s.read)
	if err != nil {
		return fmt.Errorf("sqlstore: %w", err)
	}
	if len(parts) == 0 {
		return errors.New("sqlstore: messages has no range partition")
	}
	for _, r := range nextPartitions(parts[len(parts)-1].hiTime(), now.UTC(), s.partitionSpan) {
		name := partitionName(r[0])
		lo, hi := idAt(r[0], 0), idAt(r[1], 0)
		err := s.write(ctx, "make partition "+name, func(tx *txn) error {
			// Processes sharing the database make partitions one at a
			// time; the one that comes second finds it made.
			var made bool
			if err := tx.QueryRowContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('herald.partitions.' || COALESCE(current_schema(), ''))), "+
				"to_regclass(?) IS NOT NULL", name).Scan(new(any), &made); err != nil {
				return err
			}
			if made {
				return nil
			}
			stmts := []struct {
				q    string
				args []any
			}{
				{"SET LOCAL lock_timeout = '" + partitionLockTimeout + "'", nil},
				{"CREATE TABLE " + name + " (LIKE messages INCLUDING DEFAULTS)", nil},
				{"WITH moved AS (DELETE FROM messages_default WHERE id >= ? AND id < ? RETURNING *) INSERT INTO " + name +
					" SELECT * FROM moved", []any{s.id(lo), s.id(hi)}},
				{"ALTER TABLE messages ATTACH PARTITION " + name + " FOR VALUES FROM ('" + lo.String() + "') TO ('" + hi.String() + "')", nil},
			}
			for _, st := range stmts {
				if _, err := tx.ExecContext(ctx, st.q, st.args...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("sqlstore: %w", err)
		}
	}
	return nil
}

// dropExpiredPartitions drops, oldest first, the partitions of messages
// whose every message may go by the rule of PurgeFinished: it ended before
// finishedBefore (less purgeMargin, for the clocks of the processes that
// made its ids), no campaign whose life overlaps it (its creation to its
// end, each purgeMargin wide) is unfinished or finished since
// finishedBefore, and none of its messages is Pending or Sending. It stops
// at the first partition that must stay, and returns how many it dropped.
// A message made after its campaign finished (a late fallback SMS) belongs
// to a campaign that finished before it, and goes with the partition.
func (s *Store) dropExpiredPartitions(ctx context.Context, finishedBefore time.Time) (int, error) {
	parts, err := messagePartitions(ctx, s.read)
	if err != nil {
		return 0, err
	}
	dropped := 0
	// The newest partition is never dropped: it is the one the clock is in
	// or reaches towards.
	for _, p := range parts[:max(0, len(parts)-1)] {
		if !p.hiTime().Add(purgeMargin).Before(finishedBefore) {
			break
		}
		// A campaign whose life overlaps the partition and that is
		// unfinished or finished since finishedBefore keeps it. (One that
		// finished before finishedBefore may go, wherever its life.)
		var n int
		err := s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM campaigns WHERE created_at < ? "+
			"AND (status NOT IN ('Completed', 'Failed') OR COALESCE(completed_at, updated_at) >= ?) LIMIT 1) c",
			s.ts(p.hiTime().Add(purgeMargin)), s.ts(finishedBefore)).Scan(&n)
		if err != nil {
			return dropped, fmt.Errorf("check partition %s: %w", p.name, err)
		}
		if n > 0 {
			break
		}
		// The partial indexes of the claims and leases answer these.
		err = s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM "+p.name+" WHERE status = 'Pending' AND channel = 'Smpp' "+
			"UNION ALL SELECT 1 FROM "+p.name+" WHERE status = 'Pending' AND channel = 'Chat' "+
			"UNION ALL SELECT 1 FROM "+p.name+" WHERE status = 'Sending' LIMIT 1) m").Scan(&n)
		if err != nil {
			return dropped, fmt.Errorf("check partition %s: %w", p.name, err)
		}
		if n > 0 {
			break
		}
		err = s.write(ctx, "drop partition "+p.name, func(tx *txn) error {
			for _, q := range []string{"SET LOCAL lock_timeout = '" + partitionLockTimeout + "'",
				"ALTER TABLE messages DETACH PARTITION " + p.name, "DROP TABLE " + p.name} {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return dropped, err
		}
		dropped++
	}
	return dropped, nil
}

// partitioner makes partitions ahead of the clock in the background.
type partitioner struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	// grown is nudged when a write inserted many messages: the
	// partitions they landed in may need their statistics read again.
	grown chan struct{}
	// nextDropCheck is when PurgeFinished next looks for partitions to
	// drop.
	mu            sync.Mutex
	nextDropCheck time.Time
}

// startPartitioner makes the partitions needed now, then keeps making them
// every quarter span (at least every 15 s, at most every hour) until the
// store closes. A failure in the background is retried at the next tick:
// the partitions reach two spans ahead, and the default partition takes
// what comes before they are made.
func (s *Store) startPartitioner(ctx context.Context) error {
	if err := s.EnsurePartitions(ctx, time.Now()); err != nil {
		return err
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &partitioner{cancel: cancel, grown: make(chan struct{}, 1)}
	s.partitions = p
	every := min(max(s.partitionSpan/4, 15*time.Second), time.Hour)
	p.done.Add(2)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-bg.Done():
				return
			case <-t.C:
				_ = s.EnsurePartitions(bg, time.Now())
			}
		}
	}()
	go func() {
		defer p.done.Done()
		t := time.NewTicker(analyzeEvery)
		defer t.Stop()
		for {
			select {
			case <-bg.Done():
				return
			case <-t.C:
			case <-p.grown:
				// The server counts a transaction's rows once its
				// backend reports them, a second or more after its end.
				select {
				case <-bg.Done():
					return
				case <-time.After(statsDelay):
				}
			}
			_, _ = s.AnalyzeGrownPartitions(bg)
		}
	}()
	return nil
}

// analyzeEvery spaces the looks for partitions of messages whose
// statistics are behind their rows; a large insert also asks for one
// (partitioner.grown), statsDelay after it.
const (
	analyzeEvery = 10 * time.Second
	statsDelay   = 1500 * time.Millisecond
)

// A partition that took analyzeMinRows new messages since its statistics
// were read is analyzed again. Updates do not count: a claim plan goes
// wrong on a campaign the statistics never saw, not on statuses that
// moved on, and delivery rewrites every message three times.
const (
	analyzeMinRows = 20_000
	// nudgeRows is how many messages a write inserts for it to ask for
	// a look soon.
	nudgeRows = 1000
)

// insertMarks remembers, for each partition of messages, how many
// analyses the server had counted of it and its inserts then: the
// inserts since its statistics are those beyond. Safe for concurrent
// use.
type insertMarks struct {
	mu    sync.Mutex
	marks map[string]insertMark
}

// insertMark is one partition's mark.
type insertMark struct {
	analyses int64 // analyze_count + autoanalyze_count
	inserts  int64 // n_tup_ins when they were seen
}

// due returns the partitions, of those the server reports, that took
// analyzeMinRows inserts since their last analysis. A partition first
// seen counts as new rows all those changed since its statistics (the
// server counts changes, not inserts, from then): at most one analysis
// too many after a start. A partition whose counts went back (the
// server's statistics were reset) starts again from them. Partitions no
// longer reported are forgotten.
func (m *insertMarks) due(stats []partitionStats) []partitionStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := make(map[string]insertMark, len(stats))
	var out []partitionStats
	for _, st := range stats {
		mark, ok := m.marks[st.name]
		switch {
		case !ok:
			mark = insertMark{analyses: st.analyses, inserts: st.inserts - min(st.modified, st.inserts)}
		case mark.analyses != st.analyses || st.inserts < mark.inserts:
			mark = insertMark{analyses: st.analyses, inserts: st.inserts}
		}
		next[st.name] = mark
		if st.inserts-mark.inserts >= analyzeMinRows {
			out = append(out, st)
		}
	}
	m.marks = next
	return out
}

// analyzed notes that this process analyzed the partition name when the
// server had counted its inserts in stats.
func (m *insertMarks) analyzed(st partitionStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.marks == nil {
		m.marks = map[string]insertMark{}
	}
	m.marks[st.name] = insertMark{analyses: st.analyses + 1, inserts: st.inserts}
}

// partitionStats is what the server counts of a partition of messages.
type partitionStats struct {
	name     string
	inserts  int64 // n_tup_ins
	modified int64 // n_mod_since_analyze
	analyses int64 // analyze_count + autoanalyze_count
}

// nudge asks the partitioner to look for partitions to analyze soon.
func (p *partitioner) nudge() {
	select {
	case p.grown <- struct{}{}:
	default:
	}
}

// AnalyzeGrownPartitions reads again the statistics of the partitions of
// messages that took 20,000 new messages since, and returns their names
// (Postgres; SQLite keeps none). The store does it in the background,
// every ten seconds and soon after a large insert, whether autovacuum
// runs or not. A bulk into a partition whose statistics counted none of
// its messages made each claim read and sort every Pending message of the
// campaign to take a hundred: the planner, expecting none, sorted an
// append of the partitions rather than merge their ordered index scans.
func (s *Store) AnalyzeGrownPartitions(ctx context.Context) (_ []string, err error) {
	if s.dialect != dialectPostgres {
		return nil, nil
	}
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT c.relname, t.n_tup_ins, t.n_mod_since_analyze, "+
		"t.analyze_count + t.autoanalyze_count FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "+
		"JOIN pg_stat_user_tables t ON t.relid = c.oid WHERE i.inhparent = 'messages'::regclass ORDER BY c.relname")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: partitions to analyze: %w", err)
	}
	var stats []partitionStats
	for rows.Next() {
		var st partitionStats
		if err := rows.Scan(&st.name, &st.inserts, &st.modified, &st.analyses); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlstore: partitions to analyze: %w", err)
		}
		stats = append(stats, st)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("sqlstore: partitions to analyze: %w", err)
	}
	var names []string
	for _, st := range s.inserted.due(stats) {
		name := st.name
		// ANALYZE gives way to a vacuum or a change of the table
		// rather than wait: the next look tries again.
		err := s.write(ctx, "analyze "+name, func(tx *txn) error {
			if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '1s'"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "ANALYZE "+name)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("sqlstore: %w", err)
		}
		s.inserted.analyzed(st)
		names = append(names, name)
	}
	return names, nil
}

// dropDue tells whether PurgeFinished should look for partitions to drop
// at now, and if so notes that it does: the next look is dropCheckEvery
// later.
func (p *partitioner) dropDue(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Before(p.nextDropCheck) {
		return false
	}
	p.nextDropCheck = now.Add(dropCheckEvery)
	return true
}

// dropFailed puts the next look for partitions to drop ten checks later:
// meanwhile PurgeFinished deletes rows as it would without partitions.
func (p *partitioner) dropFailed(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextDropCheck = now.Add(10 * dropCheckEvery)
}

func (p *partitioner) close() {
	p.cancel()
	p.done.Wait()
}
