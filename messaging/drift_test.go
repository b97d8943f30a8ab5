package messaging_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

func TestCounterDrift(t *testing.T) {
	co, other := messaging.ID{1}, messaging.ID{2}
	running := messaging.Campaign{ID: messaging.ID{1, 1}, CompanyID: co, Status: messaging.CampaignInProgress,
		Counts:         messaging.StatusCounts{Pending: 2, Sending: 1, Delivered: 3},
		FallbackCounts: messaging.StatusCounts{Pending: 1}}
	queuing := messaging.Campaign{ID: messaging.ID{1, 2}, CompanyID: co, Status: messaging.CampaignQueuing, Planned: 10,
		Counts: messaging.StatusCounts{Pending: 4}}
	empty := messaging.Campaign{ID: messaging.ID{2, 1}, CompanyID: other, Status: messaging.CampaignReady}
	agree := map[messaging.ID]messaging.Counted{
		running.ID: {Counts: running.Counts, FallbackCounts: running.FallbackCounts},
		queuing.ID: {Counts: queuing.Counts},
	}
	// co: 2+1 own unsent, 1 fallback unsent, and 10 planned of which 4
	// are written: 4 Pending and 6 reserved.
	pending := map[messaging.ID]int{co: 14, other: 0}
	campaigns := []messaging.Campaign{running, queuing, empty}
	require.Empty(t, messaging.CounterDrift(campaigns, agree, pending))

	drifted := map[messaging.ID]messaging.Counted{
		running.ID: {Counts: messaging.StatusCounts{Pending: 2, Sent: 1, Delivered: 3}, FallbackCounts: messaging.StatusCounts{Failed: 1}},
		queuing.ID: {Counts: queuing.Counts},
		empty.ID:   {Counts: messaging.StatusCounts{Failed: 1}},
	}
	got := messaging.CounterDrift(campaigns, drifted, map[messaging.ID]int{co: 14, other: 3})
	require.Equal(t, []messaging.Drift{
		{CompanyID: co, Counter: "companyPending", Stored: 14, Counted: 12},
		{CompanyID: co, CampaignID: running.ID, Counter: "fallback.failed", Stored: 0, Counted: 1},
		{CompanyID: co, CampaignID: running.ID, Counter: "fallback.pending", Stored: 1, Counted: 0},
		{CompanyID: co, CampaignID: running.ID, Counter: "sending", Stored: 1, Counted: 0},
		{CompanyID: co, CampaignID: running.ID, Counter: "sent", Stored: 0, Counted: 1},
		{CompanyID: other, Counter: "companyPending", Stored: 3, Counted: 0},
		{CompanyID: other, CampaignID: empty.ID, Counter: "failed", Stored: 0, Counted: 1},
	}, got)
}
