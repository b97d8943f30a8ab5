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

// newBindLimiter is the token bucket of one session for Config.BindRate:
// rate submit_sm per second with a burst of a tenth of a second's worth
// (at least one), starting full; nil when rate is 0 (unlimited).
func newBindLimiter(perSecond float64) *rate.Limiter {
	if perSecond <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond/10)))
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
	cn.limiter = newBindLimiter(s.cfg.BindRate)
	cn.mu.Unlock()
	return true
}

// allowSubmit takes a token from the session's Config.BindRate bucket;
// false when it is empty.
func (cn *conn) allowSubmit() bool {
	cn.mu.Lock()
	l := cn.limiter
	cn.mu.Unlock()
	return l == nil || l.Allow()
}
