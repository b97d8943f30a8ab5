package campaign_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// TestCapacityHint: the wait of a 429 is the time the recent drain rate
// takes to free room for the request, capacity held by Ready or Paused
// campaigns is named and not counted on, and without a drain the default
// wait is given with the reason.
func TestCapacityHint(t *testing.T) {
	now := time.Date(2026, 5, 1, 9, 0, 15, 0, time.UTC)
	since := now.Add(-15 * time.Second)
	const fallback = 60 * time.Second
	cases := []struct {
		name   string
		c      messaging.Capacity
		use    messaging.CapacityUse
		wait   int
		rate   float64
		sayAll []string
	}{
		{"draining fast enough", messaging.Capacity{CurrentPending: 1000, RequestedCount: 300, MaxAllowed: 1000},
			messaging.CapacityUse{Drained: 150, Since: since, HeldBy: map[messaging.CampaignStatus]int{messaging.CampaignInProgress: 1000}},
			30, 10, []string{"at the current 10.0 messages/s there is room in about 30 seconds"}},
		{"partly free", messaging.Capacity{CurrentPending: 900, RequestedCount: 300, MaxAllowed: 1000},
			messaging.CapacityUse{Drained: 150, Since: since, HeldBy: map[messaging.CampaignStatus]int{messaging.CampaignInProgress: 900}},
			20, 10, []string{"room in about 20 seconds"}},
		{"at least a second", messaging.Capacity{CurrentPending: 1000, RequestedCount: 1, MaxAllowed: 1000},
			messaging.CapacityUse{Drained: 15000, Since: since, HeldBy: map[messaging.CampaignStatus]int{messaging.CampaignInProgress: 1000}},
			1, 1000, nil},
		{"ready campaigns hold the rest", messaging.Capacity{CurrentPending: 1000, RequestedCount: 500, MaxAllowed: 1000},
			messaging.CapacityUse{Drained: 150, Since: since, HeldBy: map[messaging.CampaignStatus]int{messaging.CampaignInProgress: 200, messaging.CampaignReady: 800}},
			20, 10, []string{"800 of the pending messages belong to Ready or Paused campaigns", "frees only 200 in about 20 seconds"}},
		{"only ready and paused campaigns", messaging.Capacity{CurrentPending: 1000, RequestedCount: 10, MaxAllowed: 1000},
			messaging.CapacityUse{Since: since, HeldBy: map[messaging.CampaignStatus]int{messaging.CampaignPaused: 400, messaging.CampaignReady: 600}},
			60, 0, []string{"nothing is being sent", "1000 of the pending messages belong to Ready or Paused campaigns"}},
		{"in progress but stalled", messaging.Capacity{CurrentPending: 1000, RequestedCount: 10, MaxAllowed: 1000},
			messaging.CapacityUse{Since: since, HeldBy: map[messaging.CampaignStatus]int{messaging.CampaignInProgress: 1000}},
			60, 0, []string{"nothing was sent in the last 15 seconds"}},
		{"larger than the capacity", messaging.Capacity{CurrentPending: 0, RequestedCount: 2000, MaxAllowed: 1000},
			messaging.CapacityUse{Since: since},
			60, 0, []string{"larger than the whole capacity; split it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, msg := campaign.CapacityHint(tc.c, tc.use, now, fallback)
			require.Equal(t, tc.wait, c.RetryAfterSeconds, msg)
			require.Equal(t, tc.rate, c.DrainRate)
			require.Equal(t, max(0, tc.c.MaxAllowed-tc.c.CurrentPending), c.AvailableCapacity)
			require.Equal(t, tc.use.HeldBy, c.HeldBy)
			require.Contains(t, msg, "Pending message capacity exceeded")
			for _, s := range tc.sayAll {
				require.Contains(t, msg, s)
			}
		})
	}
}
