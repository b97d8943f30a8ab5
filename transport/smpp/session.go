package smpp

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/linxGnu/gosmpp/data"
)

// session is one of the Client's Config.Binds: it binds, serves the
// connection until it ends and binds again, until Close.
type session struct {
	idx     int
	log     *slog.Logger
	submits atomic.Uint64 // submit_sm written on it, every connection included

	// guarded by Client.mu
	cn    *conn       // the bound connection, nil when none
	since time.Time   // when cn bound
	rate  sessionRate // its adaptive rate, kept across its connections
}

// run binds s, serves its connection until it ends, and binds again, until
// Close. Each session keeps its own count of failures for the backoff, so
// one that keeps failing does not hold back the others.
func (c *Client) run(s *session) {
	failures := 0 // bind attempts failed, or sessions lost, in a row
	first := true
	for c.ctx.Err() == nil {
		cn, err := c.dial(c.ctx, s)
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			c.n.bindFailures.Add(1)
			c.note(&c.lastBind, err)
			failures++
			backoff := c.cfg.BindBackoff.Delay(failures)
			s.log.Warn("smpp bind failed", "err", err, "retry_in", backoff)
			if !c.sleep(backoff) {
				return
			}
			continue
		}
		c.n.binds.Add(1)
		if !first {
			c.n.rebinds.Add(1)
		}
		first = false
		s.log.Info("smpp bound", "system_id", c.cfg.SystemID, "bind_type", c.cfg.BindType.String())
		start := time.Now()
		if !c.setBound(s, cn) {
			// closed while binding
			_, _ = cn.nc.Write(smppwire.HeaderOnly(data.UNBIND, data.ESME_ROK, c.nextSeq()))
			_ = cn.raw.Close()
			return
		}
		cause := cn.serve()
		c.setUnbound(s, cn)
		if c.ctx.Err() != nil {
			return
		}
		c.note(&c.lastLost, cause)
		if time.Since(start) >= stableAfter {
			failures = 0
		}
		failures++
		backoff := c.cfg.BindBackoff.Delay(failures)
		s.log.Warn("smpp session lost", "err", cause, "rebind_in", backoff)
		if !c.sleep(backoff) {
			return
		}
	}
}

// note records err, now, as the last error of its kind.
func (c *Client) note(last *TimedError, err error) {
	c.mu.Lock()
	*last = TimedError{Err: err, At: time.Now()}
	c.mu.Unlock()
}

// sleep waits d; false when the Client was closed meanwhile.
func (c *Client) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// setBound publishes cn as the connection of s and hands its window to
// the Sends waiting; false when the Client was closed meanwhile.
func (c *Client) setBound(s *session, cn *conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	s.cn, s.since = cn, time.Now()
	c.nbound++
	if c.nbound == 1 {
		close(c.boundCh)
	}
	c.updateRateLocked()
	c.startClimbLocked()
	c.grantLocked()
	return true
}

// setUnbound withdraws cn, the connection of s, once it ended.
func (c *Client) setUnbound(s *session, cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.cn != cn {
		return
	}
	s.cn, s.since = nil, time.Time{}
	c.nbound--
	if c.nbound == 0 {
		c.boundCh = make(chan struct{})
	}
	c.updateRateLocked()
}

// boundConns returns the connections bound now.
func (c *Client) boundConns() []*conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*conn
	for _, s := range c.sessions {
		if s.cn != nil {
			out = append(out, s.cn)
		}
	}
	return out
}

// liveInUse is the number of submit_sm outstanding on connections that
// have not ended (those of an ended connection have failed).
func (c *Client) liveInUse() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.sessions {
		if s.cn != nil && !s.cn.ended() {
			n += s.cn.inUse
		}
	}
	return n
}

// errStaleTurn: the pacer's rate went down since the part took its turn
// (see pacer.stale); it must take another.
var errStaleTurn = errors.New("turn taken at a rate since lowered")

// waiter is a part waiting for a session with room.
type waiter struct {
	ch    chan slot
	ep    uint64   // the pacer's epoch of the part's turn
	prio  bool     // a throttled part submitted again: served first
	avoid *session // the session that throttled it, taken only when no other has room
}

// slot is a window slot on cn and a turn of its session's rate, taken in
// the session's rate epoch epoch; a nil cn tells a waiter that its turn
// went stale.
type slot struct {
	cn    *conn
	epoch uint64
}

