package messaging

import (
	"math/rand/v2"
	"time"
)

// Backoff bounds an exponential backoff: the wait after attempt n (from
// 1) is Min doubled n-1 times, at most Max. Herald's retries all use it:
// the dispatcher's retry of a failed send, the SMPP client's rebinds, the
// chat client's retries and the chat simulator's callbacks.
type Backoff struct {
	Min time.Duration
	Max time.Duration
}

// Or returns b with a zero or negative Min or Max replaced by def's, and
// Max raised to Min when it is below it.
func (b Backoff) Or(def Backoff) Backoff {
	if b.Min <= 0 {
		b.Min = def.Min
	}
	if b.Max <= 0 {
		b.Max = def.Max
	}
	b.Max = max(b.Max, b.Min)
	return b
}

// Step returns the wait after attempt n (from 1; a smaller n counts as 1)
// without jitter: Min doubled n-1 times, at most Max.
func (b Backoff) Step(n int) time.Duration {
	d := b.Min
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Delay returns Step(n) drawn at random between half of it and all of it,
// so that clients that failed together do not retry together.
func (b Backoff) Delay(n int) time.Duration {
	d := b.Step(n)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
