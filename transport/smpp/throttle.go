package smpp

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/linxGnu/gosmpp/data"
)

// Adaptive throttling: how the Client's effective rate follows the SMSC's
// ESME_RTHROTTLED and ESME_RMSGQFUL answers.
const (
	// throttleFloor is the lowest effective rate, in submit_sm a second.
	throttleFloor = 1.0
	// throttleDecrease multiplies the rate achieved over the last second
	// when the SMSC throttles.
	throttleDecrease = 0.5
	// throttleHold is how long the rate stays put after a throttled
	// answer before it climbs back.
	throttleHold = time.Second
	// minIncrease is the least the effective rate climbs a second, in
	// submit_sm a second.
	minIncrease = 5.0
	// noCapMargin: without a cap, the effective rate is lifted once it
	// exceeds the last throttled rate by this factor.
	noCapMargin = 1.5
	// increaseTick is how often the climb is applied, in proportion.
	increaseTick = 100 * time.Millisecond

	// The rate achieved is counted in accSlots slots of accSlot: a second.
	accSlot  = 100 * time.Millisecond
	accSlots = 10

	// retryPauseMin and retryPauseMax bound the pause before a throttled
	// part is submitted again; it doubles with each throttled try of the
	// part.
	retryPauseMin = 50 * time.Millisecond
	retryPauseMax = time.Second
)

// throttleStatus reports whether st asks the client to slow down: such a
// submit_sm was refused, not accepted, and is submitted again.
func throttleStatus(st data.CommandStatusType) bool {
	return st == data.ESME_RTHROTTLED || st == data.ESME_RMSGQFUL
}

