// Package groupcommit groups the items that concurrent callers hand over
// into batches written by one store call each (group commit), so that a
// busy process pays one transaction for many items instead of one each,
// and an idle one writes an item at once, alone. The dispatcher's results,
// the chat callbacks' status updates and survey answers are written
// through it.
package groupcommit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Committer groups the items that concurrent callers hand it into
// batches written by one call of Write each: while a batch is being
// written, the items that arrive queue up, and the next batch takes all of
// them, up to Max. When fewer than Min are queued, it waits up to Linger
// for more before it writes: a fast store would otherwise write many tiny
// batches, each paying for a whole transaction. Each caller waits for the
// write of its own batch. One goroutine writes, started when items arrive
// and ended when none are left, so an idle Committer holds no goroutine.
// Set the exported fields before the first Do and leave them.
type Committer[T, R any] struct {
	// Max is the most items of one batch (at least 1).
	Max int
	// Min and Linger: a batch of fewer than Min items waits up to Linger
	// for more. Linger zero writes at once.
	Min    int
	Linger time.Duration
	// Write writes one batch and returns each item's result, in order;
	// its error goes to every caller of the batch.
	Write func(items []T) ([]R, error)
	// Depth, when set, is told the queue's length as it changes.
	Depth func(n int)

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

// Do queues item, waits for the write of its batch and returns its
// result. queued, when not nil, is called once the item is in the queue:
// items queued after that are written in the same batch or a later one.
// When ctx ends first do returns ctx.Err(); the item is still written.
func (c *Committer[T, R]) Do(ctx context.Context, item T, queued func()) (R, error) {
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
	if c.Depth != nil {
		c.Depth(n)
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
func (c *Committer[T, R]) run() {
	var timer *time.Timer
	for {
		c.mu.Lock()
		if len(c.queue) > 0 && len(c.queue) < c.Min && c.Linger > 0 {
			arrived := c.arrived
			c.mu.Unlock()
			if timer == nil {
				timer = time.NewTimer(c.Linger)
				defer timer.Stop()
			} else {
				timer.Reset(c.Linger)
			}
		wait:
			for {
				select {
				case <-arrived:
					c.mu.Lock()
					enough := len(c.queue) >= c.Min
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
		n := min(len(c.queue), c.Max)
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
		if c.Depth != nil {
			c.Depth(rest)
		}

		items := c.items[:0]
		for _, w := range batch {
			items = append(items, w.item)
		}
		c.items = items
		res, err := c.Write(items)
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

// Queued returns how many items wait for a batch (not those being
// written).
func (c *Committer[T, R]) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// Result is what became of one item that WriteOrSplit wrote: OK as its
// write reported it (applied, stored), or the Err that kept it from
// being written.
type Result struct {
	OK  bool
	Err error
}

// WriteOrSplit writes the n items of a group with one call write(ctx, 0,
// n) whose context outlives any one caller's (a caller that went away
// must not fail the others' items). When that fails and the group holds
// more than one item, each is written again on its own, write(ctxOf(i),
// i, i+1), so that an error reaches only the items it concerns (logged
// as what). It returns each item's Result; err is the error of a group
// of one.
func WriteOrSplit(log *slog.Logger, what string, n int, ctxOf func(i int) context.Context,
	write func(ctx context.Context, from, to int) ([]bool, error)) ([]Result, error) {
	res := make([]Result, n)
	got, err := write(context.Background(), 0, n)
	if err == nil {
		for i := range min(n, len(got)) {
			res[i].OK = got[i]
		}
		return res, nil
	}
	if n == 1 {
		return nil, err
	}
	log.Warn(what+": a group write failed; writing its items one by one", "items", n, "err", err)
	for i := range n {
		got, err := write(ctxOf(i), i, i+1)
		res[i] = Result{OK: err == nil && len(got) == 1 && got[0], Err: err}
	}
	return res, nil
}
