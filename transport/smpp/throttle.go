package smpp

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/linxGnu/gosmpp/data"
)

// Adaptive throttling: how each session's rate follows the SMSC's
// ESME_RTHROTTLED and ESME_RMSGQFUL answers on it. See the package
// documentation (Throttling) for the whole of it.
const (
	// rampStart is the rate, in submit_sm a second, a session starts at
	// when the Client has no cap: an SMSC's limit is not known yet, and a
	// window of submits written at once would mostly come back throttled.
	rampStart = 100.0
	// Until the SMSC first throttles it, a session that uses its rate
	// doubles it every rampRTTs round trips (submit_sm to
	// submit_sm_resp, smoothed), rampMin to rampMax: so that the
	// submits in flight when the SMSC first throttles are a small share
	// of what it takes in a second, whatever the latency.
	rampRTTs = 16
	rampMin  = 100 * time.Millisecond
	rampMax  = 2 * time.Second
	// rampInFlightMin is the least a ramping session may have
	// outstanding (see inFlightRoom).
	rampInFlightMin = 4
	// unlimitedAbove: a session whose rate climbs beyond it is no longer
	// paced (its window limits it).
	unlimitedAbove = 5000.0

	// throttleBackoff multiplies the submit_sm accepted over the last
	// second, the estimate of the SMSC's limit, for the new rate.
	throttleBackoff = 0.95
	// throttleFloor is the lowest rate of a session, in submit_sm a
	// second.
	throttleFloor = 1.0
	// throttleEvent: a throttled answer within this time of the last
	// decrease is part of the same event: it holds the session (see
	// probeMin) instead of lowering the rate again. SMSCs count in
	// windows of a second.
	throttleEvent = time.Second
	// probeMin and probeMax bound how long a held session waits before it
	// submits one part to see whether the SMSC takes it again; the wait
	// doubles with each probe throttled.
	probeMin = 10 * time.Millisecond
	probeMax = 50 * time.Millisecond

	// throttleHold is how long a session's rate stays put after a
	// throttled answer before it climbs again.
	throttleHold = time.Second
	// minIncrease is the least a session's rate climbs a second, in
	// submit_sm a second, above its estimate; otherwise it climbs by
	// increaseShare of the rate a second.
	minIncrease   = 1.0
	increaseShare = 0.01
	// reprobeAfter: a session that climbed without a throttled answer for
	// this long, busy, doubles its rate again every second (the SMSC's
	// limit may have been raised).
	reprobeAfter = 15 * time.Second
	// busyShare: a session climbs only when the SMSC accepted this share
	// of what its rate allowed.
	busyShare = 0.7
	// increaseTick is how often the climb is applied, in proportion.
	increaseTick = 100 * time.Millisecond

	// The submit_sm accepted are counted in accSlots slots of accSlot: a
	// second.
	accSlot  = 10 * time.Millisecond
	accSlots = 100

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

// climbPhase is how a session's rate climbs while it has parts to send.
type climbPhase int

const (
	// phaseRamp: never throttled yet; the rate doubles every rampRTTs
	// round trips.
	phaseRamp climbPhase = iota
	// phaseDouble: the rate doubles every second up to ssthresh: the
	// estimate may be far below the SMSC's limit.
	phaseDouble
	// phaseProbe: close to the SMSC's limit; the rate climbs slowly
	// (minIncrease, increaseShare) to find whether it rose.
	phaseProbe
)

// sessionRate is the adaptive rate of one session. Without a cap it
// starts paced at rampStart and doubles quickly while it has parts to
// send, until the SMSC throttles it; with a cap it starts unlimited
// (under the cap). A throttle event sets the rate just under the submit_sm
// the SMSC accepted over the last second (its limit, as measured), and
// the answers of the same event hold the session instead of lowering the
// rate again; the rate then climbs slowly while the session is busy. Its
// fields are guarded by Client.mu. See the package documentation.
type sessionRate struct {
	eff    float64 // rate; 0: unlimited
	epoch  uint64  // counts the decisions taken on throttled answers
	tokens float64 // the bucket while eff > 0
	burst  float64
	last   time.Time // when tokens was last brought up to date

	phase     climbPhase
	measured  bool    // the last decrease measured a whole second of submits
	ssthresh  float64 // phaseDouble ends there; 0: no end
	recent    int     // submit_sm accepted since the last step
	busyFor   time.Duration
	lastThrot time.Time // the last throttled answer, of any epoch
	lastEvent time.Time // the last decrease
	lastStep  time.Time

	// A held session takes no part until heldUntil, then one, the probe,
	// until its answer: accepted, the session goes on at its rate.
	held       bool
	heldUntil  time.Time
	probeOut   bool
	probeDelay time.Duration

	srtt time.Duration // smoothed round trip of the submits answered

	acc [accSlots]struct {
		slot int64
		n    int
	} // submit_sm accepted, by slot
	active     time.Time // when the submits accepted without a pause of a second began
	lastAccept time.Time
}

// start sets the initial rate of a session: unlimited under a cap (the
// Client's pacer holds it), else rampStart.
func (r *sessionRate) start(cap float64, now time.Time) {
	r.phase, r.lastStep = phaseRamp, now
	if cap > 0 {
		r.setRate(0, now)
		return
	}
	r.setRate(rampStart, now)
	r.tokens = r.burst
}

// sessionBurst is the bucket of a session at rate rate: a twenty-fifth of
// a second's worth, at least one, so that even a window of an SMSC that
// counts per second starts with no burst above its limit.
func sessionBurst(rate float64) float64 { return max(1, math.Floor(rate/25)) }

// setRate changes the rate to rate (0: unlimited) at now. Going from
// unlimited to a rate starts with an empty bucket: a session that was not
// paced has nothing saved.
func (r *sessionRate) setRate(rate float64, now time.Time) {
	r.advance(now)
	if rate > 0 && r.eff == 0 {
		r.tokens = 0
	}
	r.eff, r.last = rate, now
	r.burst = sessionBurst(rate)
	r.tokens = min(r.tokens, r.burst)
}

// advance adds the tokens due since the last call.
func (r *sessionRate) advance(now time.Time) {
	if r.eff > 0 && now.After(r.last) {
		r.tokens = min(r.burst, r.tokens+now.Sub(r.last).Seconds()*r.eff)
	}
	r.last = now
}

// room reports whether the session may submit at now: not held (or its
// probe is due), and unlimited or a token in its bucket.
func (r *sessionRate) room(now time.Time) bool {
	if r.held {
		return !r.probeOut && !now.Before(r.heldUntil)
	}
	if r.eff == 0 {
		return true
	}
	r.advance(now)
	return r.tokens >= 1-1e-9
}

// take takes the turn room found.
func (r *sessionRate) take() {
	switch {
	case r.held:
		r.probeOut = true
	case r.eff > 0:
		r.tokens = max(0, r.tokens-1)
	}
}

// untake gives back a turn taken for a submit_sm that was not written.
func (r *sessionRate) untake() {
	switch {
	case r.held:
		r.probeOut = false
	case r.eff > 0:
		r.tokens = min(r.burst, r.tokens+1)
	}
}

// untilRoom is how long after now the session has room again (room was
// false); false when a pending answer, not time, decides.
func (r *sessionRate) untilRoom(now time.Time) (time.Duration, bool) {
	if r.held {
		if r.probeOut {
			return 0, false
		}
		return r.heldUntil.Sub(now), true
	}
	if r.eff == 0 {
		return 0, true
	}
	r.advance(now)
	if r.tokens >= 1 {
		return 0, true
	}
	return time.Duration((1 - r.tokens) / r.eff * float64(time.Second)), true
}

// hold stops the session's submits for the probe delay, then lets one
// through (the probe); the delay doubles each time, up to probeMax. The
// answers to submits taken before tell nothing more: a new epoch.
func (r *sessionRate) hold(now time.Time) {
	if !r.held {
		r.probeDelay = probeMin
	} else {
		r.probeDelay = min(2*r.probeDelay, probeMax)
	}
	r.held, r.probeOut = true, false
	r.heldUntil = now.Add(r.probeDelay)
	r.epoch++
}

// release ends a hold: the SMSC took the probe. The bucket starts empty.
func (r *sessionRate) release(now time.Time) {
	r.held, r.probeOut = false, false
	r.tokens, r.last = 0, now
}

// accepted counts a submit_sm, taken in epoch ep, answered ESME_ROK at
// now; the probe of a held session releases it.
func (r *sessionRate) accepted(ep uint64, now time.Time) {
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
	r.recent++
	if r.held && ep == r.epoch {
		r.release(now)
	}
}

// failed tells the session that a submit_sm taken in epoch ep failed
// otherwise (an error status, a timeout, a lost connection): when it was
// the probe of a held session, another may go.
func (r *sessionRate) failed(ep uint64) {
	if r.held && ep == r.epoch {
		r.probeOut = false
	}
}

// inFlightRoom reports whether the session may have one more submit_sm
// outstanding than inUse: always, but while it ramps up, when at most
// twice what its rate keeps outstanding over a smoothed round trip
// (rampInFlightMin at least). A round trip that grows under the ramp
// (the SMSC queues) then slows the ramp at once rather than filling the
// window: the submits in flight when the SMSC first throttles stay few.
func (r *sessionRate) inFlightRoom(inUse int) bool {
	if r.phase != phaseRamp || r.eff == 0 {
		return true
	}
	return float64(inUse) < max(rampInFlightMin, 2*r.eff*r.srtt.Seconds())
}

// answered counts the round trip d of a submit_sm answered (accepted or
// throttled) in the smoothed round trip, which follows a longer one
// quickly (the SMSC or the link queues: ramp slower at once) and a
// shorter one slowly.
func (r *sessionRate) answered(d time.Duration) {
	switch {
	case r.srtt == 0:
		r.srtt = d
	case d > r.srtt:
		r.srtt += (d - r.srtt) / 2
	default:
		r.srtt += (d - r.srtt) / 8
	}
}

// rampPeriod is how often the rate doubles in phaseRamp.
func (r *sessionRate) rampPeriod() time.Duration {
	return min(max(rampRTTs*r.srtt, rampMin), rampMax)
}

// acceptedRate returns the submit_sm accepted over the last second, and
// their rate: over the second, or since the session's submits began to
// be accepted when that is less (accSlot at least).
func (r *sessionRate) acceptedRate(now time.Time) (int, float64) {
	slot := now.UnixNano() / int64(accSlot)
	n := 0
	for _, b := range r.acc {
		if b.slot > slot-accSlots && b.slot <= slot {
			n += b.n
		}
	}
	over := time.Second
	if !r.active.IsZero() && now.Sub(r.active) < over {
		over = max(now.Sub(r.active), accSlot)
	}
	return n, float64(n) / over.Seconds()
}

// rateChange is a change of a session's rate, to log once Client.mu is
// released.
type rateChange struct {
	s                 *session
	from, to          float64
	accepted          int
	lowered, restored bool
}

func (ch rateChange) log() {
	switch {
	case ch.lowered:
		ch.s.log.Info("smpp throttled by the SMSC: session rate set under what it accepted over the last second",
			"from_per_second", rateAttr(ch.from), "to_per_second", math.Round(ch.to*10)/10, "accepted_last_second", ch.accepted)
	case ch.restored:
		ch.s.log.Info("smpp session rate unlimited (the cap, if any, applies)")
	}
}

// throttled tells the session that a submit_sm it took in epoch ep was
// throttled at now, with cap the Client's cap (0: none). An answer to a
// submit taken before the last decision (epoch) belongs to an event seen
// already and changes nothing: a window's answers all come back throttled
// at once. One taken since, within throttleEvent of the last decrease or
// while the session is held, means the SMSC's count is spent for now: the
// session is held, then probes. Otherwise it is a new event: the rate
// becomes throttleBackoff of the submit_sm accepted over the last second
// (no more than the rate it had, throttleFloor at least, the cap at
// most), and the session is held. When the session had been sending for
// less than a second, that count may be short of the SMSC's rate (a
// bucket refilling): unless the SMSC keeps refusing (a window spent), the
// rate doubles every rampPeriod up to what the rate since the submits
// began suggests. When the new rate is less than half the old one, it
// doubles every second up to that half. Then it climbs slowly (see step).
// It reports a rate lowered.
func (r *sessionRate) throttled(ep uint64, now time.Time, cap float64) (ch rateChange) {
	r.lastThrot, r.busyFor = now, 0
	if ep != r.epoch {
		return ch
	}
	if r.held || (!r.lastEvent.IsZero() && now.Sub(r.lastEvent) < throttleEvent) {
		// Still refused a while after the decrease, below the rate
		// accepted: the SMSC counts in windows and its quota is spent
		// for now, so the count of the first event was that quota.
		if r.phase == phaseDouble && !r.measured && r.eff > 0 && now.Sub(r.lastEvent).Seconds() > 2/r.eff {
			r.phase, r.ssthresh = phaseProbe, 0
		}
		r.hold(now)
		return ch
	}
	n, rate := r.acceptedRate(now)
	measured := !r.active.IsZero() && now.Sub(r.active) >= time.Second
	before := r.eff
	bound := func(x float64) float64 {
		x = max(throttleFloor, x)
		if before > 0 {
			x = min(x, before)
		}
		if cap > 0 {
			x = min(x, cap)
		}
		return x
	}
	to := bound(throttleBackoff * float64(n))
	switch {
	case !measured:
		// Less than a second of submits: n is the SMSC's quota when it
		// counts in windows (what follows is refused: see above), or
		// less than its rate when it refills a bucket; the rate since
		// the submits began is above both.
		r.phase, r.ssthresh = phaseDouble, bound(throttleBackoff*rate)
	case before > 0 && to < before/2 && (r.measured || r.phase != phaseDouble):
		// Far below the rate before, which was no guess: the session
		// was not using its rate when the SMSC throttled it (a burst,
		// or a passing refusal). Back to half of it soon.
		r.phase, r.ssthresh = phaseDouble, before/2
	default:
		r.phase, r.ssthresh = phaseProbe, 0
	}
	r.measured = measured
	r.lastEvent, r.lastStep = now, now
	r.setRate(to, now)
	r.hold(now)
	return rateChange{from: before, to: to, accepted: n, lowered: true}
}

// step climbs the rate for the time since the last step when the session
// used it (the SMSC accepted busyShare of what its rate allowed since the
// last step: its rate, not something else, held it back) and, once throttled, throttleHold has passed since the last
// throttled answer: it doubles every rampPeriod before the first event,
// every second in phaseDouble (up to ssthresh), and otherwise climbs by
// increaseShare of the rate a second (minIncrease at least), doubling
// again once it went reprobeAfter without a throttled answer. The session
// is unlimited once its rate reaches the cap, or unlimitedAbove. It
// reports whether the rate became unlimited.
func (r *sessionRate) step(now time.Time, cap float64) (restored bool) {
	dt := now.Sub(r.lastStep)
	r.lastStep = now
	recent := r.recent
	r.recent = 0
	if r.eff == 0 || r.held || dt <= 0 || float64(recent) < busyShare*r.eff*dt.Seconds() {
		return false
	}
	hold := throttleHold
	if r.phase == phaseDouble && !r.measured {
		hold = r.rampPeriod() // the estimate is a floor: climb soon
	}
	if !r.lastThrot.IsZero() && now.Sub(r.lastThrot) < hold {
		return false
	}
	to := r.eff
	switch r.phase {
	case phaseRamp:
		to *= math.Exp2(float64(dt) / float64(r.rampPeriod()))
	case phaseDouble:
		period := time.Second
		if !r.measured {
			period = r.rampPeriod()
		}
		to *= math.Exp2(float64(dt) / float64(period))
		if r.ssthresh > 0 && to >= r.ssthresh {
			r.phase, r.ssthresh = phaseProbe, 0
		}
	default:
		to += max(minIncrease, r.eff*increaseShare) * dt.Seconds()
		if r.busyFor += dt; r.busyFor >= reprobeAfter {
			r.phase, r.ssthresh, r.busyFor = phaseDouble, 0, 0
		}
	}
	if (cap > 0 && to >= cap) || to > unlimitedAbove {
		to = 0
	}
	r.setRate(to, now)
	return to == 0
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
// counts in the rate accepted, a throttled one may lower it or hold the
// session.
func (c *Client) settled(cn *conn, s *submit, o outcome) {
	now := time.Now()
	var ch rateChange
	c.mu.Lock()
	r := &cn.sess.rate
	if o.err == nil || o.throttled {
		r.answered(now.Sub(s.sent))
	}
	switch {
	case o.err == nil:
		r.accepted(s.epoch, now)
	case o.throttled:
		if ch = r.throttled(s.epoch, now, c.maxRate); ch.lowered {
			ch.s = cn.sess
			c.updateRateLocked()
		}
		c.startClimbLocked()
	default:
		r.failed(s.epoch)
		c.lastSub = TimedError{Err: o.err, At: now}
	}
	c.releaseLocked(cn)
	c.mu.Unlock()
	ch.log()
}

// startClimbLocked starts climb unless it runs or no session is paced.
func (c *Client) startClimbLocked() {
	if c.climbing || c.closed {
		return
	}
	for _, s := range c.sessions {
		if s.rate.eff > 0 {
			c.climbing = true
			go c.climb()
			return
		}
	}
}

// climb raises the rate of the paced sessions that are busy, every
// increaseTick, until none is paced or the Client ends.
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
			paced := false
			for _, s := range c.sessions {
				if s.rate.step(now, c.maxRate) {
					changes = append(changes, rateChange{s: s, restored: true})
				}
				paced = paced || s.rate.eff > 0
			}
			c.updateRateLocked()
			c.grantLocked() // the sessions may have room now
			c.climbing = paced
			c.mu.Unlock()
			for _, ch := range changes {
				ch.log()
			}
			if !paced {
				return
			}
		}
	}
}

// SetMaxPerSecond changes Config.MaxPerSecond, the cap on submit_sm per
// second of the whole Client, at once: Sends waiting for their turn are
// paced at the new rate from now. 0 (or a negative, NaN or infinite r)
// removes the cap. Sessions paced after throttling (see the package
// documentation) keep their rates, and climb under the new cap; one
// whose rate is at the new cap or above is limited by the cap alone from
// now. Safe while Sends run.
func (c *Client) SetMaxPerSecond(r float64) {
	r = capRate(r)
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxRate = r
	for _, s := range c.sessions {
		if sr := &s.rate; r > 0 && sr.eff >= r {
			sr.setRate(0, now)
		}
	}
	c.updateRateLocked()
	c.grantLocked()
}
