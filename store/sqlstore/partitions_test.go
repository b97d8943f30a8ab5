package sqlstore_test

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// openPartitioned opens a Postgres store whose partitions of messages span
// a minute, closed when the test ends.
func openPartitioned(t *testing.T, rawURL string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), rawURL, sqlstore.Config{PartitionSpan: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// partitionOf returns the table each message is stored in, by id.
func partitionOf(t *testing.T, db *sql.DB, ids ...messaging.ID) map[messaging.ID]string {
	t.Helper()
	out := map[messaging.ID]string{}
	for _, id := range ids {
		var name string
		err := db.QueryRowContext(t.Context(), "SELECT tableoid::regclass::text FROM messages WHERE id = $1", id.String()).Scan(&name)
		require.NoError(t, err, "message %s", id)
		out[id] = name
	}
	return out
}

// partitionNames lists the partitions of messages.
func partitionNames(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'messages'::regclass ORDER BY 1")
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		out = append(out, name)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestPostgresMigrationPartitionsExistingMessages: a database of the
// version before partitions, holding messages, is converted when the store
// opens it: its table becomes the first partition with its rows and
// indexes (none built twice), the messages read as before, and new ones
// land in a newer partition.
func TestPostgresMigrationPartitionsExistingMessages(t *testing.T) {
	ctx := t.Context()
	u := pgtest.SchemaURL(t)
	require.NoError(t, sqlstore.MigrateBefore(ctx, u, "20261127008101_message_partitions"))
	db := rawDB(t, u)
	var kind string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT relkind::text FROM pg_class WHERE oid = 'messages'::regclass").Scan(&kind))
	require.Equal(t, "r", kind, "the earlier schema has a plain table")
	_, err := db.ExecContext(ctx, "INSERT INTO messages (id, company_id, campaign_id, due_at, created_at, updated_at, channel, status, phone, external_user_id) "+
		"SELECT ('01900000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, '01900000-0000-7000-8000-00000000000a', "+
		"'01900000-0000-7000-8000-00000000000b', now(), now(), now(), 'Smpp', 'Delivered', '4477009' || g, 'user-' || g "+
		"FROM generate_series(1, 1000) g")
	require.NoError(t, err)

	s := openPartitioned(t, u)
	require.NoError(t, db.QueryRowContext(ctx, "SELECT relkind::text FROM pg_class WHERE oid = 'messages'::regclass").Scan(&kind))
	require.Equal(t, "p", kind, "messages is partitioned")
	var n, indexes int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM messages_p0").Scan(&n))
	require.Equal(t, 1000, n, "the rows stay in the first partition")
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pg_index WHERE indrelid = 'messages_p0'::regclass").Scan(&indexes))
	require.Equal(t, 7, indexes, "the table's own indexes serve the partitioned ones")
	old := messaging.MustParseID("01900000-0000-7000-8000-00000000002a")
	m, err := s.MessageByID(ctx, old)
	require.NoError(t, err)
	require.Equal(t, "447700942", m.Phone)

	// The first partition ends within a minute of the migration.
	later := time.Now().Add(90 * time.Second)
	require.NoError(t, s.EnsurePartitions(ctx, time.Now()))
	msgs := bulkFixture(t, s, messaging.NewIDGenerator(func() time.Time { return later }), 10, nil)
	require.NoError(t, s.InsertMessages(ctx, msgs))
	for id, name := range partitionOf(t, db, msgs[0].ID, msgs[9].ID) {
		require.True(t, strings.HasPrefix(name, "messages_p2"), "message %s in %s", id, name)
	}
	require.Equal(t, "messages_p0", partitionOf(t, db, old)[old])
}

// TestPostgresPartitionsMadeAhead: the store makes partitions ahead of the
// clock; a message beyond them lands in the default partition, and moves
// into the partition made for it when the clock gets there.
func TestPostgresPartitionsMadeAhead(t *testing.T) {
	ctx := t.Context()
	u := pgtest.SchemaURL(t)
	s := openPartitioned(t, u)
	db := rawDB(t, u)
	now := time.Now().UTC()
	names := partitionNames(t, db)
	require.Contains(t, names, "messages_p"+now.Add(time.Minute).Truncate(time.Minute).Format("20060102t1504"), "partitions ahead of the clock")

	later := now.Add(30 * time.Minute)
	msgs := bulkFixture(t, s, messaging.NewIDGenerator(func() time.Time { return later }), 3, nil)
	require.NoError(t, s.InsertMessages(ctx, msgs))
	require.Equal(t, "messages_default", partitionOf(t, db, msgs[0].ID)[msgs[0].ID])

	require.NoError(t, s.EnsurePartitions(ctx, later))
	want := "messages_p" + later.Truncate(time.Minute).Format("20060102t1504")
	for id, name := range partitionOf(t, db, msgs[0].ID, msgs[1].ID, msgs[2].ID) {
		require.Equal(t, want, name, "message %s", id)
	}
	var n int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM messages_default").Scan(&n))
	require.Zero(t, n)
	got, err := s.MessageByID(ctx, msgs[1].ID)
	require.NoError(t, err)
	require.Equal(t, msgs[1].Phone, got.Phone)
	// Every range from the first partition to two minutes past the later
	// clock is covered once.
	require.NoError(t, s.EnsurePartitions(ctx, later))
	require.Contains(t, partitionNames(t, db), "messages_p"+later.Add(time.Minute).Truncate(time.Minute).Format("20060102t1504"))
}

// TestPostgresRetentionDropsWholePartitions: retention drops an old
// partition whole once every campaign whose life overlaps it finished
// before the cutoff, and keeps it while one is still running.
func TestPostgresRetentionDropsWholePartitions(t *testing.T) {
	ctx := t.Context()
	u := pgtest.SchemaURL(t)
	s := openPartitioned(t, u)
	db := rawDB(t, u)
	// Two campaigns made long ago: their messages are in the first
	// partition. The first is finished and delivered, the second runs.
	ids := messaging.NewIDGenerator(func() time.Time { return time.Date(2026, time.March, 2, 9, 30, 0, 0, time.UTC) })
	done := bulkFixture(t, s, ids, 10, nil)
	at := done[0].CreatedAt
	c := messaging.Campaign{ID: ids.New(), CompanyID: done[0].CompanyID, Name: "running", Channel: messaging.ChannelSMS,
		Mode: messaging.ModeBulk, Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText,
		Planned: 10, CreatedAt: at, UpdatedAt: at}
	require.NoError(t, s.CreateCampaign(ctx, &c, 1000))
	running := make([]*messaging.Message, 10)
	for i := range running {
		m := *done[i]
		m.ID, m.CampaignID = ids.New(), c.ID
		running[i] = &m
	}
	require.NoError(t, s.InsertMessages(ctx, done))
	require.NoError(t, s.InsertMessages(ctx, running))
	require.Equal(t, "messages_p0", partitionOf(t, db, running[0].ID)[running[0].ID])
	finish := func(c messaging.ID) {
		t.Helper()
		_, err := db.ExecContext(ctx, "UPDATE messages SET status = 'Delivered' WHERE campaign_id = $1", c.String())
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "UPDATE campaigns SET status = 'Completed', completed_at = '2026-03-02T10:00:00Z' WHERE id = $1", c.String())
		require.NoError(t, err)
	}
	finish(done[0].CampaignID)
	_, err := db.ExecContext(ctx, "UPDATE campaigns SET status = 'InProgress' WHERE id = $1", running[0].CampaignID.String())
	require.NoError(t, err)

	now := time.Now().UTC()
	purgeAll := func(now time.Time) {
		t.Helper()
		for range 10 {
			out, err := s.PurgeFinished(ctx, campaign.Purge{FinishedBefore: now.Add(10 * time.Minute), Limit: 1000, Now: now})
			require.NoError(t, err)
			if out.Campaign.IsZero() {
				return
			}
		}
		t.Fatal("the purge did not end")
	}
	purgeAll(now)
	require.Contains(t, partitionNames(t, db), "messages_p0", "a running campaign keeps the partition")
	_, err = s.MessageByID(ctx, done[0].ID)
	require.Error(t, err, "the finished campaign's rows are purged")
	_, err = s.MessageByID(ctx, running[0].ID)
	require.NoError(t, err)

	finish(running[0].CampaignID)
	purgeAll(now.Add(2 * time.Minute))
	require.NotContains(t, partitionNames(t, db), "messages_p0", "the partition is dropped whole")
	_, err = s.MessageByID(ctx, running[0].ID)
	require.Error(t, err)
	got, err := s.GetCampaign(context.WithoutCancel(ctx), running[0].CompanyID, running[0].CampaignID)
	require.NoError(t, err, "the campaign stays")
	require.Equal(t, messaging.CampaignCompleted, got.Status)
}

// TestPostgresClaimAfterABulkIntoAnalyzedPartitions: a bulk lands in
// partitions analyzed while they held none of its messages. A claim of a
// hundred then reads and sorts every Pending message of the campaign (the
// planner, expecting none, sorts an append of the partitions). The store
// analyzes such partitions in the background soon after the insert; then
// a claim reads about what it takes.
func TestPostgresClaimAfterABulkIntoAnalyzedPartitions(t *testing.T) {
	u := pgtest.SchemaURL(t)
	s := openPartitioned(t, u)
	ctx := t.Context()
	raw := rawDB(t, u)
	_, err := raw.ExecContext(ctx, "ANALYZE messages")
	require.NoError(t, err)

	const n = 20_000
	msgs := startedFixture(t, s, messaging.NewIDGenerator(nil), n)
	now := msgs[0].CreatedAt.Add(time.Minute)
	read := func(plan string) int { // rows the claim's scans of messages returned
		total := 0
		for _, m := range regexp.MustCompile(`Scan (?:using \S+ )?on messages_\S+ messages_\d+ \(actual rows=(\d+) loops=1\)`).
			FindAllStringSubmatch(plan, -1) {
			k, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			total += k
		}
		return total
	}
	first, err := sqlstore.ExplainClaim(ctx, s, now, 100, false)
	require.NoError(t, err)
	var plan string
	deadline := time.Now().Add(30 * time.Second)
	for {
		plan, err = sqlstore.ExplainClaim(ctx, s, now, 100, false)
		require.NoError(t, err)
		if read(plan) <= 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("rows a claim of 100 read: %d at once, %d once the partitions were analyzed", read(first), read(plan))
	require.LessOrEqual(t, read(plan), 200, "a claim after the background analysis:\n%s", plan)
	again, err := s.AnalyzeGrownPartitions(ctx)
	require.NoError(t, err)
	require.Empty(t, again, "nothing left to analyze")
}

// TestPostgresPartitionsAnalyzedForInsertsNotUpdates: the store analyzes
// a partition of messages again once it took 20,000 new messages, not
// when delivery rewrote 20,000 of its rows (which left the claim's plan
// as it was, and cost an ANALYZE every ten seconds of a busy send).
func TestPostgresPartitionsAnalyzedForInsertsNotUpdates(t *testing.T) {
	u := pgtest.SchemaURL(t)
	s := openPartitioned(t, u)
	ctx := t.Context()
	raw := rawDB(t, u)
	counts := func() (analyses, inserts, modified int64) {
		t.Helper()
		require.NoError(t, raw.QueryRowContext(ctx, "SELECT coalesce(sum(t.analyze_count + t.autoanalyze_count), 0), "+
			"coalesce(sum(t.n_tup_ins), 0), coalesce(sum(t.n_mod_since_analyze), 0) FROM pg_inherits i "+
			"JOIN pg_stat_user_tables t ON t.relid = i.inhrelid WHERE i.inhparent = 'messages'::regclass").
			Scan(&analyses, &inserts, &modified))
		return analyses, inserts, modified
	}
	// until calls AnalyzeGrownPartitions (the background does too) until
	// ok holds of the server's counts, for at most 30 s.
	until := func(what string, ok func(analyses, inserts, modified int64) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := s.AnalyzeGrownPartitions(ctx)
			require.NoError(t, err)
			if ok(counts()) {
				return
			}
			require.True(t, time.Now().Before(deadline), "%s within 30 s", what)
			time.Sleep(200 * time.Millisecond)
		}
	}
	const n = 20_000
	ids := messaging.NewIDGenerator(nil)
	first := startedFixture(t, s, ids, n)
	until("a new partition's 20,000 messages analyzed", func(a, _, _ int64) bool { return a >= 1 })
	before, inserted, _ := counts()

	_, err := raw.ExecContext(ctx, "UPDATE messages SET status = 'Sending', updated_at = now()")
	require.NoError(t, err)
	_, err = raw.ExecContext(ctx, "UPDATE messages SET status = 'Sent', updated_at = now()")
	require.NoError(t, err)
	// The server reports a backend's counts a second or so after its
	// transaction; a look before would see no updates.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, _, m := counts(); m >= 2*n {
			break
		}
		require.True(t, time.Now().Before(deadline), "the server counts the updates within 30 s")
	}
	names, err := s.AnalyzeGrownPartitions(ctx)
	require.NoError(t, err)
	require.Empty(t, names, "updates alone do not call for statistics")
	after, _, _ := counts()
	require.Equal(t, before, after, "no partition analyzed for 40,000 updates")

	more := make([]*messaging.Message, n)
	for i, m := range first {
		c := *m
		c.ID, c.Phone, c.Status = ids.New(), "4478"+c.Phone[4:], messaging.StatusPending
		more[i] = &c
	}
	require.NoError(t, s.InsertMessages(ctx, more))
	until("20,000 more messages analyzed", func(a, i, _ int64) bool { return i >= inserted+n && a > after })
}
