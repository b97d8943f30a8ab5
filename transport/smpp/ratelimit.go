package smpp

import (
	"container/list"
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// errTurnAfterDeadline: a part's turn to be submitted would come after
// its Send's deadline.
var errTurnAfterDeadline = errors.New("the turn to submit would come after the deadline")

// errPacerDone: the pacer's done channel was closed during a wait.
var errPacerDone = errors.New("pacer done")

// pacer is the token bucket that paces the submit_sm of a whole Client:
// rate tokens a second, holding a tenth of a second's worth (at least
// one); a rate of 0 never waits. Unlike rate.Limiter, which books a
// waiter's turn when it starts waiting, it hands turns out when they fall
// due, first come first served, at the rate of that moment: a lower rate
// set while hundreds of parts wait applies to all of them at once.
//
// A waiter that leaves because its context ended (or the Client closed)
// takes no token, and a wait that would outlast its context's deadline is
// refused at once: waiters that give up never push the pace back for the
// others.
type pacer struct {
	unlimited atomic.Bool   // rate == 0: the fast path of wait
	epoch     atomic.Uint64 // counts the times the rate went down

	mu     sync.Mutex
	rate   float64 // tokens a second; 0: unlimited
	burst  float64
	tokens float64
	last   time.Time // when tokens was last brought up to date
	queue  list.List // of *turn, retries first
	nprio  int       // retries at the front of queue
	timer  *time.Timer
}

// turn is a waiter of the pacer; ch receives the epoch its token was
// handed out in.
type turn struct {
	ch   chan uint64
	prio bool
}

// newPacer returns a pacer at perSecond (0: unlimited) with a full bucket.
func newPacer(perSecond float64) *pacer {
	p := &pacer{}
	p.setRateLocked(perSecond, time.Now())
	p.tokens = p.burst
	return p
}

// burstOf is the bucket of rate r: a tenth of a second's worth, at least
// one.
func burstOf(r float64) float64 { return max(1, math.Floor(r/10)) }

// wait takes one token, waiting until one is due, ctx ends or done is
// closed (errPacerDone), and returns the epoch it was taken in (see
// stale). A retry (prio) goes before the waiters that are not, after
// those that are.
func (p *pacer) wait(ctx context.Context, done <-chan struct{}, prio bool) (uint64, error) {
	if p.unlimited.Load() {
		return p.epoch.Load(), nil
	}
	now := time.Now()
	p.mu.Lock()
	p.grantLocked(now) // the turns due by now first
	if p.rate == 0 || (p.queue.Len() == 0 && p.tokens >= 1) {
		if p.rate > 0 {
			p.tokens--
		}
		ep := p.epoch.Load()
		p.mu.Unlock()
		return ep, nil
	}
	ahead := p.queue.Len()
	if prio {
		ahead = p.nprio
	}
	if dl, ok := ctx.Deadline(); ok {
		due := now.Add(time.Duration((float64(ahead) + 1 - p.tokens) / p.rate * float64(time.Second)))
		if due.After(dl) {
			p.mu.Unlock()
			return 0, errTurnAfterDeadline
		}
	}
	t := &turn{ch: make(chan uint64, 1), prio: prio}
	el := pushInTurn(&p.queue, t, prio, &p.nprio)
	p.grantLocked(now)
	p.mu.Unlock()

	err := errPacerDone
	select {
	case ep := <-t.ch:
		return ep, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-done:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-t.ch: // handed a token meanwhile: give it back
		if p.rate > 0 {
			p.advanceLocked(time.Now())
			p.tokens = min(p.tokens+1, p.burst)
		}
	default:
		p.queue.Remove(el)
		if prio {
			p.nprio--
		}
	}
	p.grantLocked(time.Now())
	return 0, err
}

// stale reports whether the rate went down since epoch ep: a token taken
// before is not to be used.
func (p *pacer) stale(ep uint64) bool { return p.epoch.Load() != ep }

// setRate changes the rate at once, for the waiters too; 0 is unlimited.
// A lower rate starts a new epoch. Going from unlimited to a rate starts
// with an empty bucket: a sender that was not paced has nothing saved.
func (p *pacer) setRate(r float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.advanceLocked(now)
	p.setRateLocked(r, now)
	p.grantLocked(now)
}

func (p *pacer) setRateLocked(r float64, now time.Time) {
	if r > 0 && (p.rate == 0 || r < p.rate) {
		p.epoch.Add(1)
	}
	if r > 0 && p.rate == 0 {
		p.tokens = 0
	}
	p.rate, p.last = r, now
	p.burst = burstOf(r)
	p.tokens = min(p.tokens, p.burst)
	p.unlimited.Store(r == 0)
}

// advanceLocked adds the tokens due since the last call.
func (p *pacer) advanceLocked(now time.Time) {
	if p.rate > 0 && now.After(p.last) {
		p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	}
	p.last = now
}

// grantLocked hands tokens to the waiters at the front while there are
// some, and sets the timer for the next one.
func (p *pacer) grantLocked(now time.Time) {
	p.advanceLocked(now)
	for p.queue.Len() > 0 {
		if p.rate > 0 {
			if p.tokens < 1-1e-9 {
				break
			}
			p.tokens = max(0, p.tokens-1)
		}
		t := p.queue.Remove(p.queue.Front()).(*turn)
		if t.prio {
			p.nprio--
		}
		t.ch <- p.epoch.Load()
	}
	if p.queue.Len() == 0 || p.rate == 0 {
		return
	}
	d := time.Duration((1 - p.tokens) / p.rate * float64(time.Second))
	if p.timer == nil {
		p.timer = time.AfterFunc(d, p.fire)
	} else {
		p.timer.Reset(d)
	}
}

func (p *pacer) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.grantLocked(time.Now())
}

// pushInTurn queues v in l, whose first *nprio elements are the priority
// ones: behind them when prio (counting it in), else at the back.
func pushInTurn(l *list.List, v any, prio bool, nprio *int) *list.Element {
	var el *list.Element
	switch {
	case !prio:
		el = l.PushBack(v)
	case *nprio == 0:
		el = l.PushFront(v)
	default:
		last := l.Front()
		for range *nprio - 1 {
			last = last.Next()
		}
		el = l.InsertAfter(v, last)
	}
	if prio {
		*nprio++
	}
	return el
}
