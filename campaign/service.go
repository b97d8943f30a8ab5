package campaign

import (
	"crypto/rand"
	"io"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Config configures a Service. Store is required; every other field has a
// documented zero-value default.
type Config struct {
	// Store holds everything. Required.
	Store Store
	// Limits bound requests and pending capacity. Zero: the defaults.
	Limits Limits
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// IDs makes message, campaign and template ids. Default: a UUIDv7
	// generator on Now.
	IDs *messaging.IDGenerator
	// Rand is the randomness of API keys. Default crypto/rand.
	Rand io.Reader
	// Logger receives what the use cases log. Default: discard.
	Logger *slog.Logger
}

// Service runs Herald's sending use cases for every company of one
// deployment.
type Service struct {
	store  Store
	limits Limits
	now    func() time.Time
	ids    *messaging.IDGenerator
	rand   io.Reader
	log    *slog.Logger
}

// New returns a Service for cfg.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, limits: cfg.Limits.WithDefaults(), now: cfg.Now, ids: cfg.IDs, rand: cfg.Rand, log: cfg.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.ids == nil {
		s.ids = messaging.NewIDGenerator(s.now)
	}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Limits returns the limits in force.
func (s *Service) Limits() Limits { return s.limits }

func (s *Service) clock() time.Time { return s.now().UTC() }
