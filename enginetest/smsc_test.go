package enginetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// connMode is what a fake connector does with the submits it gets.
type connMode int

const (
	connUp       connMode = iota // answers at once
	connThrottle                 // answers ESME_RTHROTTLED
	connDown                     // the connection drops: a transient failure
	connHeld                     // keeps every submit on the wire until released
)

func (m connMode) String() string {
	return [...]string{"up", "throttle", "down", "held"}[m]
}

// window is how many submits one fake connector keeps on the wire at once;
// the others wait in Send, not written to the SMSC yet (as the SMPP
// adapter's window does).
const window = 4

// conn is one fake SMPP connector.
type conn struct {
	name string
	mode connMode
	// early, when set, is the receipt state the connector reports for
	// each accepted submit before answering it (a receipt that overtakes
	// the submit_sm_resp).
	early string
	// release is closed when a held connector is released.
	release chan struct{}
	// slots bounds the submits on the wire.
	slots chan struct{}
}

// submit is one submit_sm the fake SMSC saw.
type submit struct {
	seq      int64     // order in which submits went on the wire
	at       time.Time // when
	msg      messaging.ID
	company  messaging.ID
	proc     string
	conn     string
	accepted bool
	parts    []string
	receipt  string // the final receipt state reported for it, "" none yet
}

// smsc is the fake SMSC all processes submit to, through two connectors
// ("a" and "b", chosen by company). It records every submit with the
// process that made it, and what was on the wire when.
type smsc struct {
	mu        sync.Mutex
	seq       int64
	conns     map[string]*conn
	route     map[messaging.ID]string  // company -> connector
	onWire    map[messaging.ID]*sender // message -> process submitting it now
	inSend    map[messaging.ID]int     // messages in Send, on the wire or waiting for a place
	submits   []*submit
	byPart    map[string]*submit
	parts     int
	problems  []string
	receiving atomic.Int64 // early receipts being handed over
}

func newSMSC() *smsc {
	s := &smsc{conns: map[string]*conn{}, route: map[messaging.ID]string{}, onWire: map[messaging.ID]*sender{}, inSend: map[messaging.ID]int{}, byPart: map[string]*submit{}}
	for _, name := range []string{"a", "b"} {
		rel := make(chan struct{})
		close(rel)
		s.conns[name] = &conn{name: name, release: rel, slots: make(chan struct{}, window)}
	}
	return s
}

// setMode sets a connector's mode; leaving connHeld releases its submits.
func (s *smsc) setMode(name string, m connMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conns[name]
	if c.mode == connHeld && m != connHeld {
		close(c.release)
	}
	if m == connHeld && c.mode != connHeld {
		c.release = make(chan struct{})
	}
	c.mode = m
}

func (s *smsc) setEarly(name, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[name].early = state
}

func (s *smsc) mode(name string) connMode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[name].mode
}

// seqNow is the sequence number of the last submit put on the wire.
func (s *smsc) seqNow() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// sending reports the messages in Send now, on the wire or waiting for
// a place in the window.
func (s *smsc) sending() map[messaging.ID]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[messaging.ID]bool, len(s.inSend))
	for k := range s.inSend {
		out[k] = true
	}
	return out
}

// troubles returns what the SMSC saw go wrong.
func (s *smsc) troubles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.problems)
}

// snapshot copies the submits recorded so far.
func (s *smsc) snapshot() []submit {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]submit, len(s.submits))
	for i, sb := range s.submits {
		out[i] = *sb
	}
	return out
}

