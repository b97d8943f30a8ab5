package groupcommit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/groupcommit"
)

// TestBatches holds the first write, queues more items behind it, and
// checks they are written together, each caller getting its own result.
func TestBatches(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var mu sync.Mutex
	var sizes []int
	c := &groupcommit.Committer[int, int]{Max: 100, Write: func(items []int) ([]int, error) {
		mu.Lock()
		sizes = append(sizes, len(items))
		mu.Unlock()
		select {
		case entered <- struct{}{}:
			<-release
		default:
		}
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = v * 10
		}
		return out, nil
	}}
	const n = 20
	res := make([]int, n+1)
	var wg sync.WaitGroup
	wg.Go(func() { res[0], _ = c.Do(t.Context(), 0, nil) })
	<-entered
	for i := 1; i <= n; i++ {
		wg.Go(func() {
			r, err := c.Do(t.Context(), i, nil)
			require.NoError(t, err)
			res[i] = r
		})
	}
	require.Eventually(t, func() bool { return c.Queued() == n }, 10*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	for i, r := range res {
		require.Equal(t, i*10, r)
	}
	require.Equal(t, []int{1, n}, sizes, "the items queued during the first write go in one batch")
	require.Zero(t, c.Queued())
}

func TestErrorReachesTheBatch(t *testing.T) {
	boom := errors.New("boom")
	c := &groupcommit.Committer[int, int]{Max: 1, Write: func([]int) ([]int, error) { return nil, boom }}
	_, err := c.Do(t.Context(), 1, nil)
	require.ErrorIs(t, err, boom)
}

func TestCallerLeavesEarly(t *testing.T) {
	written := make(chan int, 1)
	release := make(chan struct{})
	c := &groupcommit.Committer[int, int]{Max: 1, Write: func(items []int) ([]int, error) {
		<-release
		written <- items[0]
		return []int{1}, nil
	}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := c.Do(ctx, 7, nil)
	require.ErrorIs(t, err, context.Canceled)
	close(release)
	require.Equal(t, 7, <-written, "the item is written even though its caller left")
}
