package accounts

import (
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/internal/ttlcache"
	"github.com/heraldhq/herald/messaging"
)

// DefaultCacheTTL is how long a Service reuses the company an API key
// authenticated without reading the store again.
const DefaultCacheTTL = time.Second

// Config configures a Service. Store is required; every other field has a
// documented zero-value default.
type Config struct {
	// Store holds companies, keys, senders and chat services. Required.
	Store Store
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// IDs makes company ids. Default: a UUIDv7 generator on Now.
	IDs *messaging.IDGenerator
	// Rand is the randomness of API keys. Default crypto/rand.
	Rand io.Reader
	// Logger receives what the service logs (a failed write of a key's
	// last use). Default: discard.
	Logger *slog.Logger
	// CacheTTL is how long an authenticated API key is reused without
	// reading the store again. What this Service changes (a new key, a
	// company switched off) it forgets at once; changes made by another
	// process sharing the database show within the TTL. Zero means
	// DefaultCacheTTL; negative turns the cache off.
	CacheTTL time.Duration
}

// Service runs the account use cases of one deployment: companies, their
// API keys and authentication, SMS senders and chat services.
type Service struct {
	store Store
	now   func() time.Time
	ids   *messaging.IDGenerator
	rand  io.Reader
	log   *slog.Logger
	// keys caches companies by the SHA-256 of an API key that
	// authenticated.
	keys ttlcache.Cache[[32]byte, messaging.Company]
}

// New returns a Service for cfg; Config.Store is required.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("accounts: Config.Store is required")
	}
	s := &Service{store: cfg.Store, now: cfg.Now, ids: cfg.IDs, rand: cfg.Rand, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.ids == nil {
		s.ids = messaging.NewIDGenerator(s.now)
	}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	s.keys.TTL = cfg.CacheTTL
	if s.keys.TTL == 0 {
		s.keys.TTL = DefaultCacheTTL
	}
	return s, nil
}

func (s *Service) clock() time.Time { return s.now().UTC() }
