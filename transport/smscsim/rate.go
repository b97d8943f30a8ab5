package smscsim

import (
	"slices"
	"sync"
	"time"
)

// maxSeconds is how many seconds SubmitsPerSecond keeps: a day of a
// simulator that is never idle.
const maxSeconds = 86400

// Second counts the submit_sm a Server answered during one wall-clock
// second.
type Second struct {
	Start     time.Time `json:"start"`     // the second's first instant
	Accepted  int       `json:"accepted"`  // answered ESME_ROK
	Throttled int       `json:"throttled"` // answered ESME_RTHROTTLED (Config.BindRate or Faults)
}

// SubmitsPerSecond returns, in time order, how many submit_sm the Server
// accepted and throttled in each wall-clock second it answered one (the
// seconds of the last day at most; seconds without any are left out), so
// that a test can check the rate a client held. The first and the last
// seconds are usually partial. A submit_sm counts when it is answered
// (when a stall releases it, for a held one), not when its delayed
// answer is written.
func (s *Server) SubmitsPerSecond() []Second {
	return s.perSec.snapshot()
}

// perSecond counts answered submit_sm by wall-clock second.
type perSecond struct {
	mu   sync.Mutex
	secs []Second // in time order
}

// add counts one submit_sm answered at at.
func (p *perSecond) add(at time.Time, accepted, throttled bool) {
	if !accepted && !throttled {
		return
	}
	start := time.Unix(at.Unix(), 0)
	p.mu.Lock()
	defer p.mu.Unlock()
	// Answers come in time order but for a few that raced across a second
	// boundary on other connections: look from the end.
	i := len(p.secs)
	for i > 0 && p.secs[i-1].Start.After(start) {
		i--
	}
	if i == 0 || !p.secs[i-1].Start.Equal(start) {
		p.secs = slices.Insert(p.secs, i, Second{Start: start})
		i++
	}
	if accepted {
		p.secs[i-1].Accepted++
	}
	if throttled {
		p.secs[i-1].Throttled++
	}
	if len(p.secs) > 2*maxSeconds {
		p.secs = append([]Second(nil), p.secs[len(p.secs)-maxSeconds:]...)
	}
}

// snapshot returns the last maxSeconds seconds counted.
func (p *perSecond) snapshot() []Second {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Second(nil), p.secs[max(0, len(p.secs)-maxSeconds):]...)
}
