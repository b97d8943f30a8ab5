package smpp

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a Client. The zero value of every field but Addr has a
// documented default.
type Config struct {
	// Addr is the SMSC's host:port. Required.
	Addr string
	// SystemID, Password and SystemType are sent in every bind.
	SystemID   string
	Password   string
	SystemType string

	// Binds is the number of sessions kept bound at once to Addr, all
	// with the same credentials: one Client is then one connector of an
	// aggregator account. Each session binds, and binds again when it
	// drops, on its own; Send uses the bound sessions. Default 1.
	Binds int
	// BindType is how every session binds. Default BindTransceiver; a
	// BindTransmitter session receives no receipts (see BindTransmitter).
	BindType BindType
	// TLS, when set, makes every session SMPP over TLS: the connection is
	// a TLS client connection configured by it, whose handshake must end
	// within BindTimeout. A nil RootCAs trusts the system's roots; an
	// empty ServerName is the host of Addr. The Client keeps a copy. Nil:
	// plain TCP.
	TLS *tls.Config

	// SourceTON and SourceNPI are the type of number and numbering plan
	// of every submit_sm's source address (the sender), DestTON and
	// DestNPI those of its destination; gosmpp's data.GSM_TON_* and
	// data.GSM_NPI_* name the values. Nil keeps the default: source TON 5
	// (alphanumeric) NPI 0 (unknown), destination TON 1 (international)
	// NPI 1 (ISDN/E.164). Set 0 explicitly with new(uint8(0)).
	SourceTON, SourceNPI *uint8
	DestTON, DestNPI     *uint8

	// Window is the most submit_sm outstanding (sent, not yet answered) at
	// once on one session: the Client has at most Binds × Window
	// outstanding. Default 100.
	Window int
	// MaxPerSecond caps submit_sm per second for the whole Client, all
	// its sessions together (each part counts, and each retry); 0 means
	// unlimited. The bucket holds a tenth of a second's worth of tokens
	// (at least one); turns are handed out first come first served, at
	// the rate of the moment. Client.SetMaxPerSecond changes it while the
	// Client runs.
	//
	// It is a ceiling: each session finds the SMSC's limit on its own.
	// Without a cap a session starts at 100/s and climbs quickly until
	// the SMSC throttles it; when the SMSC answers ESME_RTHROTTLED or
	// ESME_RMSGQFUL, the session paces at 95% of what the SMSC accepted
	// on it over the last second and climbs slowly while it is busy. The
	// throttled part is submitted again, not failed (see the package
	// documentation, Throttling).
	//
	// A Send whose turn would come after its context's deadline fails at
	// once, transiently, without taking a turn: keep the sends in flight
	// (delivery.Config.SMSConcurrency) under MaxPerSecond times the send
	// deadline (delivery.Config.SendTimeout), as herald serve does, so
	// that they are not retried for want of a turn. While throttled, the
	// effective rate is lower and some sends may fail so.
	MaxPerSecond float64

	// ValidityPeriod, when set, is sent with every submit_sm as a
	// relative validity period: the SMSC stops trying to deliver the
	// message after it (and sends an EXPIRED receipt). At most 99 days;
	// whole seconds. Zero: the SMSC's default. Herald's receipt timeout
	// (delivery.Config.ReceiptTimeout) should not be much longer.
	ValidityPeriod time.Duration

	// EnquireLink is the interval between enquire_link requests; one left
	// unanswered when the next is due ends the connection. Default 30s.
	EnquireLink time.Duration
	// SubmitTimeout is how long a submit_sm waits for its submit_sm_resp.
	// Default 10s.
	SubmitTimeout time.Duration
	// BindTimeout bounds the dial, the TLS handshake and the wait for the
	// bind response together, and every write to the connection. Default
	// 10s.
	BindTimeout time.Duration
	// BindBackoff bounds the wait between bind attempts. Defaults: Min
	// 500ms, Max 30s.
	BindBackoff messaging.Backoff

	// ReceiptHandler stores delivery receipts. When nil, receipts are
	// acknowledged and dropped.
	ReceiptHandler delivery.ReceiptHandler
	// ReceiptTimeout bounds one ReceiptHandler call, and one
	// InboundHandler call. Default 30s.
	ReceiptTimeout time.Duration
	// InboundHandler stores the deliver_sm that are not receipts: the
	// parts of SMS people send (decoded, with their concatenation). A
	// part is acknowledged once it returned nil; on an error the SMSC is
	// asked to send it again. When nil, they are acknowledged and dropped.
	InboundHandler delivery.InboundHandler
	// ReceiptConcurrency is the most receipts handled at once, all
	// sessions together. Default 1024. Past it a session that receives
	// one more stops reading, which holds back the
	// submit_sm_resp behind the receipts too; since a handler waits for
	// its receipt to be committed (tens of milliseconds when a store is
	// busy), the bound caps the session's rate at about ReceiptConcurrency
	// per commit latency: 64 held a session to about 6,000 messages a
	// second against a store that commits every 10 ms.
	ReceiptConcurrency int
	// SubmitIDFormat and ReceiptIDFormat say how the SMSC writes message
	// ids in its submit_sm_resp (and the receipted_message_id TLV) and in
	// the id: field of its receipt texts. Left at IDAsSent, ids are
	// compared as written (NormalizeMessageID); an SMSC that answers
	// submits in hexadecimal and writes receipts in decimal needs IDHex
	// and IDDecimal, or its receipts never find their messages.
	SubmitIDFormat  IDFormat
	ReceiptIDFormat IDFormat

	// ReceiptLocation is the time zone of the dates in receipt texts.
	// Default UTC.
	ReceiptLocation *time.Location

	// Logger receives the session's events. Default: discard.
	Logger *slog.Logger
	// Tracer opens a span for each Send made inside a recording span (its
	// submit_sm PDUs) and one for each receipt of such a Send's parts, a
	// child of the Send's span and linked to it. Nil: no span.
	Tracer trace.TracerProvider
	// Connector names this client's connector in its spans.
	Connector string
	// Now tells the time of a receipt that carries no done date. Default
	// time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultBinds              = 1
	DefaultWindow             = 100
	DefaultEnquireLink        = 30 * time.Second
	DefaultSubmitTimeout      = 10 * time.Second
	DefaultBindTimeout        = 10 * time.Second
	DefaultBindBackoffMin     = 500 * time.Millisecond
	DefaultBindBackoffMax     = 30 * time.Second
	DefaultReceiptTimeout     = 30 * time.Second
	DefaultReceiptConcurrency = 1024
)

