package smpp

import (
	"context"
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
	cn    *conn     // the bound connection, nil when none
	since time.Time // when cn bound
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

// acquire takes a window slot on a bound session, waiting (up to ctx) for
// one to bind or to have room; Sends that wait are served in turn. id
// names the message in errors.
func (c *Client) acquire(ctx context.Context, id messaging.ID) (*conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, transientErr("client closed", ErrClosed)
	}
	if c.waiters.Len() == 0 {
		if cn := c.pickLocked(); cn != nil {
			c.takeLocked(cn)
			c.mu.Unlock()
			return cn, nil
		}
	}
	w := make(chan *conn, 1)
	el := c.waiters.PushBack(w)
	c.mu.Unlock()

	var err error
	select {
	case cn := <-w:
		return cn, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.ctx.Done():
	}
	c.mu.Lock()
	select {
	case cn := <-w: // granted meanwhile: give it back
		c.releaseLocked(cn)
	default:
		c.waiters.Remove(el)
	}
	bound := c.nbound > 0
	c.mu.Unlock()
	switch {
	case err == nil:
		return nil, transientErr("client closed", ErrClosed)
	case !bound:
		return nil, fmt.Errorf("smpp: waiting for a bound session: %w", err)
	}
	return nil, fmt.Errorf("smpp: send %s: waiting for the window: %w", id, err)
}

// release gives back a window slot of cn; a non-nil err is the failure of
// the submit_sm that held it.
func (c *Client) release(cn *conn, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.lastSub = TimedError{Err: err, At: time.Now()}
	}
	c.releaseLocked(cn)
}

func (c *Client) releaseLocked(cn *conn) {
	cn.inUse--
	c.inUse--
	c.grantLocked()
}

func (c *Client) takeLocked(cn *conn) {
	cn.inUse++
	c.inUse++
}

// grantLocked hands window slots to the waiting Sends, first come first
// served, while a bound session has room.
func (c *Client) grantLocked() {
	for c.waiters.Len() > 0 {
		cn := c.pickLocked()
		if cn == nil {
			return
		}
		c.takeLocked(cn)
		c.waiters.Remove(c.waiters.Front()).(chan *conn) <- cn
	}
}

// pickLocked returns the bound connection with the fewest submit_sm
// outstanding among those with room in their window, nil when none has;
// ties go round the sessions, so that sends one at a time use them all.
func (c *Client) pickLocked() *conn {
	var best *conn
	n := len(c.sessions)
	for k := range n {
		cn := c.sessions[(c.next+k)%n].cn
		if cn == nil || cn.inUse >= c.cfg.Window || cn.ended() {
			continue
		}
		if best == nil || cn.inUse < best.inUse {
			best = cn
		}
	}
	if best != nil {
		c.next = (best.sess.idx + 1) % n
	}
	return best
}
