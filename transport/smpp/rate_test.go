package smpp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// limitedSession returns a session rate that has been sending for two
// seconds at 250/s, every submit accepted, before base: the SMSC's limit
// is not known yet (it ramps).
func limitedSession(base time.Time) *sessionRate {
	r := &sessionRate{}
	r.start(0, base.Add(-2*time.Second))
	r.setRate(250, base.Add(-2*time.Second))
	for i := range 500 {
		r.accepted(r.epoch, base.Add(-2*time.Second+time.Duration(i)*4*time.Millisecond))
	}
	return r
}

// TestRateOneEventPerWindow: an SMSC counting in windows throttles a
// whole window of submits at once. The first throttled answer sets the
// rate just under what the SMSC accepted over the last second (its
// limit, 250 here), not half of it; the other answers of the same
// submits (taken before that decision) change nothing.
func TestRateOneEventPerWindow(t *testing.T) {
	base := time.Now()
	r := limitedSession(base)
	ep := r.epoch
	ch := r.throttled(ep, base, 0)
	require.True(t, ch.lowered)
	require.InDelta(t, 250, ch.accepted, 3, "counted in slots of %v", accSlot)
	require.InDelta(t, 0.95*float64(ch.accepted), r.eff, 0.01, "just under the limit measured")
	rate := r.eff
	for i := range 99 {
		ch := r.throttled(ep, base.Add(time.Duration(i)*time.Millisecond), 0)
		require.False(t, ch.lowered, "answer %d of the same window", i)
	}
	require.Equal(t, rate, r.eff, "one event, not a hundred halvings")
	require.Equal(t, phaseProbe, r.phase, "a whole second measured: it climbs slowly from here")
}

// TestRateHoldsThenProbes: after a decrease the session is held; when a
// submit taken since is still throttled (the SMSC's window is spent) it
// stays held, the rate unchanged, and sends one probe at a time, waiting
// longer after each probe throttled; the first probe accepted releases
// it at its rate with an empty bucket.
func TestRateHoldsThenProbes(t *testing.T) {
	base := time.Now()
	r := limitedSession(base)
	r.throttled(r.epoch, base, 0)
	rate := r.eff
	require.True(t, r.held)
	require.False(t, r.room(base.Add(probeMin/2)), "held")
	now := base.Add(probeMin)
	require.True(t, r.room(now), "a probe is due")
	r.take()
	require.False(t, r.room(now), "one probe at a time")
	_, timed := r.untilRoom(now)
	require.False(t, timed, "its answer decides")

	// The probe is throttled: held again, longer.
	ch := r.throttled(r.epoch, now.Add(time.Millisecond), 0)
	require.False(t, ch.lowered, "the same event")
	require.Equal(t, rate, r.eff)
	require.Equal(t, 2*probeMin, r.probeDelay)
	wait, timed := r.untilRoom(now.Add(time.Millisecond))
	require.True(t, timed)
	require.Equal(t, 2*probeMin, wait)
	for range 5 {
		now = r.heldUntil
		require.True(t, r.room(now))
		r.take()
		r.throttled(r.epoch, now, 0)
	}
	require.Equal(t, probeMax, r.probeDelay, "the wait is bounded")

	// A probe taken, then not written: another may go.
	now = r.heldUntil
	r.take()
	r.untake()
	require.True(t, r.room(now))
	// A probe failing otherwise (a timeout): another may go too.
	r.take()
	r.failed(r.epoch)
	require.True(t, r.room(now))

	// Accepted: released at the same rate, nothing saved.
	r.take()
	r.accepted(r.epoch, now.Add(time.Millisecond))
	require.False(t, r.held)
	require.Equal(t, rate, r.eff)
	require.False(t, r.room(now.Add(time.Millisecond)), "the bucket starts empty")
	require.True(t, r.room(now.Add(time.Millisecond+time.Second/time.Duration(rate)+time.Millisecond)))
}

