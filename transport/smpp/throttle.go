package smpp

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/linxGnu/gosmpp/data"
)

// Adaptive throttling: how each session's effective rate follows the
// SMSC's ESME_RTHROTTLED and ESME_RMSGQFUL answers on it.
const (
	// throttleFloor is the lowest effective rate of a session, in
	// submit_sm a second.
	throttleFloor = 1.0
	// throttleDecrease multiplies the rate achieved over the last second
	// when the SMSC throttles.
	throttleDecrease = 0.5
	// throttleHold is how long a session's rate stays put after a
	// throttled answer before it climbs back.
	throttleHold = time.Second
	// minIncrease is the least a session's effective rate climbs a
	// second, in submit_sm a second.
	minIncrease = 5.0
	// noCapMargin: without a cap, a session's limit is lifted once its
	// effective rate exceeds the last throttled rate by this factor.
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

// capRate is r as a cap: 0 (none) unless a positive finite number.
func capRate(r float64) float64 {
	if !(r > 0) || math.IsInf(r, 1) {
		return 0
	}
	return r
}

// sessionRate is the adaptive rate of one session (AIMD): unlimited until
// the SMSC throttles a submit_sm on it, then a token bucket at a lower
// effective rate that climbs back. Its fields are guarded by Client.mu.
// See the package documentation.
type sessionRate struct {
	eff    float64 // effective rate; 0: unlimited
	epoch  uint64  // counts the times eff went down
	tokens float64 // the bucket while eff > 0: a tenth of a second's worth, at least one
	burst  float64
	last   time.Time // when tokens was last brought up to date

	ceiling    float64 // the rate the last decrease started from: what was throttled
	recovering bool    // eff is limited after a throttle and climbs back
	lastThrot  time.Time
	lastStep   time.Time
	acc        [accSlots]struct {
		slot int64
		n    int
	} // submit_sm accepted, by slot
	active     time.Time // when the submits accepted without a pause of a second began
	lastAccept time.Time
}

// setRate changes the effective rate to r (0: unlimited) at now. A lower
// rate starts a new epoch; going from unlimited to a rate starts with an
// empty bucket: a session that was not paced has nothing saved.
func (r *sessionRate) setRate(rate float64, now time.Time) {
	r.advance(now)
	if rate > 0 && (r.eff == 0 || rate < r.eff) {
		r.epoch++
	}
	if rate > 0 && r.eff == 0 {
		r.tokens = 0
	}
	r.eff, r.last = rate, now
	r.burst = burstOf(rate)
	r.tokens = min(r.tokens, r.burst)
}

// advance adds the tokens due since the last call.
func (r *sessionRate) advance(now time.Time) {
	if r.eff > 0 && now.After(r.last) {
		r.tokens = min(r.burst, r.tokens+now.Sub(r.last).Seconds()*r.eff)
	}
	r.last = now
}

// room reports whether the session may submit at now: unlimited, or a
// token in its bucket.
func (r *sessionRate) room(now time.Time) bool {
	if r.eff == 0 {
		return true
	}
	r.advance(now)
	return r.tokens >= 1-1e-9
}

// take takes the token room found.
func (r *sessionRate) take() {
	if r.eff > 0 {
		r.tokens = max(0, r.tokens-1)
	}
}

// untake gives back a token taken for a submit_sm that was not written.
func (r *sessionRate) untake() {
	if r.eff > 0 {
		r.tokens = min(r.burst, r.tokens+1)
	}
}

// untilRoom is how long after the last advance the next token is due.
func (r *sessionRate) untilRoom() time.Duration {
	if r.eff == 0 || r.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - r.tokens) / r.eff * float64(time.Second))
}

// accepted counts a submit_sm answered ESME_ROK at now.
func (r *sessionRate) accepted(now time.Time) {
	slot := now.UnixNano() / int64(accSlot)
	if now.Sub(r.lastAccept) > time.Second {
		r.active = now
	}
	r.lastAccept = now
	b := &r.acc[slot%accSlots]
	if b.slot != slot {
		b.slot, b.n = slot, 0
	}
	b.n++
}

// achieved is the rate of submit_sm accepted over the last second, or
// since the submits began when that was less than a second ago (a tenth
// of a second at least).
func (r *sessionRate) achieved(now time.Time) float64 {
	slot := now.UnixNano() / int64(accSlot)
	n := 0
	for _, b := range r.acc {
		if b.slot > slot-accSlots && b.slot <= slot {
			n += b.n
		}
	}
	from := now.Add(-time.Second)
	if r.active.After(from) {
		from = r.active
	}
	return float64(n) / max(now.Sub(from), accSlot).Seconds()
}

// rateChange is a change of a session's effective rate, to log once
// Client.mu is released.
type rateChange struct {
	s                  *session
	from, to, achieved float64
	lowered, restored  bool
}

func (ch rateChange) log() {
	switch {
	case ch.lowered:
		ch.s.log.Info("smpp throttled by the SMSC: session rate lowered", "from_per_second", rateAttr(ch.from),
			"to_per_second", ch.to, "achieved_per_second", math.Round(ch.achieved*10)/10)
	case ch.restored:
		ch.s.log.Info("smpp session rate back to unlimited after throttling (the cap, if any, applies)")
	}
}