// retryPause is the pause before the try after the nth throttled one of a
// part (n from 1), with a jitter of ±20%.
func retryPause(n int) time.Duration {
	d := retryPauseMax
	if n < 16 {
		d = min(retryPauseMax, retryPauseMin<<(n-1))
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// governor sets the rate of the Client's pacer: the configured cap
// (Config.MaxPerSecond, SetMaxPerSecond) or, after the SMSC throttled, a
// lower effective rate that climbs back to it (AIMD). See the package
// documentation.
type governor struct {
	p    *pacer
	log  *slog.Logger
	done <-chan struct{} // the Client's end: stops the climb

	mu         sync.Mutex
	cap        float64 // configured; 0: none
	eff        float64 // effective; 0: unlimited
	ceiling    float64 // the rate the last decrease started from: what was throttled
	recovering bool    // eff is below cap (or finite without one) after a throttle
	running    bool    // the climb goroutine runs
	lastThrot  time.Time
	lastStep   time.Time
	acc        [accSlots]struct {
		slot int64
		n    int
	} // submit_sm accepted, by slot
	active     time.Time // when the submits accepted without a pause of a second began
	lastAccept time.Time
}

func newGovernor(perSecond float64, log *slog.Logger, done <-chan struct{}) *governor {
	r := capRate(perSecond)
	return &governor{p: newPacer(r), log: log, done: done, cap: r, eff: r}
}

// capRate is r as a cap: 0 (none) unless a positive finite number.
func capRate(r float64) float64 {
	if !(r > 0) || math.IsInf(r, 1) {
		return 0
	}
	return r
}

// pace waits for the turn of one submit_sm (see pacer.wait); it fails
// with ErrClosed when the Client closes meanwhile.
func (g *governor) pace(ctx context.Context, retry bool) (uint64, error) {
	ep, err := g.p.wait(ctx, g.done, retry)
	if errors.Is(err, errPacerDone) {
		return 0, ErrClosed
	}
	return ep, err
}

// rates returns the configured cap and the effective rate (0: none).
func (g *governor) rates() (cfgRate, effRate float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cap, g.eff
}

// accepted counts a submit_sm answered ESME_ROK at now.
func (g *governor) accepted(now time.Time) {
	slot := now.UnixNano() / int64(accSlot)
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.lastAccept) > time.Second {
		g.active = now
	}
	g.lastAccept = now
	b := &g.acc[slot%accSlots]
	if b.slot != slot {
		b.slot, b.n = slot, 0
	}
	b.n++
}

// achievedLocked is the rate of submit_sm accepted over the last second,
// or since the submits began when that was less than a second ago (a
// tenth of a second at least).
func (g *governor) achievedLocked(now time.Time) float64 {
	slot := now.UnixNano() / int64(accSlot)
	n := 0
	for _, b := range g.acc {
		if b.slot > slot-accSlots && b.slot <= slot {
			n += b.n
		}
	}
	from := now.Add(-time.Second)
	if g.active.After(from) {
		from = g.active
	}
	return float64(n) / max(now.Sub(from), accSlot).Seconds()
}

// throttled lowers the effective rate for a submit_sm throttled at now,
// paced in epoch ep: to half the rate achieved over the last second (no
// more than half the effective rate), throttleFloor at least. An answer
// to a submit_sm paced before the rate last went down tells of the rate
// before: it only delays the climb.
func (g *governor) throttled(ep uint64, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lastThrot = now
	if g.p.stale(ep) {
		return
	}
	achieved := g.achievedLocked(now)
	base := achieved
	if g.eff > 0 {
		base = min(base, g.eff)
	}
	from := g.eff
	g.eff = max(throttleFloor, base*throttleDecrease)
	if g.cap > 0 {
		g.eff = min(g.eff, g.cap)
	}
	g.ceiling = max(base, throttleFloor)
	g.recovering, g.lastStep = true, now
	g.p.setRate(g.eff)
	if from != g.eff {
		g.log.Info("smpp throttled by the SMSC: rate lowered", "from_per_second", rateAttr(from),
			"to_per_second", g.eff, "achieved_per_second", math.Round(achieved*10)/10)
	}
	if !g.running {
		g.running = true
		go g.climb()
	}
}

// climb raises the effective rate while it is below the cap (or finite
// without one), until the Client ends.
func (g *governor) climb() {
	t := time.NewTicker(increaseTick)
	defer t.Stop()
	for {
		select {
		case <-g.done:
			g.mu.Lock()
			g.running = false
			g.mu.Unlock()
			return
		case now := <-t.C:
			if !g.step(now) {
				return
			}
		}
	}
}

// step raises the effective rate for the time since the last step, unless
// the SMSC throttled within throttleHold. A second, it climbs by a tenth
// of the larger of the last throttled rate (the ceiling) and the
// effective rate, minIncrease at least; below the ceiling, by half what
// is left up to it when that is more, so that it soon comes back close
// to the rate the SMSC took and probes beyond it slowly. It stops at the
// cap; without a cap, the limit is lifted once the rate exceeds the
// ceiling by noCapMargin. It returns false, and the climb ends, once
// there is nothing left to raise.
func (g *governor) step(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.recovering {
		g.running = false
		return false
	}
	dt := now.Sub(g.lastStep).Seconds()
	g.lastStep = now
	if now.Sub(g.lastThrot) < throttleHold {
		return true
	}
	g.eff += max(minIncrease, max(g.ceiling, g.eff)/10, (g.ceiling-g.eff)/2) * dt
	switch {
	case g.cap > 0 && g.eff >= g.cap:
		g.eff, g.recovering = g.cap, false
	case g.cap == 0 && g.eff > g.ceiling*noCapMargin:
		g.eff, g.recovering = 0, false
	}
	g.p.setRate(g.eff)
	if !g.recovering {
		g.running = false
		g.log.Info("smpp rate back to its cap after throttling", "per_second", rateAttr(g.eff))
	}
	return g.recovering
}

// setCap sets the configured cap (0: none) at once. An effective rate
// still lowered by throttling stays, and climbs to the new cap, unless it
// is above it.
func (g *governor) setCap(r float64) {
	r = capRate(r)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cap = r
	switch {
	case r > 0 && (!g.recovering || g.eff >= r):
		g.eff, g.recovering = r, false
	case r == 0 && !g.recovering:
		g.eff = 0
	}
	g.p.setRate(g.eff)
}

// rateAttr logs a rate, "unlimited" for 0.
func rateAttr(r float64) any {
	if r == 0 {
		return "unlimited"
	}
	return math.Round(r*10) / 10
}