// acquire takes a window slot, and a turn of its rate, on a bound session
// (see pickLocked) for a part whose turn in the pacer came in epoch ep,
// waiting (up to ctx) for one to bind or to have room; parts that wait
// are served in turn, retries (prio) first, each preferably on another
// session than avoid. It fails with errStaleTurn when the pacer's rate
// went down meanwhile. id names the message in errors.
func (c *Client) acquire(ctx context.Context, id messaging.ID, ep uint64, prio bool, avoid *session) (slot, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return slot{}, transientErr("client closed", ErrClosed)
	}
	if c.pace.stale(ep) {
		c.mu.Unlock()
		return slot{}, errStaleTurn
	}
	if c.waiters.Len() == 0 || (prio && c.nprio == 0) {
		if cn := c.pickLocked(avoid, time.Time{}); cn != nil {
			g := c.takeLocked(cn)
			c.mu.Unlock()
			return g, nil
		}
	}
	w := &waiter{ch: make(chan slot, 1), ep: ep, prio: prio, avoid: avoid}
	el := pushInTurn(&c.waiters, w, prio, &c.nprio)
	c.grantLocked()
	c.mu.Unlock()

	var err error
	select {
	case g := <-w.ch:
		if g.cn == nil {
			return slot{}, errStaleTurn
		}
		return g, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.ctx.Done():
	}
	c.mu.Lock()
	select {
	case g := <-w.ch: // granted meanwhile: give it back
		if g.cn != nil {
			c.unuseLocked(g.cn)
		}
	default:
		c.removeWaiterLocked(el)
	}
	bound := c.nbound > 0
	c.mu.Unlock()
	switch {
	case err == nil:
		return slot{}, transientErr("client closed", ErrClosed)
	case !bound:
		return slot{}, fmt.Errorf("smpp: waiting for a bound session: %w", err)
	}
	return slot{}, fmt.Errorf("smpp: send %s: waiting for the window: %w", id, err)
}

func (c *Client) removeWaiterLocked(el *list.Element) {
	if c.waiters.Remove(el).(*waiter).prio {
		c.nprio--
	}
}

// unuse gives back the window slot, and the turn of its rate, that a
// part took on cn but did not submit.
func (c *Client) unuse(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unuseLocked(cn)
}

func (c *Client) unuseLocked(cn *conn) {
	cn.sess.rate.untake()
	c.releaseLocked(cn)
}

// releaseLocked gives back a window slot of cn.
func (c *Client) releaseLocked(cn *conn) {
	cn.inUse--
	c.inUse--
	c.grantLocked()
}

// takeLocked takes a window slot on cn and a turn of its session's rate,
// which pickLocked found room for.
func (c *Client) takeLocked(cn *conn) slot {
	cn.inUse++
	c.inUse++
	r := &cn.sess.rate
	r.take()
	return slot{cn: cn, epoch: r.epoch}
}

// grantLocked hands slots to the waiting parts, in turn, while a bound
// session has room; a part whose turn went stale is sent back to the
// pacer. When sessions have room in their window but not in their rate,
// a timer grants again once one has.
func (c *Client) grantLocked() {
	var now time.Time
	for c.waiters.Len() > 0 {
		front := c.waiters.Front()
		w := front.Value.(*waiter)
		if c.pace.stale(w.ep) {
			c.removeWaiterLocked(front)
			w.ch <- slot{}
			continue
		}
		if now.IsZero() {
			now = time.Now()
		}
		cn := c.pickLocked(w.avoid, now)
		if cn == nil {
			c.armRoomTimerLocked()
			return
		}
		c.removeWaiterLocked(front)
		w.ch <- c.takeLocked(cn)
	}
}

// armRoomTimerLocked sets the timer to grant again when the first of the
// bound sessions with room in their window has room in its rate, or its
// hold ends (right after pickLocked found none with both).
func (c *Client) armRoomTimerLocked() {
	var d time.Duration
	found := false
	now := time.Now()
	for _, s := range c.sessions {
		cn := s.cn
		if cn == nil || cn.inUse >= c.cfg.Window || cn.ended() {
			continue
		}
		w, timed := s.rate.untilRoom(now)
		if !timed {
			continue // an answer to its probe grants again
		}
		if !found || w < d {
			d, found = w, true
		}
	}
	if !found {
		return // a release, a bind or a climb grants again
	}
	d = max(d, time.Millisecond)
	if c.roomTimer == nil {
		c.roomTimer = time.AfterFunc(d, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.grantLocked()
		})
	} else {
		c.roomTimer.Reset(d)
	}
}

// pickLocked returns, among the bound connections with room in their
// window and whose session has room in its rate (unlimited, or a token
// in its bucket at now; the zero now reads the clock when needed), the
// one with the fewest submit_sm outstanding, nil when none has room;
// avoid's only when no other session has room. Ties go round the
// sessions, so that sends one at a time use them all.
func (c *Client) pickLocked(avoid *session, now time.Time) *conn {
	var best, avoided *conn
	n := len(c.sessions)
	for k := range n {
		s := c.sessions[(c.next+k)%n]
		cn := s.cn
		if cn == nil || cn.inUse >= c.cfg.Window || cn.ended() || !s.rate.inFlightRoom(cn.inUse) {
			continue
		}
		if s.rate.eff > 0 || s.rate.held {
			if now.IsZero() {
				now = time.Now()
			}
			if !s.rate.room(now) {
				continue
			}
		}
		if s == avoid {
			avoided = cn
			continue
		}
		if best == nil || cn.inUse < best.inUse {
			best = cn
		}
	}
	if best == nil {
		best = avoided
	}
	if best != nil {
		c.next = (best.sess.idx + 1) % n
	}
	return best
}
