package pace_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pace"
)

// TestBatchesUntilNoMore: batches run until one says there is no more.
func TestBatchesUntilNoMore(t *testing.T) {
	calls := 0
	pace.Batches(t.Context(), 0, 4, func() bool { calls++; return calls < 3 })
	require.Equal(t, 3, calls)
}

// TestBatchesPauseInProportion: after a batch the next one starts no
// sooner than share times the batch's duration after it ended.
func TestBatchesPauseInProportion(t *testing.T) {
	const took, share = 10 * time.Millisecond, 3
	var starts, ends []time.Time
	pace.Batches(t.Context(), 0, share, func() bool {
		starts = append(starts, time.Now())
		time.Sleep(took)
		ends = append(ends, time.Now())
		return len(starts) < 3
	})
	require.Len(t, starts, 3)
	for i := 1; i < len(starts); i++ {
		require.GreaterOrEqual(t, starts[i].Sub(ends[i-1]), share*took, "pause before batch %d", i)
	}
}

// TestBatchesStopWithContext: a pause ends when ctx does, and no batch
// runs after.
func TestBatchesStopWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	done := make(chan struct{})
	go func() {
		pace.Batches(ctx, time.Hour, 4, func() bool { calls++; return true })
		close(done)
	}()
	cancel()
	<-done
	require.Equal(t, 1, calls)
}