// throttled lowers the effective rate of the session for a submit_sm it
// took in epoch ep and the SMSC throttled at now: to half the rate the
// session achieved over the last second (no more than half its effective
// rate), throttleFloor at least, the cap (0: none) at most. An answer to
// a submit_sm taken before the rate last went down tells of the rate
// before: it only delays the climb.
func (r *sessionRate) throttled(ep uint64, now time.Time, cap float64) (from, achieved float64, lowered bool) {
	r.lastThrot = now
	if ep != r.epoch {
		return 0, 0, false
	}
	achieved = r.achieved(now)
	base := achieved
	if r.eff > 0 {
		base = min(base, r.eff)
	}
	from = r.eff
	to := max(throttleFloor, base*throttleDecrease)
	if cap > 0 {
		to = min(to, cap)
	}
	r.ceiling = max(base, throttleFloor)
	r.recovering, r.lastStep = true, now
	r.setRate(to, now)
	return from, achieved, from != to
}

// step raises the effective rate for the time since the last step, unless
// the SMSC throttled the session within throttleHold. A second, it climbs
// by a tenth of the larger of the last throttled rate (the ceiling) and
// the effective rate, minIncrease at least; below the ceiling, by half
// what is left up to it when that is more, so that it soon comes back
// close to the rate the SMSC took and probes beyond it slowly. The limit
// is lifted (the session is unlimited again, under the Client's cap) once
// the rate reaches the cap, or without a cap once it exceeds the ceiling
// by noCapMargin. It reports whether the rate changed and whether the
// session is still recovering.
func (r *sessionRate) step(now time.Time, cap float64) (changed, recovering bool) {
	if !r.recovering {
		return false, false
	}
	dt := now.Sub(r.lastStep).Seconds()
	r.lastStep = now
	if now.Sub(r.lastThrot) < throttleHold {
		return false, true
	}
	to := r.eff + max(minIncrease, max(r.ceiling, r.eff)/10, (r.ceiling-r.eff)/2)*dt
	if (cap > 0 && to >= cap) || (cap == 0 && to > r.ceiling*noCapMargin) {
		to, r.recovering = 0, false
	}
	r.setRate(to, now)
	return true, r.recovering
}

// rateAttr logs a rate, "unlimited" for 0.
func rateAttr(r float64) any {
	if r == 0 {
		return "unlimited"
	}
	return math.Round(r*10) / 10
}

// effectiveLocked is the rate the Client may submit at now, all sessions
// together: the cap (0: none) while a bound session is unlimited (or
// none is bound), else the sum of the bound sessions' effective rates,
// the cap at most.
func (c *Client) effectiveLocked() float64 {
	sum, bound := 0.0, false
	for _, s := range c.sessions {
		if s.cn == nil {
			continue
		}
		if s.rate.eff == 0 {
			return c.maxRate
		}
		sum, bound = sum+s.rate.eff, true
	}
	if !bound {
		return c.maxRate
	}
	if c.maxRate > 0 {
		return min(c.maxRate, sum)
	}
	return sum
}

// updateRateLocked paces the Client at effectiveLocked when that changed.
// A lower rate starts a new epoch of the pacer: the turns it handed out
// before, to parts still waiting for a session, are taken again.
func (c *Client) updateRateLocked() {
	if r := c.effectiveLocked(); r != c.eff {
		c.eff = r
		c.pace.setRate(r)
	}
}

// settled gives back the window slot of s, submitted on cn, once it has
// its outcome o, and tells the session's rate: an accepted submit_sm
// counts in the rate achieved, a throttled one may lower it.
func (c *Client) settled(cn *conn, s *submit, o outcome) {
	now := time.Now()
	var ch rateChange
	c.mu.Lock()
	r := &cn.sess.rate
	switch {
	case o.err == nil:
		r.accepted(now)
	case o.throttled:
		from, achieved, lowered := r.throttled(s.epoch, now, c.maxRate)
		if lowered {
			ch = rateChange{s: cn.sess, from: from, to: r.eff, achieved: achieved, lowered: true}
			c.updateRateLocked()
		}
		if r.recovering && !c.climbing {
			c.climbing = true
			go c.climb()
		}
	default:
		c.lastSub = TimedError{Err: o.err, At: now}
	}
	c.releaseLocked(cn)
	c.mu.Unlock()
	ch.log()
}

// climb raises the effective rate of the sessions slowed down by
// throttling, every increaseTick, until none is or the Client ends.
func (c *Client) climb() {
	t := time.NewTicker(increaseTick)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			c.mu.Lock()
			c.climbing = false
			c.mu.Unlock()
			return
		case now := <-t.C:
			var changes []rateChange
			c.mu.Lock()
			busy := false
			for _, s := range c.sessions {
				changed, recovering := s.rate.step(now, c.maxRate)
				if changed && !recovering {
					changes = append(changes, rateChange{s: s, restored: true})
				}
				busy = busy || recovering
			}
			c.updateRateLocked()
			c.grantLocked() // the sessions may have room now
			c.climbing = busy
			c.mu.Unlock()
			for _, ch := range changes {
				ch.log()
			}
			if !busy {
				return
			}
		}
	}
}

// SetMaxPerSecond changes Config.MaxPerSecond, the cap on submit_sm per
// second of the whole Client, at once: Sends waiting for their turn are
// paced at the new rate from now. 0 (or a negative, NaN or infinite r)
// removes the cap. Sessions slowed down by throttling (see the package
// documentation) keep their lower rates, and climb back under the new
// cap; one whose rate is at the new cap or above is limited by the cap
// alone from now. Safe while Sends run.
func (c *Client) SetMaxPerSecond(r float64) {
	r = capRate(r)
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxRate = r
	for _, s := range c.sessions {
		if sr := &s.rate; r > 0 && sr.eff >= r {
			sr.recovering = false
			sr.setRate(0, now)
		}
	}
	c.updateRateLocked()
	c.grantLocked()
}