func (s *smsc) problem(format string, args ...any) {
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// setReceipt records the final receipt reported for a part.
func (s *smsc) setReceipt(part, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.byPart[part]; sb != nil {
		sb.receipt = state
	}
}

// sender is one process's SMS transport over the fake SMSC.
type sender struct {
	smsc     *smsc
	proc     string
	receipts delivery.ReceiptHandler
	// gone is closed when the process is killed: its connections drop,
	// and the submits it had on the wire get no answer.
	gone chan struct{}
}

// PickConnector implements delivery.ConnectorPicker: each connector can
// use as many SMS at once as its window holds (as a capped connector's
// budget is its rate over a few seconds).
func (p *sender) PickConnector(sms delivery.SMS) (string, int) {
	p.smsc.mu.Lock()
	defer p.smsc.mu.Unlock()
	return p.smsc.route[sms.CompanyID], window
}

// dead reports whether the sender's process was killed.
func (p *sender) dead() bool {
	select {
	case <-p.gone:
		return true
	default:
		return false
	}
}

// Send implements delivery.SMSSender.
func (p *sender) Send(ctx context.Context, sms delivery.SMS) (delivery.SMSResult, error) {
	s := p.smsc
	s.mu.Lock()
	c := s.conns[s.route[sms.CompanyID]]
	s.mu.Unlock()
	if c == nil {
		return delivery.SMSResult{}, &delivery.SendError{Permanent: true, Details: "no route"}
	}
	s.mu.Lock()
	s.inSend[sms.MessageID]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.inSend[sms.MessageID]--; s.inSend[sms.MessageID] == 0 {
			delete(s.inSend, sms.MessageID)
		}
		s.mu.Unlock()
	}()
	select {
	case c.slots <- struct{}{}:
	case <-sms.Withdraw:
		return delivery.SMSResult{}, delivery.ErrWithdrawn
	case <-ctx.Done():
		return delivery.SMSResult{}, fmt.Errorf("waiting for a window place: %w", ctx.Err())
	case <-p.gone:
		return delivery.SMSResult{}, &delivery.SendError{Details: "connection lost"}
	}
	defer func() { <-c.slots }()

	s.mu.Lock()
	select {
	case <-sms.Withdraw:
		// The place came as the SMS was withdrawn: nothing was written.
		s.mu.Unlock()
		return delivery.SMSResult{}, delivery.ErrWithdrawn
	default:
	}
	s.seq++
	sb := &submit{seq: s.seq, at: time.Now(), msg: sms.MessageID, company: sms.CompanyID, proc: p.proc, conn: c.name}
	if other, ok := s.onWire[sms.MessageID]; ok && !other.dead() {
		s.problem("message %s submitted by %s while %s's submit of it was on the wire", sms.MessageID, p.proc, other.proc)
	}
	select {
	case <-p.gone:
		s.mu.Unlock()
		return delivery.SMSResult{}, &delivery.SendError{Details: "connection lost"}
	default:
	}
	s.onWire[sms.MessageID] = p
	s.submits = append(s.submits, sb)
	mode, release := c.mode, c.release
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.onWire[sms.MessageID] == p {
			delete(s.onWire, sms.MessageID)
		}
		s.mu.Unlock()
	}()

	if mode == connHeld {
		select {
		case <-release:
			mode = s.mode(c.name)
		case <-ctx.Done():
			// The answer never came: the SMSC may or may not have it.
			return delivery.SMSResult{}, fmt.Errorf("no submit_sm_resp: %w", ctx.Err())
		case <-p.gone:
			return delivery.SMSResult{}, &delivery.SendError{Details: "connection lost"}
		}
	}
	switch mode {
	case connThrottle:
		return delivery.SMSResult{}, &delivery.SendError{Code: "0x00000058", Details: "ESME_RTHROTTLED: Throttling error"}
	case connDown:
		return delivery.SMSResult{}, &delivery.SendError{Details: "connection lost"}
	}
	s.mu.Lock()
	s.parts++
	part := fmt.Sprintf("%s-%d", c.name, s.parts)
	sb.accepted, sb.parts = true, []string{part}
	s.byPart[part] = sb
	early := c.early
	if early != "" {
		sb.receipt = early
		s.receiving.Add(1)
	}
	s.mu.Unlock()
	if early != "" {
		go func() {
			defer s.receiving.Add(-1)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if err := p.receipts(rctx, delivery.Receipt{ProviderID: part, State: early, Err: "000", At: time.Now()}); err != nil {
				// Not acknowledged (its process died): an SMSC
				// would send it again; the receipts step may.
				s.mu.Lock()
				sb.receipt = ""
				s.mu.Unlock()
			}
		}()
	}
	return delivery.SMSResult{PartIDs: []string{part}, Connector: c.name}, nil
}
