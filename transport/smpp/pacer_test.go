package smpp

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// queued is the number of waiters of p.
func (p *pacer) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queue.Len()
}

// turns returns the waiters of p in the order they will be served.
func (p *pacer) turns() []*turn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*turn
	for el := p.queue.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*turn))
	}
	return out
}

// TestPacerTurns: turns go first come first served, a retry before the
// waiters that are not; a wait whose turn would come after its deadline
// is refused at once, and one whose context ends leaves its place; a
// lower rate starts a new epoch, a higher one does not, and lifting the
// rate lets every waiter go at once.
func TestPacerTurns(t *testing.T) {
	p := newPacer(1) // one token, then one a second
	ctx := context.Background()
	_, err := p.wait(ctx, nil, false)
	require.NoError(t, err, "the bucket's token")

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = p.wait(short, nil, false)
	require.ErrorIs(t, err, errTurnAfterDeadline)
	require.Zero(t, p.queued())

	names := map[*turn]string{}
	var wg sync.WaitGroup
	start := func(name string, prio bool) {
		n := p.queued()
		wg.Go(func() {
			_, err := p.wait(ctx, nil, prio)
			require.NoError(t, err)
		})
		require.Eventually(t, func() bool { return p.queued() == n+1 }, 5*time.Second, time.Millisecond)
		for _, tn := range p.turns() {
			if names[tn] == "" {
				names[tn] = name
			}
		}
	}
	start("a", false)
	start("b", false)
	start("retry1", true)
	start("retry2", true)

	gone, leave := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() { _, err := p.wait(gone, nil, false); left <- err }()
	require.Eventually(t, func() bool { return p.queued() == 5 }, 5*time.Second, time.Millisecond)
	leave()
	require.ErrorIs(t, <-left, context.Canceled)
	var order []string
	for _, tn := range p.turns() {
		order = append(order, names[tn])
	}
	require.Equal(t, []string{"retry1", "retry2", "a", "b"}, order, "retries first, each in turn")

	ep := p.epoch.Load()
	p.setRate(2)
	require.False(t, p.stale(ep), "a higher rate is no new epoch")
	p.setRate(0.5)
	require.True(t, p.stale(ep), "a lower rate is")
	p.setRate(0)
	wg.Wait()
	ep, err = p.wait(ctx, nil, false)
	require.NoError(t, err, "unlimited: no wait")
	require.False(t, p.stale(ep))

	done := make(chan struct{})
	p.setRate(1)
	require.True(t, p.stale(ep), "unlimited to a rate goes down")
	go close(done) // the bucket starts empty: the next wait is a second away
	_, err = p.wait(ctx, done, false)
	require.ErrorIs(t, err, errPacerDone)
}
