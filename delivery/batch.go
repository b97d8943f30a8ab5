package delivery

import (
	"context"
	"sync"
)

// committer groups the items that concurrent callers hand it into batches
// written by one store call each (group commit): while a batch is being
// written, the items that arrive queue up, and the next batch takes all of
// them, up to max. Each caller waits for the write of its own batch. One
// goroutine writes, started when items arrive and ended when none are
// left, so an idle committer holds no goroutine.
type committer[T, R any] struct {
	max   int
	write func(items []T) ([]R, error)
	depth func(n int) // reports the queue length; may be nil

	mu      sync.Mutex
	queue   []*waiter[T, R]
	writing bool
	items   []T // the batch being written, reused: one writer at a time
}

// waiter is one item and where its result goes.
type waiter[T, R any] struct {
	item T
	res  R
	err  error
	done chan struct{}
}

// do queues item, waits for the write of its batch and returns its
// result. When ctx ends first do returns ctx.Err(); the item is still
// written.
func (c *committer[T, R]) do(ctx context.Context, item T) (R, error) {
	w := &waiter[T, R]{item: item, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	n := len(c.queue)
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if c.depth != nil {
		c.depth(n)
	}
	if start {
		go c.run()
	}
	select {
	case <-w.done:
		return w.res, w.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// run writes batches until the queue is empty.
func (c *committer[T, R]) run() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), c.max)
		if n == 0 {
			c.writing = false
			c.mu.Unlock()
			return
		}
		batch := make([]*waiter[T, R], n)
		copy(batch, c.queue)
		rest := copy(c.queue, c.queue[n:])
		clear(c.queue[rest:])
		c.queue = c.queue[:rest]
		c.mu.Unlock()
		if c.depth != nil {
			c.depth(rest)
		}

		items := c.items[:0]
		for _, w := range batch {
			items = append(items, w.item)
		}
		c.items = items
		res, err := c.write(items)
		clear(items)
		for i, w := range batch {
			if err != nil {
				w.err = err
			} else if i < len(res) {
				w.res = res[i]
			}
			close(w.done)
		}
	}
}
