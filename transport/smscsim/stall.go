package smscsim

import (
	"fmt"
	"strings"

	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/linxGnu/gosmpp/data"
)

// Stall is a set of things a stalled Server stops doing while it keeps
// its connections open, as an SMSC that hangs does.
type Stall uint8

// The parts of a Stall.
const (
	// StallSubmits holds every submit_sm unanswered.
	StallSubmits Stall = 1 << iota
	// StallEnquireLinks holds every enquire_link unanswered: the link
	// looks dead to a client that checks it.
	StallEnquireLinks
	// StallBinds holds every bind request unanswered.
	StallBinds
	// StallReceipts sends no deliver_sm receipt; they wait, scheduled.
	StallReceipts

	// StallAll is a Server that hangs entirely.
	StallAll = StallSubmits | StallEnquireLinks | StallBinds | StallReceipts
)

var stallNames = []struct {
	s    Stall
	name string
}{
	{StallSubmits, "submits"},
	{StallEnquireLinks, "enquire_links"},
	{StallBinds, "binds"},
	{StallReceipts, "receipts"},
}

// String names the parts of st, comma-separated ("submits,enquire_links");
// "" when none.
func (st Stall) String() string {
	var names []string
	for _, n := range stallNames {
		if st&n.s != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

// ParseStall reads a Stall from a comma-separated list of the names
// String writes, or "all"; "" is none.
func ParseStall(s string) (Stall, error) {
	var st Stall
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if name == "all" {
			st |= StallAll
			continue
		}
		found := false
		for _, n := range stallNames {
			if n.name == name {
				st |= n.s
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("smscsim: unknown stall %q (want submits, enquire_links, binds, receipts or all)", name)
		}
	}
	return st, nil
}

// MarshalText writes String.
func (st Stall) MarshalText() ([]byte, error) { return []byte(st.String()), nil }

// UnmarshalText reads what ParseStall reads.
func (st *Stall) UnmarshalText(b []byte) error {
	v, err := ParseStall(string(b))
	if err != nil {
		return err
	}
	*st = v
	return nil
}

// Stall stops what st names, on top of what is stalled already. Requests
// that come meanwhile are held, unanswered, on their connection; a
// connection that ends drops its held requests without answering them.
func (s *Server) Stall(st Stall) {
	s.stalled.Or(uint32(st))
}

// Resume ends every stall: the requests held on each open connection are
// served, in the order they came, as if they had just arrived (a held
// submit_sm is accepted then, and its receipt follows), and receipts go
// out again. It returns once the held requests' answers are queued.
func (s *Server) Resume() {
	s.stalled.Store(0)
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for cn := range s.conns {
		conns = append(conns, cn)
	}
	s.mu.Unlock()
	for _, cn := range conns {
		cn.release()
	}
	s.sched.wake()
}

// stalledNow returns what is stalled.
func (s *Server) stalledNow() Stall {
	return Stall(s.stalled.Load())
}

// heldReq is a request held by a stall.
type heldReq struct {
	kind Stall
	f    smppwire.Frame
}

// stallOf tells which part of a stall holds a request.
func stallOf(id data.CommandIDType) Stall {
	switch id {
	case data.SUBMIT_SM:
		return StallSubmits
	case data.ENQUIRE_LINK:
		return StallEnquireLinks
	case data.BIND_TRANSCEIVER, data.BIND_TRANSMITTER, data.BIND_RECEIVER:
		return StallBinds
	}
	return 0
}

// hold keeps f unanswered when its kind is stalled, or when requests of
// its kind are held still (so that none overtakes them); false when f is
// to be served now.
func (cn *conn) hold(f smppwire.Frame) bool {
	kind := stallOf(f.Header.CommandID)
	if kind == 0 {
		return false
	}
	cn.heldMu.Lock()
	defer cn.heldMu.Unlock()
	if cn.heldClosed {
		return true // the connection is ending: nothing is answered
	}
	if cn.s.stalledNow()&kind == 0 && cn.heldKinds&kind == 0 {
		return false
	}
	cn.held = append(cn.held, heldReq{kind: kind, f: f})
	cn.heldKinds |= kind
	cn.s.n.held.Add(1)
	if kind == StallSubmits {
		cn.s.inFlight(1)
	}
	return true
}

// release serves the held requests whose kind is no longer stalled, in
// order. Until it is done, new requests of those kinds are held behind
// them (heldKinds stays set), so none overtakes a held one.
func (cn *conn) release() {
	cn.releaseMu.Lock()
	defer cn.releaseMu.Unlock()
	for {
		stalled := cn.s.stalledNow()
		cn.heldMu.Lock()
		idx := -1
		for i, h := range cn.held {
			if stalled&h.kind == 0 {
				idx = i
				break
			}
		}
		if idx < 0 {
			cn.heldKinds = 0
			for _, h := range cn.held {
				cn.heldKinds |= h.kind
			}
			cn.heldMu.Unlock()
			return
		}
		h := cn.held[idx]
		cn.held = append(cn.held[:idx:idx], cn.held[idx+1:]...)
		cn.heldMu.Unlock()
		cn.s.n.held.Add(-1)
		if h.kind == StallSubmits {
			cn.s.inFlight(-1)
		}
		cn.serveRequest(h.f)
	}
}

// dropHeld forgets the held requests of a connection that ended.
func (cn *conn) dropHeld() {
	cn.heldMu.Lock()
	defer cn.heldMu.Unlock()
	cn.heldClosed = true
	for _, h := range cn.held {
		cn.s.n.held.Add(-1)
		if h.kind == StallSubmits {
			cn.s.inFlight(-1)
		}
	}
	cn.held, cn.heldKinds = nil, 0
}