// withDefaults returns cfg with its zero values replaced by the defaults,
// or an error when a value is unusable.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Addr == "" {
		return cfg, errors.New("smpp: Config.Addr is required")
	}
	if cfg.Binds < 0 || cfg.Window < 0 || cfg.MaxPerSecond < 0 || cfg.EnquireLink < 0 || cfg.SubmitTimeout < 0 ||
		cfg.BindTimeout < 0 || cfg.BindBackoff.Min < 0 || cfg.BindBackoff.Max < 0 ||
		cfg.ReceiptTimeout < 0 || cfg.ReceiptConcurrency < 0 {
		return cfg, errors.New("smpp: negative Config value")
	}
	for _, f := range []IDFormat{cfg.SubmitIDFormat, cfg.ReceiptIDFormat} {
		if f < IDAsSent || f > IDHex {
			return cfg, fmt.Errorf("smpp: unknown message id format %d", f)
		}
	}
	if cfg.BindType != BindTransceiver && cfg.BindType != BindTransmitter {
		return cfg, fmt.Errorf("smpp: unknown bind type %d", cfg.BindType)
	}
	if len(cfg.SystemID) > 15 || len(cfg.Password) > 8 || len(cfg.SystemType) > 12 {
		return cfg, fmt.Errorf("smpp: system_id (15), password (8) or system_type (12) too long")
	}
	if cfg.Binds == 0 {
		cfg.Binds = DefaultBinds
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.TLS != nil {
		cfg.TLS = cfg.TLS.Clone()
		if cfg.TLS.ServerName == "" {
			if host, _, err := net.SplitHostPort(cfg.Addr); err == nil {
				cfg.TLS.ServerName = host
			}
		}
	}
	if cfg.EnquireLink == 0 {
		cfg.EnquireLink = DefaultEnquireLink
	}
	if cfg.SubmitTimeout == 0 {
		cfg.SubmitTimeout = DefaultSubmitTimeout
	}
	if cfg.BindTimeout == 0 {
		cfg.BindTimeout = DefaultBindTimeout
	}
	cfg.BindBackoff = cfg.BindBackoff.Or(messaging.Backoff{Min: DefaultBindBackoffMin, Max: DefaultBindBackoffMax})
	if cfg.ReceiptTimeout == 0 {
		cfg.ReceiptTimeout = DefaultReceiptTimeout
	}
	if cfg.ReceiptConcurrency == 0 {
		cfg.ReceiptConcurrency = DefaultReceiptConcurrency
	}
	if cfg.ReceiptLocation == nil {
		cfg.ReceiptLocation = time.UTC
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg, nil
}

// addressing is the TON and NPI of the source and destination addresses
// of every submit_sm.
type addressing struct {
	srcTON, srcNPI, dstTON, dstNPI uint8
}

// addressing resolves SourceTON and the like against their defaults.
func (cfg Config) addressing() addressing {
	a := addressing{srcTON: tonAlphanumeric, srcNPI: npiUnknown, dstTON: tonInternational, dstNPI: npiISDN}
	for _, f := range []struct {
		v   *uint8
		dst *uint8
	}{{cfg.SourceTON, &a.srcTON}, {cfg.SourceNPI, &a.srcNPI}, {cfg.DestTON, &a.dstTON}, {cfg.DestNPI, &a.dstNPI}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return a
}

// BindType is the kind of bind a Client's sessions make.
type BindType int

const (
	// BindTransceiver sessions (bind_transceiver) send submit_sm and
	// receive deliver_sm: receipts and mobile-originated messages come
	// back on them.
	BindTransceiver BindType = iota
	// BindTransmitter sessions (bind_transmitter) only send. The SMSC
	// delivers no deliver_sm on them, so such a Client never receives a
	// receipt nor an inbound message: ReceiptHandler and InboundHandler
	// are not called, and the receipts it still asks for wait at the SMSC
	// for a receiver or transceiver bound with the same account
	// elsewhere (messages then stay Sent until Herald's receipt timeout
	// unless that bind feeds their receipts to Herald).
	BindTransmitter
)

// String is the name ParseBindType reads.
func (b BindType) String() string {
	switch b {
	case BindTransceiver:
		return "transceiver"
	case BindTransmitter:
		return "transmitter"
	}
	return fmt.Sprintf("BindType(%d)", int(b))
}

// ParseBindType reads a BindType from its name: "transceiver" (or "",
// "trx") or "transmitter" ("tx").
func ParseBindType(s string) (BindType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "transceiver", "trx":
		return BindTransceiver, nil
	case "transmitter", "tx":
		return BindTransmitter, nil
	}
	return 0, fmt.Errorf("smpp: unknown bind type %q (want transceiver or transmitter)", s)
}
