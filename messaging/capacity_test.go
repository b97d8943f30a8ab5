package messaging_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

func TestCapacityExceeded(t *testing.T) {
	e := messaging.CapacityExceeded(messaging.Capacity{CurrentPending: 49_990, RequestedCount: 20, MaxAllowed: 50_000})
	require.Equal(t, messaging.RateLimited, e.Code)
	require.Equal(t, messaging.NameTooManyPending, e.Name)
	require.Equal(t, "Pending message capacity exceeded: 49990 pending, 20 requested, 50000 allowed", e.Message)
	require.Equal(t, &messaging.Capacity{CurrentPending: 49_990, RequestedCount: 20, MaxAllowed: 50_000, AvailableCapacity: 10}, e.Capacity)

	over := messaging.CapacityExceeded(messaging.Capacity{CurrentPending: 60, RequestedCount: 5, MaxAllowed: 50, RetryAfterSeconds: 30})
	require.Zero(t, over.Capacity.AvailableCapacity, "never negative")
	require.Equal(t, "Pending message capacity exceeded: 60 pending, 5 requested, 50 allowed; retry after 30 seconds", over.Message)

	nf := messaging.TemplateNotFound(messaging.ID{1})
	require.Equal(t, messaging.NotFound, nf.Code)
	require.Contains(t, nf.Message, "not found or access denied")
}
