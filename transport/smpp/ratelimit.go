package smpp

import (
	"context"
	"sync"
	"time"
)

// limiter is a token bucket in its GCRA form: tat is the time at which the
// bucket would be full again; a request may pass once now is no earlier
// than tat minus the bucket's depth.
type limiter struct {
	interval time.Duration // one token
	depth    time.Duration // burst tolerance: (burst-1) tokens

	mu  sync.Mutex
	tat time.Time
}

func newLimiter(perSecond float64) *limiter {
	if perSecond <= 0 {
		return nil
	}
	interval := time.Duration(float64(time.Second) / perSecond)
	if interval <= 0 {
		interval = 1
	}
	burst := int(perSecond / 10)
	if burst < 1 {
		burst = 1
	}
	return &limiter{interval: interval, depth: time.Duration(burst-1) * interval}
}

// wait takes one token, sleeping until it is available or ctx ends. A token
// taken by a wait that ctx ended is not given back.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	if l.tat.Before(now) {
		l.tat = now
	}
	delay := l.tat.Sub(now) - l.depth
	l.tat = l.tat.Add(l.interval)
	l.mu.Unlock()
	if delay <= 0 {
		return nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
