package sqlstore

import (
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// TestPostgresPlansFollowTableGrowth: a statement the store prepared on a
// connection while the tables were small, and ran many times then, looks
// its rows up by index once the tables have grown, as the delivery
// statements of a process started on a new database must: a plan kept
// from the empty or small tables scans all of messages or sms_parts per
// batch.
func TestPostgresPlansFollowTableGrowth(t *testing.T) {
	s, err := Open(t.Context(), pgtest.SchemaURL(t), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	conn, err := s.db.DB.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()

	const id = "01900000-0000-7000-8000-000000000001"
	const at = "2026-01-01T00:00:00Z"
	q := s.queries()
	statements := []struct {
		name, text string
		args       []any
	}{
		{"lockMessages", q.lockMessages, []any{`["` + id + `"]`, id, id}},
		{"writeStates", q.writeStates[setSentAt], []any{`[["` + id + `","Sent","` + at + `","` + at + `"]]`, id, id}},
		{"readParts", q.readParts, []any{`["p1"]`}},
		{"receiptsUpdate", q.receiptsUpdate, []any{`[["p1","DELIVRD","000","` + at + `","` + at + `"]]`}},
		{"partReceipts", q.partReceipts, []any{`["` + id + `"]`}},
		{"claim", q.claimPostgres[0], []any{`[]`, at, 100, 100, at, "owner", at}},
		{"claimQuotas", q.claimPostgresQuotas[0], []any{`[]`, `[]`, `[]`, at, 100, 100, 100, 100, at, "owner", at}},
	}
	execute := func(name string, n int) string {
		params := make([]string, n)
		for i := range params {
			params[i] = fmt.Sprintf("$%d", i+1)
		}
		return "EXECUTE " + name + "(" + strings.Join(params, ", ") + ")"
	}
	// A few hundred rows first, as a process started on a new database
	// holds at its first receipts: a plan kept from tables this small
	// scans them (with force_generic_plan on the connection, this test
	// fails; a run of bench/product then spent a fifth of the backends'
	// CPU comparing provider ids).
	grow := func(from, to int) {
		t.Helper()
		_, err := conn.ExecContext(ctx, "INSERT INTO messages (id, company_id, campaign_id, due_at, created_at, updated_at, channel, status, phone) "+
			"SELECT ('01900000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, gen_random_uuid(), gen_random_uuid(), now(), now(), now(), "+
			"'Smpp', 'Sent', '+4477009' || g FROM generate_series($1::int, $2::int) g", from, to)
		require.NoError(t, err)
		_, err = conn.ExecContext(ctx, "INSERT INTO sms_parts (provider_id, message_id, created_at, part_count) "+
			"SELECT 'p' || g, ('01900000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, now(), 1 + g % 2 FROM generate_series($1::int, $2::int) g",
			from, to)
		require.NoError(t, err)
	}
	grow(1, 500)
	for _, st := range statements {
		_, err := conn.ExecContext(ctx, "PREPARE "+st.name+" AS "+s.placeholders(st.text))
		require.NoError(t, err, st.name)
		// Postgres settles on a generic plan after five runs.
		for range 8 {
			_, err := conn.ExecContext(ctx, execute(st.name, len(st.args)), st.args...)
			require.NoError(t, err, st.name)
		}
	}

	grow(501, 20000)

	for _, st := range statements {
		rows, err := conn.QueryContext(ctx, "EXPLAIN "+execute(st.name, len(st.args)), st.args...)
		require.NoError(t, err, st.name)
		plan := readPlan(t, rows)
		require.NotRegexp(t, `Seq Scan on (messages_\w+|sms_parts)\b`, plan, "%s plan:\n%s", st.name, plan)
		require.Regexp(t, `Index`, plan, "%s plan:\n%s", st.name, plan)
	}
}

// TestSurveySummaryReadsTheIndexOnly: the survey summary counts a
// campaign's answers from an index that holds the option, without a read
// of the table per answer.
func TestSurveySummaryReadsTheIndexOnly(t *testing.T) {
	s, err := Open(t.Context(), "sqlite://"+t.TempDir()+"/plans.db", Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	plan := sqlitePlan(t, s, countByOption, make([]byte, 16), make([]byte, 16))
	require.Contains(t, plan, "USING COVERING INDEX survey_results_summary", "plan:\n%s", plan)
}

// TestSQLiteClaimOfOneCampaignReadsTheClaimIndex: the claim of the
// messages of one campaign finds them through the claim index (Pending
// messages only), whatever number of messages were sent before them, and
// updates them by primary key.
func TestSQLiteClaimOfOneCampaignReadsTheClaimIndex(t *testing.T) {
	s, err := Open(t.Context(), "sqlite://"+t.TempDir()+"/plans.db", Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	plan := sqlitePlan(t, s, s.queries().claimSQLiteOne, 1, "owner", 1, make([]byte, 16), "Smpp", 1, 100)
	require.Contains(t, plan, "USING COVERING INDEX messages_claim", "plan:\n%s", plan)
	require.Contains(t, plan, "sqlite_autoindex_messages_1 (id=?)", "plan:\n%s", plan)
	require.NotContains(t, plan, "SCAN messages", "plan:\n%s", plan)
}

// sqlitePlan returns SQLite's query plan of q, one step per line.
func sqlitePlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.read.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		fmt.Fprintln(&plan, detail)
	}
	require.NoError(t, rows.Err())
	return plan.String()
}

// TestPostgresPurgeReadsThePrimaryKeyInOrder: a purge batch reads a
// campaign's messages through the primary key, in id order, and stops at
// the batch's last row, whatever the planner estimates. Costs that make
// random reads look dear (as stale row estimates did in a running server)
// lead Postgres to read every row of the span and sort them, unless the
// store's purge settings apply.
func TestPostgresPurgeReadsThePrimaryKeyInOrder(t *testing.T) {
	s, err := Open(t.Context(), pgtest.SchemaURL(t), Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	// 80,000 messages of two campaigns, one in eight of the purged one.
	_, err = s.db.ExecContext(ctx, "INSERT INTO messages (id, company_id, campaign_id, due_at, created_at, updated_at, channel, status, phone) "+
		"SELECT ('01900000-0001-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, '01900000-0000-7000-8000-00000000000a', "+
		"CASE WHEN g % 8 = 0 THEN '01900000-0000-7000-8000-00000000000c'::uuid ELSE '01900000-0000-7000-8000-00000000000b'::uuid END, "+
		"now(), now(), now(), 'Smpp', 'Delivered', '+4477009' || g FROM generate_series(1, 80000) g")
	require.NoError(t, err)
	_, err = s.db.ExecContext(ctx, "ANALYZE messages")
	require.NoError(t, err)

	plan := func(settings bool) string {
		tx, err := s.db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		_, err = tx.ExecContext(ctx, "SET LOCAL random_page_cost = 1000")
		require.NoError(t, err)
		if settings {
			_, err = tx.ExecContext(ctx, purgeSettings)
			require.NoError(t, err)
		}
		lo, hi := "01900000-0001-7000-8000-000000000000", "01900000-0001-7fff-ffff-ffffffffffff"
		rows, err := tx.QueryContext(ctx, "EXPLAIN "+purgeMessages, lo, hi, lo, hi, "01900000-0000-7000-8000-00000000000c", 1000)
		require.NoError(t, err)
		return readPlan(t, rows)
	}
	without := plan(false)
	ordered := `Index Scan using messages_p0_pkey on messages_p0 messages_\d`
	require.NotRegexp(t, ordered, without, "the costs alone keep the ordered scan:\n%s", without)
	with := plan(true)
	require.Regexp(t, ordered, with, "plan:\n%s", with)
	// The span's partition only: the messages of 2024 are all in the
	// first one.
	require.NotRegexp(t, `on messages_(default|p2)`, with, "plan:\n%s", with)
	require.NotRegexp(t, `Bitmap|Seq Scan on messages|Sort`, with, "plan:\n%s", with)
}

// readPlan returns the lines of a Postgres EXPLAIN, one a line, and
// closes rows.
func readPlan(t *testing.T, rows *sql.Rows) string {
	t.Helper()
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		fmt.Fprintln(&plan, line)
	}
	require.NoError(t, rows.Err())
	return plan.String()
}

// TestSQLiteCampaignMessagesReadThePrimaryKey: a page of one campaign's
// messages (with or without a status) is read backwards through the
// primary key from the campaign's creation on, without reading the rest
// of the company's messages or sorting.
func TestSQLiteCampaignMessagesReadThePrimaryKey(t *testing.T) {
	s, err := Open(t.Context(), "sqlite://"+t.TempDir()+"/plans.db", Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ids := messaging.NewIDGenerator(nil)
	for _, status := range []messaging.MessageStatus{"", messaging.StatusFailed} {
		l := s.messageListing(ids.New(), messaging.MessageFilter{CampaignID: ids.New(), Status: status})
		for _, q := range []string{"SELECT COUNT(*)" + l.from, "SELECT " + l.columns + l.from + " ORDER BY " + l.order + " LIMIT 50"} {
			plan := sqlitePlan(t, s, q, l.args...)
			require.Contains(t, plan, "sqlite_autoindex_messages_1 (id>?)", "plan of %s:\n%s", q, plan)
			require.NotContains(t, plan, "TEMP B-TREE", "plan of %s:\n%s", q, plan)
		}
	}
}

// TestPostgresBatchesReadTheirPartitionsOnly: on a store whose messages
// are partitioned, the delivery's batch statements (reading the statuses
// of a batch and writing them) read only the partitions holding the
// batch's ids, not every partition: with many partitions, probing each
// one cost the backends more than the update itself. Their plan is made
// once for every partition (a generic plan); each run prunes it to the
// batch's partitions before it reads.
func TestPostgresBatchesReadTheirPartitionsOnly(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, pgtest.SchemaURL(t), Config{PartitionSpan: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	now := time.Now().UTC()
	for i := range 6 {
		require.NoError(t, s.EnsurePartitions(ctx, now.Add(time.Duration(i)*time.Minute)))
	}
	var parts int
	require.NoError(t, s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pg_inherits WHERE inhparent = 'messages'::regclass").Scan(&parts))
	require.GreaterOrEqual(t, parts, 6, "partitions to choose from")

	gen := messaging.NewIDGenerator(func() time.Time { return now.Add(3 * time.Minute) })
	ids := []messaging.ID{gen.New(), gen.New()}
	slicesSortIDs(ids)
	at := now.Format(time.RFC3339Nano)
	q := s.queries()
	args := func(batch string) []any { return append([]any{batch}, s.idBounds(ids)...) }
	statements := []struct {
		name, text string
		args       []any
	}{
		{"lockMessages", q.lockMessages, args(s.jsonIDs(ids))},
		{"writeStates", q.writeStates[setSentAt], args(`[["` + ids[0].String() + `","Sent","` + at + `","` + at + `"],["` +
			ids[1].String() + `","Sent","` + at + `","` + at + `"]]`)},
	}
	want := "messages_p" + now.Add(3*time.Minute).Truncate(time.Minute).Format("20060102t1504")
	conn, err := s.db.DB.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	for _, st := range statements {
		params := make([]string, len(st.args))
		for i := range params {
			params[i] = fmt.Sprintf("$%d", i+1)
		}
		_, err := conn.ExecContext(ctx, "PREPARE "+st.name+" AS "+s.placeholders(st.text))
		require.NoError(t, err, st.name)
		rows, err := conn.QueryContext(ctx, "EXPLAIN EXECUTE "+st.name+"("+strings.Join(params, ", ")+")", st.args...)
		require.NoError(t, err, st.name)
		plan := readPlan(t, rows)
		read := regexp.MustCompile(`Scan(?: using \S+)? on (messages_(?:p\d+t\d+|p0|default))\b`).FindAllStringSubmatch(plan, -1)
		require.NotEmpty(t, read, "%s plan:\n%s", st.name, plan)
		for _, m := range read {
			require.Equal(t, want, m[1], "%s reads only the batch's partition; plan:\n%s", st.name, plan)
		}
	}
}

// TestPostgresReadsByNumberArePlannedOncePerConnection: on a store whose
// messages are partitioned, the listings by phone number and by external
// user id, which name no id and so read every partition, are prepared on
// the connection and planned once for all their calls (a generic plan),
// not for each call: planning every partition per call cost ten times the
// read with 25 partitions, and grew with them. They still find the rows
// of every partition, newest first.
func TestPostgresReadsByNumberArePlannedOncePerConnection(t *testing.T) {
	ctx := t.Context()
	// One connection, so that pg_prepared_statements below is the
	// listings' session.
	s, err := Open(ctx, pgtest.SchemaURL(t), Config{PartitionSpan: time.Minute, MaxOpenConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	now := time.Now().UTC().Truncate(time.Minute)
	for i := range 6 {
		require.NoError(t, s.EnsurePartitions(ctx, now.Add(time.Duration(i)*time.Minute)))
	}
	company := messaging.NewIDGenerator(time.Now).New()
	var ids []messaging.ID
	for i := range 6 {
		id := messaging.NewIDGenerator(func() time.Time { return now.Add(time.Duration(i)*time.Minute + time.Second) }).New()
		ids = append(ids, id)
		_, err := s.db.DB.ExecContext(ctx, "INSERT INTO messages (id, company_id, campaign_id, due_at, created_at, updated_at, channel, status, phone, external_user_id) "+
			"VALUES ($1, $2, $3, $4, $4, $4, 'Smpp', 'Delivered', '+447700900001', 'user-1')",
			id.String(), company.String(), company.String(), now.Add(time.Duration(i)*time.Minute+time.Second))
		require.NoError(t, err)
	}
	var spread int
	require.NoError(t, s.db.QueryRowContext(ctx, "SELECT COUNT(DISTINCT tableoid) FROM messages").Scan(&spread))
	require.Equal(t, 6, spread, "one message a partition")

	const calls = 8
	for _, f := range []messaging.MessageFilter{{Phone: "+447700900001"}, {ExternalUserID: "user-1"}} {
		for range calls {
			got, total, err := s.ListMessages(ctx, company, messaging.MessageFilter{Phone: f.Phone, ExternalUserID: f.ExternalUserID,
				PageRequest: messaging.PageRequest{Page: 1, PageSize: 4}})
			require.NoError(t, err)
			require.Equal(t, 6, total)
			require.Len(t, got, 4)
			require.Equal(t, ids[5], got[0].ID, "newest first")
			require.Equal(t, ids[2], got[3].ID)
		}
	}
	rows, err := s.db.QueryContext(ctx, "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements "+
		"WHERE statement LIKE '%FROM messages WHERE company_id = $1 AND %'")
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var st string
		var generic, custom int
		require.NoError(t, rows.Scan(&st, &generic, &custom))
		require.Equal(t, calls, generic, "generic plans run: %s", st)
		require.Zero(t, custom, "custom plans made: %s", st)
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 4, n, "the count and the page of each listing prepared")
}

// TestPostgresSummaryReadsTheRecentPartitionsOnly: the summary of the
// messages created since a time reads only the partitions of messages
// from that time on (less the store's margin for clocks), not the older
// ones, for one company and for all of them.
func TestPostgresSummaryReadsTheRecentPartitionsOnly(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, pgtest.SchemaURL(t), Config{PartitionSpan: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	now := time.Now().UTC()
	for i := range 6 {
		require.NoError(t, s.EnsurePartitions(ctx, now.Add(time.Duration(i)*time.Minute)))
	}
	// 20,000 messages a minute from now, and 20,000 four minutes from
	// now, of ten companies.
	company := "01900000-0000-7000-8000-00000000000a"
	for _, minutes := range []int{1, 4} {
		when := now.Add(time.Duration(minutes) * time.Minute)
		lo := idAt(when, 0)
		_, err = s.db.ExecContext(ctx, "INSERT INTO messages (id, company_id, campaign_id, due_at, created_at, updated_at, channel, status, phone) "+
			"SELECT ('"+lo.String()[:24]+"' || lpad(to_hex(g), 12, '0'))::uuid, "+
			"('01900000-0000-7000-8000-00000000000' || to_hex(g % 10 + 1))::uuid, gen_random_uuid(), ?, ?, ?, "+
			"'Smpp', 'Delivered', '+4477009' || g FROM generate_series(1, 20000) g", when, when, when)
		require.NoError(t, err)
	}
	_, err = s.db.ExecContext(ctx, "ANALYZE messages")
	require.NoError(t, err)

	since := now.Add(3 * time.Minute)
	first := since.Add(-purgeMargin).Truncate(time.Minute)
	partition := regexp.MustCompile(`on (messages_(?:p(\d+t\d+)|p0|default))\b`)
	for _, one := range []bool{true, false} {
		args := []any{s.id(idAt(since.Add(-purgeMargin), 0)), s.ts(since)}
		if one {
			args = append(args, company)
		}
		rows, err := s.read.QueryContext(ctx, "EXPLAIN "+s.summaryQuery(one), args...)
		require.NoError(t, err)
		plan := readPlan(t, rows)
		read := partition.FindAllStringSubmatch(plan, -1)
		require.NotEmpty(t, read, "plan:\n%s", plan)
		for _, m := range read {
			require.NotEqual(t, "messages_p0", m[1], "plan:\n%s", plan)
			if m[1] == "messages_default" {
				continue // ids past the newest partition
			}
			at, err := time.Parse("20060102t1504", m[2])
			require.NoError(t, err)
			require.False(t, at.Before(first), "company %v reads %s, older than %s; plan:\n%s", one, m[1], first, plan)
		}
		if one {
			require.Regexp(t, `Index|Seq Scan`, plan, "plan:\n%s", plan)
		}
	}
}

// TestSQLiteSummaryReadsThePrimaryKey: the summary of a company's
// messages since a time reads the primary key from that time on, not the
// company's index (every message it ever had).
func TestSQLiteSummaryReadsThePrimaryKey(t *testing.T) {
	s, err := Open(t.Context(), "sqlite://"+t.TempDir()+"/plans.db", Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	since := time.Now()
	for _, one := range []bool{true, false} {
		args := []any{s.id(idAt(since, 0)), s.ts(since)}
		if one {
			args = append(args, s.id(messaging.NewIDGenerator(nil).New()))
		}
		plan := sqlitePlan(t, s, s.summaryQuery(one), args...)
		require.Contains(t, plan, "sqlite_autoindex_messages_1 (id>?)", "plan:\n%s", plan)
	}
}