// TestRateNextEvent: a throttled answer more than a second after the last
// decrease is a new event, measured again (the SMSC's limit went down to
// 100 here): the rate follows what was accepted over that second.
func TestRateNextEvent(t *testing.T) {
	base := time.Now()
	r := limitedSession(base)
	r.throttled(r.epoch, base, 0)
	now := base.Add(probeMin)
	r.take()
	r.accepted(r.epoch, now)
	for i := range 100 {
		r.accepted(r.epoch, now.Add(time.Duration(i)*10*time.Millisecond))
	}
	now = base.Add(1100 * time.Millisecond)
	ch := r.throttled(r.epoch, now, 0)
	require.True(t, ch.lowered)
	require.InDelta(t, 0.95*float64(ch.accepted), r.eff, 0.01)
	require.Less(t, r.eff, 100.0)
}

// TestRateClimbsWhenBusy: a second after the last throttled answer, the
// rate climbs slowly (1 % a second, 1/s at least) while the SMSC accepts
// what the rate allows, and stays put while the session is idle; a cap
// reached makes the session unlimited under the cap.
func TestRateClimbsWhenBusy(t *testing.T) {
	base := time.Now()
	r := limitedSession(base)
	r.throttled(r.epoch, base, 0)
	r.accepted(r.epoch, base.Add(probeMin))
	rate := r.eff

	now := base.Add(throttleHold / 2)
	r.lastStep = now
	r.recent = 1000
	r.step(now.Add(increaseTick), 0)
	require.Equal(t, rate, r.eff, "not within throttleHold of a throttled answer")

	now = base.Add(2 * throttleHold)
	r.lastStep = now
	r.step(now.Add(increaseTick), 0) // idle
	require.Equal(t, rate, r.eff, "idle: the rate it learned stays")

	now = now.Add(increaseTick)
	r.recent = int(rate * increaseTick.Seconds())
	r.step(now.Add(increaseTick), 0)
	require.InDelta(t, rate+max(minIncrease, rate*increaseShare)*increaseTick.Seconds(), r.eff, 1e-9, "busy: it climbs")

	now = now.Add(increaseTick)
	r.recent = 1000
	require.True(t, r.step(now.Add(increaseTick), r.eff), "at the cap: unlimited under it")
	require.Zero(t, r.eff)
}

// TestRateRampDoublesWithRoundTrip: before any throttling a session
// without a cap starts at rampStart and doubles its rate every rampRTTs
// smoothed round trips while the SMSC accepts what it allows, with at
// most about twice a round trip's worth in flight, and becomes unlimited
// past unlimitedAbove. With a cap it starts unlimited.
func TestRateRampDoublesWithRoundTrip(t *testing.T) {
	base := time.Now()
	capped := &sessionRate{}
	capped.start(50, base)
	require.Zero(t, capped.eff)

	r := &sessionRate{}
	r.start(0, base)
	require.Equal(t, rampStart, r.eff)
	require.True(t, r.room(base), "the first submits go at once")
	for range 20 {
		r.answered(20 * time.Millisecond)
	}
	require.InDelta(t, float64(20*time.Millisecond), float64(r.srtt), float64(time.Millisecond))
	period := r.rampPeriod()
	require.Equal(t, rampRTTs*r.srtt, period)
	require.True(t, r.inFlightRoom(3))
	require.False(t, r.inFlightRoom(int(2*r.eff*r.srtt.Seconds())+1), "at most two round trips' worth in flight")

	r.lastStep = base
	r.recent = int(r.eff * period.Seconds())
	r.step(base.Add(period), 0)
	require.InDelta(t, 2*rampStart, r.eff, 0.01)
	r.lastStep = base
	r.recent = 0
	r.step(base.Add(period), 0)
	require.InDelta(t, 2*rampStart, r.eff, 0.01, "the SMSC took less: no climb")
	for r.eff > 0 {
		r.lastStep = base
		r.recent = 1 << 30
		restored := r.step(base.Add(period), 0)
		require.Equal(t, r.eff == 0, restored)
	}
	require.True(t, r.inFlightRoom(1000), "unlimited")
}
