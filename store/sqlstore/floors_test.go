package sqlstore_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// scanBuffers is the total of the shared buffers the claim's scan of the
// claim index (its Merge Append of the partitions) hit and read.
func scanBuffers(t *testing.T, plan string) int {
	t.Helper()
	m := regexp.MustCompile(`Merge Append[^\n]*\n[^\n]*\n\s*Buffers: shared hit=(\d+)(?: read=(\d+))?`).FindStringSubmatch(plan)
	require.NotNil(t, m, "plan:\n%s", plan)
	n, _ := strconv.Atoi(m[1])
	if m[2] != "" {
		r, _ := strconv.Atoi(m[2])
		n += r
	}
	return n
}

// TestClaimFloorsSkipClaimedEntries: on Postgres, a claim's messages
// leave entries in the claim index until a vacuum. A campaign's next
// claim starts past those its process claimed, in the index itself,
// instead of stepping over all of them.
func TestClaimFloorsSkipClaimedEntries(t *testing.T) {
	s := open(t, pgtest.SchemaURL(t))
	sqlstore.SetClaimFloorSpan(s, time.Hour)
	ctx := t.Context()
	msgs := startedFixture(t, s, messaging.NewIDGenerator(nil), 6000)
	now := msgs[0].CreatedAt.Add(time.Minute)
	for range 40 {
		got, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Owner: "p1", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 100})
		require.NoError(t, err)
		require.Len(t, got, 100)
	}
	with, err := sqlstore.ExplainClaim(ctx, s, now, 100, true)
	require.NoError(t, err)
	without, err := sqlstore.ExplainClaim(ctx, s, now, 100, false)
	require.NoError(t, err)
	require.Regexp(t, `Index Cond: .*ROW\(`, with, "the floor bounds the index scan:\n%s", with)
	bw, bwo := scanBuffers(t, with), scanBuffers(t, without)
	t.Logf("buffers of a claim after 4,000 claimed: %d with the floor, %d without", bw, bwo)
	require.Less(t, bw*4, bwo, "with:\n%s\nwithout:\n%s", with, without)
}

// TestClaimFloorsDropWhenMessagesComeBack: messages sent back to Pending
// (a withdrawal, a retry) or taken back by a recovery are claimed first
// again, below the floor their claim left.
func TestClaimFloorsDropWhenMessagesComeBack(t *testing.T) {
	s := open(t, pgtest.SchemaURL(t))
	sqlstore.SetClaimFloorSpan(s, time.Hour)
	ctx := t.Context()
	msgs := startedFixture(t, s, messaging.NewIDGenerator(nil), 500)
	now := msgs[0].CreatedAt.Add(time.Minute)
	claim := func(owner string) []messaging.Message {
		got, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Owner: owner, Now: now, LeaseUntil: now.Add(time.Hour), Limit: 100})
		require.NoError(t, err)
		require.Len(t, got, 100)
		return got
	}

	first := claim("p1")
	var back []delivery.StatusUpdate
	for _, m := range first[:10] {
		back = append(back, delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusPending, At: now, DueAt: m.DueAt})
	}
	_, err := s.ApplyUpdates(ctx, back)
	require.NoError(t, err)
	again := claim("p1")
	for i := range 10 {
		require.Equal(t, first[i].ID, again[i].ID, "withdrawn message %d claimed first", i)
	}

	claim("p1")
	n, err := s.RecoverClaims(ctx, delivery.Recovery{Now: now, Owner: "p1", Self: "p2"})
	require.NoError(t, err)
	require.Equal(t, 290, n)
	got := claim("p2")
	require.Equal(t, first[0].ID, got[0].ID, "recovered messages claimed first")
}

// TestClaimFloorsServeForASpan: a message another process sends back
// below this process's floor is claimed once the floor's span is over.
func TestClaimFloorsServeForASpan(t *testing.T) {
	u := pgtest.SchemaURL(t)
	s := open(t, u)
	other := open(t, u)
	sqlstore.SetClaimFloorSpan(s, 200*time.Millisecond)
	ctx := t.Context()
	msgs := startedFixture(t, s, messaging.NewIDGenerator(nil), 2000)
	now := msgs[0].CreatedAt.Add(time.Minute)
	claim := func() []messaging.Message {
		got, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Owner: "p1", Now: now, LeaseUntil: now.Add(time.Hour), Limit: 10})
		require.NoError(t, err)
		return got
	}
	first := claim()
	require.Len(t, first, 10)
	_, err := other.ApplyUpdates(ctx, []delivery.StatusUpdate{{MessageID: first[0].ID, Status: messaging.StatusPending, At: now, DueAt: first[0].DueAt}})
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := claim()
		require.NotEmpty(t, got)
		if got[0].ID == first[0].ID {
			return
		}
		require.True(t, time.Now().Before(deadline), "the message sent back was never claimed again")
		time.Sleep(20 * time.Millisecond)
	}
}
