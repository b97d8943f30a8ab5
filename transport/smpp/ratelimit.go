package smpp

import (
	"context"

	"golang.org/x/time/rate"
)

// newLimiter paces submits at perSecond with a bucket of a tenth of a
// second's worth of tokens (at least one); nil (no pacing) when perSecond
// is 0.
//
// rate.Limiter.Wait gives a waiter's token back when its context ends
// before the token is due, and refuses at once a wait that would outlast
// the context's deadline. Waiters that give up therefore never push the
// pace back for the others: with a low rate and many sends in flight, the
// sends that time out leave the rate to those still waiting instead of
// starving them.
func newLimiter(perSecond float64) *rate.Limiter {
	if perSecond <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond/10)))
}

// pace takes one token from l, waiting until it is due or ctx ends; nil l
// never waits.
func pace(ctx context.Context, l *rate.Limiter) error {
	if l == nil {
		return nil
	}
	return l.Wait(ctx)
}
