package routing

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Bind types of a connector's sessions.
const (
	BindTransceiver = "transceiver"
	BindTransmitter = "transmitter"
)

// Message id formats of an SMSC (see the SMPP adapter's IDFormat).
const (
	IDAsSent  = "as-sent"
	IDDecimal = "decimal"
	IDHex     = "hex"
)

// DefaultConnector is the name of the connector the HERALD_SMPP_*
// variables describe.
const DefaultConnector = "default"

// Connector is one SMPP account at an SMSC: where it is, how to bind, how
// many sessions, how fast.
type Connector struct {
	// Name identifies it: 1 to 40 lower-case letters, digits and dashes.
	Name       string
	Addr       string // host:port
	SystemID   string // at most 15 bytes
	Password   string // at most 8 bytes
	SystemType string // at most 12 bytes
	// BindType is BindTransceiver (default) or BindTransmitter (no
	// receipts come back on a transmitter bind).
	BindType string
	// Binds is the number of sessions kept bound (1 to 32, default 1);
	// Window the most submit_sm outstanding on each (1 to 1,000, default
	// 100).
	Binds  int
	Window int
	// MaxPerSecond caps the submits of the whole connector (every session
	// of every process); 0: no cap.
	MaxPerSecond float64
	// TLS binds over TLS; CACert, when set, is the PEM certificate of the
	// authority to trust instead of the system's roots.
	TLS    bool
	CACert string
	// SourceTON, SourceNPI, DestTON and DestNPI are the address types of
	// submit_sm; nil: the adapter's defaults (alphanumeric source,
	// international destination).
	SourceTON, SourceNPI, DestTON, DestNPI *int
	// SubmitIDFormat and ReceiptIDFormat say how the SMSC writes message
	// ids: IDAsSent (default), IDDecimal or IDHex.
	SubmitIDFormat, ReceiptIDFormat string
	// EnquireLink is the interval of enquire_link; zero: the adapter's
	// default (30 s).
	EnquireLink time.Duration
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

var namePattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$`)

// Check checks c and fills its defaults: field errors name the API's
// fields.
func (c *Connector) Check() error {
	var fe messaging.FieldErrors
	if !namePattern.MatchString(c.Name) {
		fe.Add("name", "name must be 1 to 40 lower-case letters, digits and dashes, not starting or ending with a dash")
	}
	if host, port, err := net.SplitHostPort(c.Addr); err != nil || host == "" || port == "" {
		fe.Add("addr", "addr must be host:port")
	}
	checkLen(&fe, "systemId", c.SystemID, 15)
	checkLen(&fe, "password", c.Password, 8)
	checkLen(&fe, "systemType", c.SystemType, 12)
	switch c.BindType {
	case "":
		c.BindType = BindTransceiver
	case BindTransceiver, BindTransmitter:
	default:
		fe.Add("bindType", "bindType must be transceiver or transmitter")
	}
	if c.Binds == 0 {
		c.Binds = 1
	}
	if c.Binds < 1 || c.Binds > 32 {
		fe.Add("binds", "binds must be between 1 and 32")
	}
	if c.Window == 0 {
		c.Window = 100
	}
	if c.Window < 1 || c.Window > 1000 {
		fe.Add("window", "window must be between 1 and 1000")
	}
	if c.MaxPerSecond < 0 || c.MaxPerSecond > 100_000 {
		fe.Add("maxPerSecond", "maxPerSecond must be between 0 (no cap) and 100000")
	}
	if c.CACert != "" && (!c.TLS || !strings.Contains(c.CACert, "BEGIN CERTIFICATE")) {
		fe.Add("caCert", "caCert must be a PEM certificate, with tls true")
	}
	for field, v := range map[string]*int{"sourceTon": c.SourceTON, "sourceNpi": c.SourceNPI, "destTon": c.DestTON, "destNpi": c.DestNPI} {
		if v != nil && (*v < 0 || *v > 255) {
			fe.Add(field, "%s must be between 0 and 255", field)
		}
	}
	for field, f := range map[string]*string{"submitIdFormat": &c.SubmitIDFormat, "receiptIdFormat": &c.ReceiptIDFormat} {
		switch *f {
		case "":
			*f = IDAsSent
		case IDAsSent, IDDecimal, IDHex:
		default:
			fe.Add(field, "%s must be as-sent, decimal or hex", field)
		}
	}
	if c.EnquireLink < 0 || (c.EnquireLink > 0 && c.EnquireLink < time.Second) || c.EnquireLink > time.Hour {
		fe.Add("enquireLinkSeconds", "enquireLinkSeconds must be between 1 and 3600")
	}
	return fe.Err()
}

func checkLen(fe *messaging.FieldErrors, field, v string, n int) {
	if len(v) > n {
		fe.Add(field, "%s must be at most %d bytes", field, n)
	}
	for _, r := range v {
		if r < 0x20 || r > 0x7e {
			fe.Add(field, "%s must be printable ASCII", field)
			return
		}
	}
}

// Strategy says how a route picks among its connectors.
type Strategy string

// Strategies.
const (
	// Failover sends through the first healthy connector, in order.
	Failover Strategy = "failover"
	// RoundRobin takes the healthy connectors in turn.
	RoundRobin Strategy = "round-robin"
	// Weighted spreads the sends over the healthy connectors in proportion
	// to their weights.
	Weighted Strategy = "weighted"
)

// Target is a connector of a route, with its weight (Weighted only).
type Target struct {
	Connector string
	Weight    int
}

// Route is a rule: SMS whose destination starts with one of Prefixes (any
// when empty), of one of CompanyIDs (any when empty), from one of
// SenderIDs (any when empty), go through Targets by Strategy. Routes are
// tried by Position, lowest first; the first that matches decides.
type Route struct {
	ID         int64
	Position   int
	Prefixes   []string
	CompanyIDs []messaging.ID
	SenderIDs  []string
	Strategy   Strategy
	Targets    []Target
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// MaxPosition is the highest Position a route may have; the lowest is 0.
const MaxPosition = 1_000_000

// Check checks r and fills its defaults (strategy failover, weights 1).
func (r *Route) Check() error {
	var fe messaging.FieldErrors
	if r.Position < 0 || r.Position > MaxPosition {
		fe.Add("position", "position must be between 0 and %d", MaxPosition)
	}
	for i, p := range r.Prefixes {
		if p == "" || len(p) > 15 || strings.Trim(p, "0123456789") != "" {
			fe.Add(fmt.Sprintf("prefixes[%d]", i), "a prefix is 1 to 15 digits")
		}
	}
	for i, s := range r.SenderIDs {
		if s == "" || len(s) > 16 {
			fe.Add(fmt.Sprintf("senderIds[%d]", i), "a sender id is 1 to 16 characters")
		}
	}
	switch r.Strategy {
	case "":
		r.Strategy = Failover
	case Failover, RoundRobin, Weighted:
	default:
		fe.Add("strategy", "strategy must be failover, round-robin or weighted")
	}
	if len(r.Targets) == 0 || len(r.Targets) > 16 {
		fe.Add("connectors", "a route names 1 to 16 connectors")
	}
	seen := map[string]bool{}
	for i := range r.Targets {
		t := &r.Targets[i]
		if !namePattern.MatchString(t.Connector) || seen[t.Connector] {
			fe.Add(fmt.Sprintf("connectors[%d].name", i), "a connector name, once per route")
		}
		seen[t.Connector] = true
		if t.Weight == 0 {
			t.Weight = 1
		}
		if t.Weight < 1 || t.Weight > 1000 {
			fe.Add(fmt.Sprintf("connectors[%d].weight", i), "weight must be between 1 and 1000")
		}
	}
	return fe.Err()
}

// Matches tells whether r takes an SMS to dest (digits, international
// form) of company from sender.
func (r *Route) Matches(dest string, company messaging.ID, sender string) bool {
	if len(r.Prefixes) > 0 && !anyPrefix(dest, r.Prefixes) {
		return false
	}
	if len(r.CompanyIDs) > 0 && !contains(r.CompanyIDs, company) {
		return false
	}
	if len(r.SenderIDs) > 0 && !contains(r.SenderIDs, sender) {
		return false
	}
	return true
}

func anyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func contains[T comparable](xs []T, x T) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Match returns the first route of routes (sorted by Position) that takes
// the SMS; nil when none does.
func Match(routes []Route, dest string, company messaging.ID, sender string) *Route {
	for i := range routes {
		if routes[i].Matches(dest, company, sender) {
			return &routes[i]
		}
	}
	return nil
}

// Pick chooses the connector of route r for one send: healthy tells a
// connector's health, turn is a counter the caller increments each send
// (round-robin and weighted use it). ok is false when no connector of the
// route is healthy. A connector not healthy is skipped by every strategy;
// when all are down, failover still names the first, so that a caller
// that prefers trying to failing can.
func Pick(r *Route, healthy func(string) bool, turn uint64) (name string, ok bool) {
	var up []Target
	for _, t := range r.Targets {
		if healthy(t.Connector) {
			up = append(up, t)
		}
	}
	if len(up) == 0 {
		if len(r.Targets) > 0 && r.Strategy == Failover {
			return r.Targets[0].Connector, false
		}
		return "", false
	}
	switch r.Strategy {
	case RoundRobin:
		return up[turn%uint64(len(up))].Connector, true
	case Weighted:
		total := 0
		for _, t := range up {
			total += t.Weight
		}
		n := int(turn % uint64(total))
		for _, t := range up {
			if n < t.Weight {
				return t.Connector, true
			}
			n -= t.Weight
		}
	}
	return up[0].Connector, true
}

// State is the live state of a connector in this process, for the admin
// API: its sessions, its window, its rate and its last error.
type State struct {
	Binds, BindsUp int
	WindowInUse    int
	// Healthy: sends may go through it (a session bound, and no run of
	// timeouts or throttling lately).
	Healthy bool
	// SubmitsPerSecond over the last few seconds, by this process.
	SubmitsPerSecond float64
	Submits, Errors  uint64
	LastError        string
	LastErrorAt      time.Time
}

// StateReader tells the live state of connectors; ok is false for a
// connector this process does not run.
type StateReader interface {
	ConnectorState(name string) (s State, ok bool)
}
