package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// TestRecoverSparesAClaimMadeMeanwhile: on Postgres, a recovery that
// found a dead process's claim and waits for its row spares the message
// when, meanwhile, a process restarted under the same name wrote a fresh
// heartbeat and claimed the message again: the heartbeats the recovery
// read at its start no longer tell whether that claim ended.
func TestRecoverSparesAClaimMadeMeanwhile(t *testing.T) {
	u := pgtest.SchemaURL(t)
	s := open(t, u)
	db := rawDB(t, u)
	ctx := t.Context()
	msgs := startedFixture(t, s, messaging.NewIDGenerator(nil), 2)
	t0 := msgs[0].CreatedAt.Add(time.Minute)
	require.NoError(t, s.Heartbeat(ctx, "p2", t0))
	claimed, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Owner: "p2", Now: t0, LeaseUntil: t0.Add(time.Hour), Limit: 2})
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	now := t0.Add(20 * time.Minute)
	require.NoError(t, s.Heartbeat(ctx, "p1", now))

	// Another session holds the first message's row, as the restarted p2
	// does while it takes the message back and claims it again.
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "SELECT id FROM messages WHERE id = $1 FOR UPDATE", msgs[0].ID.String())
	require.NoError(t, err)

	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := s.RecoverClaims(context.WithoutCancel(ctx), delivery.Recovery{Now: now, StaleBefore: now.Add(-10 * time.Minute), Self: "p1"})
		done <- result{n, err}
	}()
	// The recovery read p2's heartbeat as stale, and waits for the row.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "+
			"AND datname = current_database() AND query LIKE '%UPDATE messages SET status = ''Pending''%'").Scan(&waiting))
		if waiting > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the recovery never waited for the row")
		time.Sleep(10 * time.Millisecond)
	}
	_, err = tx.ExecContext(ctx, "UPDATE claimers SET heartbeat_at = $1 WHERE name = 'p2'", now)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE messages SET attempts = attempts + 1, lease_until = $1 WHERE id = $2",
		now.Add(time.Hour), msgs[0].ID.String())
	require.NoError(t, err)
	require.NoError(t, tx.Commit())

	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, 1, r.n, "the second message only")
	got, err := s.GetMessage(ctx, msgs[0].CompanyID, msgs[0].ID)
	require.NoError(t, err)
	require.Equal(t, messaging.StatusSending, got.Status, "claimed again meanwhile: spared")
	got, err = s.GetMessage(ctx, msgs[1].CompanyID, msgs[1].ID)
	require.NoError(t, err)
	require.Equal(t, messaging.StatusPending, got.Status)
}
