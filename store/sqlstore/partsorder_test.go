package sqlstore_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// TestCrossReceiptsFormNoCycle: on Postgres, two batches written at once,
// each recording the Sent of its own SMS and carrying the receipt of the
// other's, never wait for each other both ways. It is what replicas on
// one system_id do: the SMSC returns a receipt on any session, so a
// process's batch holds receipts of parts another process records in a
// transaction still open.
//
// Both batches also carry a receipt of a part of a long message whose row
// another session holds: each stops there, its own part recorded and not
// committed, until the test lets both go on at once.
func TestCrossReceiptsFormNoCycle(t *testing.T) {
	base := pgtest.SchemaURL(t)
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	app := "herald_cross_" + fmt.Sprint(time.Now().UnixNano())
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s := open(t, u.String())
	db := rawDB(t, base)
	ctx := t.Context()

	msgs := startedFixture(t, s, messaging.NewIDGenerator(nil), 3)
	t0 := msgs[0].CreatedAt.Add(time.Minute)
	claimed, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Owner: "p1", Now: t0, LeaseUntil: t0.Add(time.Hour), Limit: 3})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	// msgs[2] is a long message, recorded Sent before.
	long := delivery.StatusUpdate{MessageID: msgs[2].ID, Status: messaging.StatusSent, At: t0, ProviderMessageID: "K1", PartIDs: []string{"K1", "K2"}}
	applied, err := s.ApplyUpdates(ctx, []delivery.StatusUpdate{long})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, applied)

	hold, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback() }()
	_, err = hold.ExecContext(ctx, "SELECT provider_id FROM sms_parts WHERE provider_id IN ('K1', 'K2') FOR UPDATE")
	require.NoError(t, err)

	at := t0.Add(time.Second)
	sent := func(m *messaging.Message, pid string) delivery.StatusUpdate {
		return delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent, At: at, ProviderMessageID: pid, PartIDs: []string{pid}}
	}
	rcpt := func(pid string) delivery.Receipt {
		return delivery.Receipt{ProviderID: pid, State: delivery.StateDelivered, Err: "000", At: at.Add(time.Second)}
	}
	type result struct {
		br  delivery.BatchResult
		err error
	}
	done := make(chan result, 2)
	var results []result
	t.Cleanup(func() { // before the schema is dropped
		for len(results) < 2 {
			results = append(results, <-done)
		}
	})
	now := at.Add(2 * time.Second)
	go func() {
		br, err := s.ApplyBatch(context.WithoutCancel(ctx), []delivery.StatusUpdate{sent(msgs[0], "A1")},
			[]delivery.Receipt{rcpt("K1"), rcpt("B1")}, now)
		done <- result{br, err}
	}()
	go func() {
		br, err := s.ApplyBatch(context.WithoutCancel(ctx), []delivery.StatusUpdate{sent(msgs[1], "B1")},
			[]delivery.Receipt{rcpt("K2"), rcpt("A1")}, now)
		done <- result{br, err}
	}()

	// Both wait, behind the held rows or one behind the other.
	waiting := func() [][2]int {
		rows, err := db.QueryContext(ctx, "SELECT pid, unnest(pg_blocking_pids(pid)) FROM pg_stat_activity WHERE application_name = $1", app)
		require.NoError(t, err)
		defer rows.Close()
		var edges [][2]int
		for rows.Next() {
			var e [2]int
			require.NoError(t, rows.Scan(&e[0], &e[1]))
			edges = append(edges, e)
		}
		require.NoError(t, rows.Err())
		return edges
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 "+
			"AND wait_event_type = 'Lock'", app).Scan(&n))
		if n == 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the batches never both waited")
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, hold.Commit())

	// Until both are written, no two of their sessions wait for each
	// other: Postgres would break such a cycle only after deadlock_timeout,
	// failing one batch.
	for len(results) < 2 {
		select {
		case r := <-done:
			results = append(results, r)
			continue
		case <-time.After(2 * time.Millisecond):
		}
		edges := waiting()
		for _, e := range edges {
			require.False(t, slices.Contains(edges, [2]int{e[1], e[0]}), "sessions %d and %d wait for each other", e[0], e[1])
		}
	}
	// Each message moved to Delivered once, named by the receipt or the
	// Sent that moved it.
	moved := 0
	for _, r := range results {
		require.NoError(t, r.err)
		require.Equal(t, []bool{true}, r.br.Applied)
		for _, st := range slices.Concat(r.br.Then, r.br.Moved) {
			if st != "" {
				require.Equal(t, messaging.StatusDelivered, st)
				moved++
			}
		}
	}
	require.Equal(t, 3, moved)
	for i, m := range msgs {
		got, err := s.GetMessage(ctx, m.CompanyID, m.ID)
		require.NoError(t, err)
		require.Equal(t, messaging.StatusDelivered, got.Status, "message %d", i)
	}
	var kept int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM sms_parts WHERE message_id IS NULL").Scan(&kept))
	require.Zero(t, kept, "receipts left waiting for their part")
}
