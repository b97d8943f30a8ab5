package smpp

import (
	"encoding/json"
	"time"
)

// TimedError is an error and when it happened. The zero value is none.
type TimedError struct {
	Err error
	At  time.Time
}

// MarshalJSON encodes e as {"error": text, "at": time}, or null when
// there is none, for an admin API.
func (e TimedError) MarshalJSON() ([]byte, error) {
	if e.Err == nil {
		return []byte("null"), nil
	}
	return json.Marshal(struct {
		Error string    `json:"error"`
		At    time.Time `json:"at"`
	}{e.Err.Error(), e.At})
}

// State is what a Client is doing now, for an admin API to show.
type State struct {
	Addr     string   `json:"addr"`      // Config.Addr
	BindType BindType `json:"bind_type"` // Config.BindType
	TLS      bool     `json:"tls"`       // sessions run over TLS
	Binds    int      `json:"binds"`     // sessions configured (Config.Binds)
	BindsUp  int      `json:"binds_up"`  // sessions bound now

	Window      int `json:"window"`        // Binds × Config.Window
	WindowInUse int `json:"window_in_use"` // submit_sm outstanding now, all sessions

	Submits      uint64 `json:"submits"`       // submit_sm written since New (one per part, retries included)
	SubmitErrors uint64 `json:"submit_errors"` // of those, the ones that failed their Send
	Throttled    uint64 `json:"throttled"`     // of those, the ones answered ESME_RTHROTTLED or ESME_RMSGQFUL
	Retries      uint64 `json:"retries"`       // throttled parts submitted again
	BindFailures uint64 `json:"bind_failures"` // failed dials, TLS handshakes or refused binds

	// MaxPerSecond is the configured cap on submit_sm per second
	// (Config.MaxPerSecond, or the last SetMaxPerSecond); 0: none.
	// EffectivePerSecond is the rate the Client paces at now: the cap, or
	// less while every bound session is paced (ramping up, or at the rate
	// it learned from throttling: the sum of their rates, the cap at
	// most); 0: unlimited.
	MaxPerSecond       float64 `json:"max_per_second"`
	EffectivePerSecond float64 `json:"effective_per_second"`

	// LastBindError is the last failed dial, TLS handshake or refused
	// bind; LastSessionLost why a bound session last ended (other than by
	// Close); LastSubmitError the last submit_sm that failed (error
	// status, timeout, lost connection, or throttled with no time left
	// for another try). They stay after later successes: compare their
	// times with the sessions' Since.
	LastBindError   TimedError `json:"last_bind_error"`
	LastSessionLost TimedError `json:"last_session_lost"`
	LastSubmitError TimedError `json:"last_submit_error"`

	Sessions []SessionState `json:"sessions"` // one per bind, in order
}

// SessionState is one of a Client's sessions.
type SessionState struct {
	Bound       bool      `json:"bound"`
	Since       time.Time `json:"since"`         // when it bound; zero while unbound
	LocalAddr   string    `json:"local_addr"`    // of its TCP connection; "" while unbound
	WindowInUse int       `json:"window_in_use"` // submit_sm outstanding on it now
	Submits     uint64    `json:"submits"`       // submit_sm written on it since New
}

// MarshalText writes b as String does, so that it reads in JSON.
func (b BindType) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads b as ParseBindType does.
func (b *BindType) UnmarshalText(text []byte) error {
	v, err := ParseBindType(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// State returns the Client's live state.
func (c *Client) State() State {
	st := State{
		Addr:         c.cfg.Addr,
		BindType:     c.cfg.BindType,
		TLS:          c.cfg.TLS != nil,
		Binds:        c.cfg.Binds,
		Window:       c.cfg.Binds * c.cfg.Window,
		Submits:      c.n.submits.Load(),
		SubmitErrors: c.n.submitErrors.Load(),
		Throttled:    c.n.throttled.Load(),
		Retries:      c.n.retries.Load(),
		BindFailures: c.n.bindFailures.Load(),
		Sessions:     make([]SessionState, len(c.sessions)),
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st.MaxPerSecond, st.EffectivePerSecond = c.maxRate, c.eff
	st.BindsUp, st.WindowInUse = c.nbound, c.inUse
	st.LastBindError, st.LastSessionLost, st.LastSubmitError = c.lastBind, c.lastLost, c.lastSub
	for i, s := range c.sessions {
		ss := SessionState{Submits: s.submits.Load()}
		if cn := s.cn; cn != nil {
			ss.Bound, ss.Since, ss.LocalAddr, ss.WindowInUse = true, s.since, cn.raw.LocalAddr().String(), cn.inUse
		}
		st.Sessions[i] = ss
	}
	return st
}
