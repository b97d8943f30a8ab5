package memstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/store/storetest"
	"github.com/heraldhq/herald/survey"
)

var (
	_ campaign.Store  = (*memstore.Store)(nil)
	_ delivery.Store  = (*memstore.Store)(nil)
	_ survey.Store    = (*memstore.Store)(nil)
	_ storetest.Store = (*memstore.Store)(nil)
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) storetest.Store { return memstore.New() })
}

// bulkFixture creates a company and a Queuing SMS campaign planned for n
// messages, and returns n Pending messages for it, not yet inserted.
func bulkFixture(b *testing.B, s *memstore.Store, n int) (messaging.Campaign, []*messaging.Message) {
	b.Helper()
	ctx := b.Context()
	now := time.Date(2026, time.March, 2, 9, 30, 0, 0, time.UTC)
	ids := messaging.NewIDGenerator(func() time.Time { return now })
	co := messaging.Company{ID: ids.New(), Name: "Bench", Active: true, CreatedAt: now}
	require.NoError(b, s.CreateCompany(ctx, &co))
	c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Name: "bench", Channel: messaging.ChannelSMS,
		Mode: messaging.ModeBulk, Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText,
		Planned: n, CreatedAt: now, UpdatedAt: now}
	require.NoError(b, s.CreateCampaign(ctx, &c, n))
	msgs := make([]*messaging.Message, n)
	for i := range msgs {
		msgs[i] = &messaging.Message{ID: ids.New(), CompanyID: co.ID, CampaignID: c.ID, Channel: messaging.ChannelSMS,
			Phone: fmt.Sprintf("4479%08d", i), ExternalUserID: fmt.Sprintf("user-%d", i), Content: "Hello",
			Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now}
	}
	return c, msgs
}

// BenchmarkInsertMessages200k writes the largest batch one request may
// carry.
func BenchmarkInsertMessages200k(b *testing.B) {
	const n = 200_000
	for b.Loop() {
		b.StopTimer()
		s := memstore.New()
		c, msgs := bulkFixture(b, s, n)
		b.StartTimer()
		require.NoError(b, s.InsertMessages(b.Context(), msgs))
		b.StopTimer()
		got, err := s.GetCampaign(b.Context(), c.CompanyID, c.ID)
		require.NoError(b, err)
		require.Equal(b, n, got.Counts.Pending)
		b.StartTimer()
	}
}

// BenchmarkClaimDue200k claims 200,000 due messages 500 at a time.
func BenchmarkClaimDue200k(b *testing.B) {
	const n, batch = 200_000, 500
	for b.Loop() {
		b.StopTimer()
		s := memstore.New()
		c, msgs := bulkFixture(b, s, n)
		require.NoError(b, s.InsertMessages(b.Context(), msgs))
		require.NoError(b, s.TransitionCampaign(b.Context(), messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.ID, From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignInProgress, At: c.CreatedAt}))
		b.StartTimer()
		claimed := 0
		for {
			ms, err := s.ClaimDue(b.Context(), delivery.Claim{Channel: messaging.ChannelSMS, Now: c.CreatedAt, LeaseUntil: c.CreatedAt.Add(time.Minute), Limit: batch})
			require.NoError(b, err)
			if len(ms) == 0 {
				break
			}
			claimed += len(ms)
		}
		require.Equal(b, n, claimed)
	}
}
