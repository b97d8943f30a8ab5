package inbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// Config configures a Service. Store is required; every other field has
// a documented zero-value default.
type Config struct {
	// Store holds the parts and the messages. Required.
	Store Store
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// IDs makes message ids. Default: a UUIDv7 generator on Now.
	IDs *messaging.IDGenerator
	// Logger receives the messages stored, with the sender's number
	// masked and without their text. Default: discard.
	Logger *slog.Logger
	// Answers, when set, is given each complete message attributed to a
	// company, once stored: a survey answer by SMS (survey.Service's
	// AnswerBySMS) reports whether it recorded one.
	Answers func(ctx context.Context, m messaging.InboundMessage) (bool, error)
}

// Service takes inbound SMS parts from the SMPP adapter (Receive, an
// delivery.InboundHandler) and lists a company's inbound messages.
type Service struct {
	store   Store
	ids     *messaging.IDGenerator
	log     *slog.Logger
	answers func(ctx context.Context, m messaging.InboundMessage) (bool, error)
}

// New returns a Service for cfg; Config.Store is required.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("inbound: Config.Store is required")
	}
	s := &Service{store: cfg.Store, ids: cfg.IDs, log: cfg.Logger, answers: cfg.Answers}
	if s.ids == nil {
		s.ids = messaging.NewIDGenerator(cfg.Now)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// MaxParts bounds the parts of one inbound message; a part claiming more
// (or numbered outside them) is stored as a message of one part.
const MaxParts = 16

// Receive stores a part; it is the delivery.InboundHandler of the SMPP
// adapter, which acknowledges the part once Receive returned nil. The
// sender's number is stored with digits only; the log line of a complete
// message carries neither its text nor the whole number.
func (s *Service) Receive(ctx context.Context, p delivery.InboundPart) error {
	if n, ok := messaging.NormalizePhone(strings.TrimSpace(p.From)); ok {
		p.From = n
	} else {
		p.From = strings.TrimPrefix(strings.TrimSpace(p.From), "+")
	}
	p.To = strings.TrimSpace(p.To)
	if p.Count < 1 || p.Count > MaxParts || p.Seq < 1 || p.Seq > p.Count {
		p.Count, p.Seq, p.Ref = 1, 1, 0
	}
	m, err := s.store.RecordInboundPart(ctx, p, s.ids.New())
	if err != nil {
		return fmt.Errorf("store an inbound part: %w", err)
	}
	if m == nil {
		return nil
	}
	answered := false
	if s.answers != nil && !m.CompanyID.IsZero() {
		// The message is stored: an answer that cannot be recorded is
		// logged, and the SMS stays in the inbound list.
		if answered, err = s.answers(ctx, *m); err != nil {
			s.log.WarnContext(ctx, "inbound SMS: survey answer not recorded", "id", m.ID, "err", err)
		}
	}
	s.log.InfoContext(ctx, "inbound SMS stored", "id", m.ID, "from", Mask(m.Phone), "to", m.To, "parts", m.Parts,
		"attributed", !m.CompanyID.IsZero(), "survey_answer", answered, "chars", len([]rune(m.Text)))
	return nil
}

// List returns one page of the company's inbound messages, latest first,
// and how many match.
func (s *Service) List(ctx context.Context, companyID messaging.ID, f messaging.InboundFilter) ([]messaging.InboundMessage, int, error) {
	p, err := f.PageRequest.Normalize()
	if err != nil {
		return nil, 0, err
	}
	f.PageRequest = p
	if f.Phone != "" {
		n, ok := messaging.NormalizePhone(strings.TrimSpace(f.Phone))
		if !ok {
			return nil, 0, messaging.Invalidf("phoneNumber", "phoneNumber %q is not a phone number", f.Phone)
		}
		f.Phone = n
	}
	out, total, err := s.store.ListInbound(ctx, companyID, f)
	if err != nil {
		return nil, 0, fmt.Errorf("list inbound messages: %w", err)
	}
	return out, total, nil
}

// Mask shows the last three digits of a number only, for logs: a number
// is personal data.
func Mask(phone string) string {
	if len(phone) <= 3 {
		return strings.Repeat("*", len(phone))
	}
	return strings.Repeat("*", len(phone)-3) + phone[len(phone)-3:]
}
