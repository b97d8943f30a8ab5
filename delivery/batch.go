package delivery

import (
	"context"
	"sync"
	"time"
)

// committer groups the items that concurrent callers hand it into batches
// written by one store call each (group commit): while a batch is being
// written, the items that arrive queue up, and the next batch takes all of
// them, up to max. When fewer than min are queued, it waits up to linger
// for more before it writes: a fast store would otherwise write many tiny
// batches, each paying for a whole transaction. Each caller waits for the
// write of its own batch. One goroutine writes, started when items arrive
// and ended when none are left, so an idle committer holds no goroutine.
type committer[T, R any] struct {
	max    int
	min    int
	linger time.Duration
	write  func(items []T) ([]R, error)
	depth  func(n int) // reports the queue length; may be nil

	mu      sync.Mutex
	queue   []*waiter[T, R]
	writing bool
	items   []T           // the batch being written, reused: one writer at a time
	arrived chan struct{} // signalled when items are queued
}

// waiter is one item and where its result goes.
type waiter[T, R any] struct {
	item T
	res  R
	err  error
	done chan struct{}
}

// do queues item, waits for the write of its batch and returns its
// result. queued, when not nil, is called once the item is in the queue:
// items queued after that are written in the same batch or a later one.
// When ctx ends first do returns ctx.Err(); the item is still written.
func (c *committer[T, R]) do(ctx context.Context, item T, queued func()) (R, error) {
	w := &waiter[T, R]{item: item, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, w)
	n := len(c.queue)
	start := !c.writing
	c.writing = true
	if c.arrived == nil {
		c.arrived = make(chan struct{}, 1)
	}
	arrived := c.arrived
	c.mu.Unlock()
	if queued != nil {
		queued()
	}
	select {
	case arrived <- struct{}{}:
	default:
	}
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
	var timer *time.Timer
	for {
		c.mu.Lock()
		if len(c.queue) > 0 && len(c.queue) < c.min && c.linger > 0 {
			arrived := c.arrived
			c.mu.Unlock()
			if timer == nil {
				timer = time.NewTimer(c.linger)
				defer timer.Stop()
			} else {
				timer.Reset(c.linger)
			}
		wait:
			for {
				select {
				case <-arrived:
					c.mu.Lock()
					enough := len(c.queue) >= c.min
					c.mu.Unlock()
					if enough {
						break wait
					}
				case <-timer.C:
					break wait
				}
			}
			c.mu.Lock()
		}
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
