package smscsim

import (
	"time"

	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/linxGnu/gosmpp/data"
	"golang.org/x/time/rate"
)

// The limits a real SMSC puts on its clients: a submit rate per bind
// (Config.BindRate), a number of binds per system_id
// (Config.MaxBindsPerSystemID), binds refused for a while (RefuseBinds),
// and connections dropped with submit_sm in flight (DropMidWindow).

// BindLimit is how Config.BindRate counts the submit_sm of a session.
type BindLimit int

// The ways an SMSC counts a bind's submit_sm.
const (
	// BindBucket: a token bucket of BindRate a second holding a tenth of
	// a second's worth (at least one), full at bind.
	BindBucket BindLimit = iota
	// BindFixedWindow: at most BindRate (rounded down, one at least) in
	// each wall-clock second; a burst at the start of a second is
	// throttled once they are in, whatever the average.
	BindFixedWindow
	// BindSlidingWindow: at most BindRate (rounded down, one at least)
	// accepted over the last second.
	BindSlidingWindow
)

// bindLimiter decides whether a session may submit one more submit_sm at
// now, and counts it when it may.
type bindLimiter interface {
	allow(now time.Time) bool
}

// newBindLimiter is the limiter of one session for Config.BindRate,
// counted as kind says; nil when rate is 0 (unlimited).
func newBindLimiter(perSecond float64, kind BindLimit) bindLimiter {
	if perSecond <= 0 {
		return nil
	}
	n := max(1, int(perSecond))
	switch kind {
	case BindFixedWindow:
		return &fixedWindow{limit: n}
	case BindSlidingWindow:
		return &slidingWindow{limit: n}
	}
	return bucket{rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond/10)))}
}

type bucket struct{ l *rate.Limiter }

func (b bucket) allow(now time.Time) bool { return b.l.AllowN(now, 1) }

// fixedWindow counts in wall-clock seconds.
type fixedWindow struct {
	limit int
	sec   int64 // the second counted, in Unix seconds
	n     int
}

func (w *fixedWindow) allow(now time.Time) bool {
	if sec := now.Unix(); sec != w.sec {
		w.sec, w.n = sec, 0
	}
	if w.n >= w.limit {
		return false
	}
	w.n++
	return true
}

// slidingWindow keeps the times of the submits accepted over the last
// second, oldest first.
type slidingWindow struct {
	limit int
	times []time.Time
}

func (w *slidingWindow) allow(now time.Time) bool {
	from := now.Add(-time.Second)
	i := 0
	for i < len(w.times) && !w.times[i].After(from) {
		i++
	}
	w.times = w.times[i:]
	if len(w.times) >= w.limit {
		return false
	}
	w.times = append(w.times, now)
	return true
}

// RefuseBinds answers ESME_RBINDFAIL to every bind request for d from
// now (and closes its connection), as an SMSC in maintenance does;
// sessions bound already go on. A later call replaces the period; d <= 0
// ends it.
func (s *Server) RefuseBinds(d time.Duration) {
	if d <= 0 {
		s.refuseBindsUntil.Store(0)
		return
	}
	s.refuseBindsUntil.Store(time.Now().Add(d).UnixNano())
}

// bindsRefusedUntil is the end of the RefuseBinds period; zero when binds
// are not refused now.
func (s *Server) bindsRefusedUntil() time.Time {
	until := s.refuseBindsUntil.Load()
	if until == 0 || time.Now().UnixNano() >= until {
		return time.Time{}
	}
	return time.Unix(0, until)
}

// DropMidWindow makes every connection open now close its TCP connection
// as soon as it reads its next submit_sm, without answering it nor any
// request it had not answered yet, as an SMSC that fails with a window of
// submit_sm in flight does. The submit_sm read and left unanswered are not
// accepted: not counted in Stats.Submits, not recorded, no receipt. It
// happens once per connection and call: connections opened later, or that
// read no submit_sm, are not dropped. It returns the number of connections
// it armed; each drop counts in Stats.Dropped.
func (s *Server) DropMidWindow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for cn := range s.conns {
		cn.dropMid.Store(true)
	}
	return len(s.conns)
}

// dropsOn closes the connection when DropMidWindow armed it and f is a
// submit_sm; it reports whether it did.
func (cn *conn) dropsOn(f smppwire.Frame) bool {
	if f.Header.CommandID != data.SUBMIT_SM || !cn.dropMid.CompareAndSwap(true, false) {
		return false
	}
	cn.s.n.dropped.Add(1)
	cn.s.log.Info("smscsim dropping the connection mid-window", "remote", cn.nc.RemoteAddr().String())
	cn.shutdown()
	return true
}

// claimBind binds cn as bt with systemID unless Config.MaxBindsPerSystemID
// live sessions are bound with systemID already; false when refused. The
// count and the bind happen under s.mu, so two binds at once cannot both
// take the last place.
func (s *Server) claimBind(cn *conn, bt int, systemID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if limit := s.cfg.MaxBindsPerSystemID; limit > 0 {
		n := 0
		for other := range s.conns {
			if other == cn {
				continue
			}
			other.mu.Lock()
			if !other.closed && other.bindType != bindNone && other.systemID == systemID {
				n++
			}
			other.mu.Unlock()
		}
		if n >= limit {
			return false
		}
	}
	cn.mu.Lock()
	cn.bindType, cn.systemID = bt, systemID
	cn.limiter = newBindLimiter(s.cfg.BindRate, s.cfg.BindLimit)
	cn.mu.Unlock()
	return true
}

// allowSubmit counts a submit_sm against the session's Config.BindRate;
// false when it is beyond.
func (cn *conn) allowSubmit(now time.Time) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.limiter == nil || cn.limiter.allow(now)
}
