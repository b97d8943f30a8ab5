package smpp

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// Config configures a Client. The zero value of every field but Addr has a
// documented default.
type Config struct {
	// Addr is the SMSC's host:port. Required.
	Addr string
	// SystemID, Password and SystemType are sent in bind_transceiver.
	SystemID   string
	Password   string
	SystemType string

	// Window is the most submit_sm outstanding (sent, not yet answered) at
	// once. Default 100.
	Window int
	// MaxPerSecond caps submit_sm per second (each part counts); 0 means
	// unlimited. The bucket holds a tenth of a second's worth of tokens
	// (at least one). A Send whose turn would come after its context's
	// deadline fails at once, transiently, without taking a turn: keep the
	// sends in flight (delivery.Config.SMSConcurrency) under MaxPerSecond
	// times the send deadline (delivery.Config.SendTimeout), as herald
	// serve does, so that they are not retried for want of a turn.
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
	// BindTimeout bounds the dial and the wait for the bind response, and
	// every write to the connection. Default 10s.
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
	// ReceiptConcurrency is the most receipts handled at once. Default
	// 1024. Past it the session stops reading, which holds back the
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
	// Now tells the time of a receipt that carries no done date. Default
	// time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
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
	if cfg.Window < 0 || cfg.MaxPerSecond < 0 || cfg.EnquireLink < 0 || cfg.SubmitTimeout < 0 ||
		cfg.BindTimeout < 0 || cfg.BindBackoff.Min < 0 || cfg.BindBackoff.Max < 0 ||
		cfg.ReceiptTimeout < 0 || cfg.ReceiptConcurrency < 0 {
		return cfg, errors.New("smpp: negative Config value")
	}
	for _, f := range []IDFormat{cfg.SubmitIDFormat, cfg.ReceiptIDFormat} {
		if f < IDAsSent || f > IDHex {
			return cfg, fmt.Errorf("smpp: unknown message id format %d", f)
		}
	}
	if len(cfg.SystemID) > 15 || len(cfg.Password) > 8 || len(cfg.SystemType) > 12 {
		return cfg, fmt.Errorf("smpp: system_id (15), password (8) or system_type (12) too long")
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
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
