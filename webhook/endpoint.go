package webhook

import (
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/messaging"
)

// EventType names a kind of event an endpoint may subscribe to.
type EventType string

// The event types.
const (
	// MessageStatus: a message moved to a status (Sending excepted).
	MessageStatus EventType = "message.status"
	// CampaignStatus: a campaign became Ready, InProgress, Paused,
	// Completed or Failed.
	CampaignStatus EventType = "campaign.status"
	// SurveyAnswered: a survey answer was recorded.
	SurveyAnswered EventType = "survey.answered"
	// MessageInbound: an SMS came in for one of the company's senders.
	MessageInbound EventType = "message.inbound"
	// OptOutChanged: a number was opted out or back in.
	OptOutChanged EventType = "optout.changed"
)

// EventTypes lists every event type, in the order the API documents them.
var EventTypes = []EventType{MessageStatus, CampaignStatus, SurveyAnswered, MessageInbound, OptOutChanged}

// Valid reports whether t is one of EventTypes.
func (t EventType) Valid() bool { return slices.Contains(EventTypes, t) }

// Limits of endpoints.
const (
	// MaxEndpoints is how many endpoints a company may register.
	MaxEndpoints = 10
	// MaxURLLength bounds an endpoint's URL.
	MaxURLLength = 2048
	// SecretOverlap is how long a rotated-out secret still signs, beside
	// the new one.
	SecretOverlap = 24 * time.Hour
)

// Endpoint is a URL a company receives events at.
type Endpoint struct {
	ID        messaging.ID
	CompanyID messaging.ID
	URL       string
	// Events are the types sent to it, in the order of EventTypes.
	Events []EventType
	// Secret signs every request. PreviousSecret, until PreviousUntil,
	// signs them too (a rotation's overlap).
	Secret         string
	PreviousSecret string
	PreviousUntil  time.Time
	// Batch is how many events a request carries; the zero value, one.
	Batch     Batch
	CreatedAt time.Time
	// DisabledAt is set when Herald stopped sending to the endpoint (it
	// answered 410 Gone); DisabledReason says why.
	DisabledAt     *time.Time
	DisabledReason string
}

// Secrets returns the secrets that sign a request sent at now: the
// current one, and the previous one during its overlap.
func (e Endpoint) Secrets(now time.Time) []string {
	if e.PreviousSecret != "" && now.Before(e.PreviousUntil) {
		return []string{e.Secret, e.PreviousSecret}
	}
	return []string{e.Secret}
}

// Subscribes reports whether the endpoint takes events of type t (and is
// not disabled).
func (e Endpoint) Subscribes(t EventType) bool {
	return e.DisabledAt == nil && slices.Contains(e.Events, t)
}

// URLPolicy says which URLs endpoints may have. The zero value allows
// https URLs to globally reachable addresses only (egress.Public).
type URLPolicy struct {
	// AllowLoopbackHTTP allows http:// (and https://) URLs whose host is
	// localhost or a loopback address: for development.
	AllowLoopbackHTTP bool
	// AllowPrivate allows hosts in private networks (private-use,
	// unique-local, shared address space) and loopback: the operator's own
	// network. Link-local, unspecified and the other special-purpose ranges
	// stay refused. Without it such addresses are refused when written in
	// the URL and, by the sender, when a host name resolves to one.
	AllowPrivate bool
}

// Egress returns the addresses the policy lets requests connect to: the
// rule the sender's dialer applies.
func (p URLPolicy) Egress() egress.Policy {
	return egress.Policy{AllowLoopback: p.AllowLoopbackHTTP, AllowPrivate: p.AllowPrivate}
}

// CheckURL returns the URL normalised, or an Invalid error on field "url"
// saying what is wrong with it.
func (p URLPolicy) CheckURL(raw string) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", messaging.Invalidf("url", format, args...)
	}
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return bad("url is required")
	case len(raw) > MaxURLLength:
		return bad("url must be at most %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return bad("url must be an absolute http(s) URL")
	}
	if u.User != nil {
		return bad("url must not carry a user name or password")
	}
	if u.Fragment != "" {
		return bad("url must not have a fragment")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	loopback := host == "localhost" || strings.HasSuffix(host, ".localhost")
	addr, isIP := parseHost(host)
	if isIP {
		c, _ := egress.Classify(addr)
		loopback = c == egress.Loopback
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !(p.AllowLoopbackHTTP && loopback) {
			return bad("url must use https (http is allowed for loopback addresses in development only)")
		}
	default:
		return bad("url must use https")
	}
	if isIP && !p.Egress().AllowsAddr(addr) {
		_, name := egress.Classify(addr)
		return bad("url must point at a public internet address: %s is %s", addr, name)
	}
	if loopback && !isIP && !p.AllowPrivate && !p.AllowLoopbackHTTP {
		return bad("url must point at a public internet address: %s is loopback", host)
	}
	return u.String(), nil
}

// parseHost returns host as an address when it is one.
func parseHost(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// Public reports whether a is globally reachable: egress.Public, the rule
// of the IANA special-purpose address registries that the sender's
// dialer applies to every address it connects to.
func Public(a netip.Addr) bool { return egress.Public(a) }

// CheckEvents returns the event types named, without repetition and in
// the order of EventTypes, or an Invalid error on field "events".
func CheckEvents(names []string) ([]EventType, error) {
	if len(names) == 0 {
		return nil, messaging.Invalidf("events", "events must name at least one of %s", eventList())
	}
	var out []EventType
	for _, n := range names {
		t := EventType(strings.TrimSpace(n))
		if !t.Valid() {
			return nil, messaging.Invalidf("events", "unknown event %q: events are %s", n, eventList())
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b EventType) int {
		return slices.Index(EventTypes, a) - slices.Index(EventTypes, b)
	})
	return out, nil
}

func eventList() string {
	s := make([]string, len(EventTypes))
	for i, t := range EventTypes {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
