package delivery

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// RateSource tells the dispatcher the companies' rates (Config.Rates).
type RateSource interface {
	// CompanyRates returns the MaxPerSecond of every company that has one
	// (messaging.Company), and how many processes dispatch from the store:
	// those whose claim heartbeat (Store.Heartbeat) is at since or later.
	CompanyRates(ctx context.Context, since time.Time) (map[messaging.ID]float64, int, error)
}

// rateBurst is how much of a second of its rate a company may have
// claimed at once: its bucket holds that many turns, one at least. Any
// second then carries at most the rate and a tenth.
const rateBurst = 100 * time.Millisecond

// companyRates paces the claims of the companies that have a rate: each
// has a token bucket at its share of the rate (the rate divided by the
// processes dispatching), and a claim takes no more of a company's
// messages than its bucket holds. Safe for concurrent use by the lanes.
type companyRates struct {
	mu      sync.Mutex
	buckets map[messaging.ID]*rateBucket
}

// rateBucket is one company's bucket.
type rateBucket struct {
	rate   float64 // this process's share, messages a second
	burst  float64
	tokens float64
	last   time.Time
	// drained holds the channels whose last claim took less than its
	// quota of the company: none of its messages waits there. A channel
	// not in it may have more waiting. Each lane answers for its own
	// channel only: a chat claim that finds none of a company's messages
	// says nothing of its SMS.
	drained map[messaging.Channel]bool
}

// set installs the rates read from the store, each divided among procs
// processes (one at least). A new company starts with a full bucket; one
// no longer listed is no longer capped.
func (r *companyRates) set(rates map[messaging.ID]float64, procs int, now time.Time) {
	procs = max(procs, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.buckets {
		if _, ok := rates[id]; !ok {
			delete(r.buckets, id)
		}
	}
	for id, rate := range rates {
		share := rate / float64(procs)
		if !(share > 0) || math.IsInf(share, 0) {
			delete(r.buckets, id)
			continue
		}
		burst := max(1, share*rateBurst.Seconds())
		b := r.buckets[id]
		if b == nil {
			if r.buckets == nil {
				r.buckets = map[messaging.ID]*rateBucket{}
			}
			r.buckets[id] = &rateBucket{rate: share, burst: burst, tokens: burst, last: now}
			continue
		}
		b.advance(now)
		b.rate, b.burst = share, burst
		b.tokens = min(b.tokens, burst)
	}
}

// advance adds the tokens due since the last call.
func (b *rateBucket) advance(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// take reserves, for one claim, the whole turns of every capped company
// and returns them as Claim.Quotas; nil when no company is capped. Give
// back what the claim did not use with settle.
func (r *companyRates) take(now time.Time) map[messaging.ID]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buckets) == 0 {
		return nil
	}
	q := make(map[messaging.ID]int, len(r.buckets))
	for id, b := range r.buckets {
		b.advance(now)
		n := int(math.Floor(b.tokens + 1e-9))
		b.tokens = max(0, b.tokens-float64(n))
		q[id] = n
	}
	return q
}

// settle gives back the turns of quotas that the claim of claimed, on
// channel ch, did not use, and notes which companies took their whole
// quota there (they may have more waiting on ch). A failed claim settles
// with nothing claimed.
func (r *companyRates) settle(ch messaging.Channel, quotas map[messaging.ID]int, claimed []messaging.Message) {
	if quotas == nil {
		return
	}
	used := make(map[messaging.ID]int, len(quotas))
	for _, m := range claimed {
		if _, capped := quotas[m.CompanyID]; capped {
			used[m.CompanyID]++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, q := range quotas {
		b := r.buckets[id]
		if b == nil {
			continue
		}
		n := used[id]
		b.tokens = min(b.burst, b.tokens+float64(q-n))
		if q > 0 {
			if n >= q {
				delete(b.drained, ch)
			} else {
				if b.drained == nil {
					b.drained = map[messaging.Channel]bool{}
				}
				b.drained[ch] = true
			}
		}
	}
}

// wait is how long until a company that may have more messages waiting
// on channel ch has half its bucket again (a claim worth making); ok is
// false when no company waits for its rate there.
func (r *companyRates) wait(ch messaging.Channel, now time.Time) (d time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.buckets {
		if b.drained[ch] {
			continue
		}
		b.advance(now)
		want := max(1, b.burst/2)
		w := time.Duration(0)
		if b.tokens < want {
			w = time.Duration((want - b.tokens) / b.rate * float64(time.Second))
		}
		if !ok || w < d {
			d, ok = w, true
		}
	}
	return d, ok
}

// loadRates reads the companies' rates from Config.Rates and installs
// them; the processes counted are those whose heartbeat is within
// ClaimLease.
func (d *Dispatcher) loadRates(ctx context.Context) {
	if d.cfg.Rates == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, min(d.cfg.StoreTimeout, d.cfg.RatesInterval))
	defer cancel()
	now := d.cfg.Now()
	rates, procs, err := d.cfg.Rates.CompanyRates(sctx, now.Add(-d.cfg.ClaimLease))
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("reading the companies' rates", "err", err)
		}
		return
	}
	d.rates.set(rates, procs, now)
}
