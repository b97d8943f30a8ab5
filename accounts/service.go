package accounts

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
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
	// revoked one, a company switched off) it forgets at once. On a store
	// other processes share (a KeyWatcher), the cache is used only while
	// Run listens for their changes, so theirs show at once too. Zero
	// means DefaultCacheTTL; negative turns the cache off.
	CacheTTL time.Duration
	// Providers describes the chat providers a chat service may name.
	// Nil: Herald's own only (HeraldProvider).
	Providers Providers
}

// Service runs the account use cases of one deployment: companies, their
// API keys and authentication, SMS senders and chat services.
type Service struct {
	store Store
	now   func() time.Time
	ids   *messaging.IDGenerator
	rand  io.Reader
	log   *slog.Logger
	// providers describes the chat providers.
	providers Providers
	// keys caches companies by the SHA-256 of an API key that
	// authenticated.
	keys ttlcache.Cache[[32]byte, cachedKey]
	// watch tells of the key changes of other processes; nil when no
	// other process shares the store.
	watch KeyWatcher
	// listening is set while Run listens to watch.
	listening atomic.Bool
}

// cachedKey is what the cache keeps of a key that authenticated: its
// company, and when the key expires (zero: never), checked on the
// Service's clock.
type cachedKey struct {
	company   messaging.Company
	expiresAt time.Time
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
	s.providers = cfg.Providers
	if s.providers == nil {
		s.providers = defaultProviders
	}
	if w, ok := cfg.Store.(KeyWatcher); ok && w.SharedKeys() {
		s.watch = w
	}
	s.keys.TTL = cfg.CacheTTL
	if s.keys.TTL == 0 {
		s.keys.TTL = DefaultCacheTTL
	}
	return s, nil
}

func (s *Service) clock() time.Time { return s.now().UTC() }

// cacheOn reports whether Authenticate may reuse what it cached: always
// on a store no other process shares, only while Run listens otherwise.
func (s *Service) cacheOn() bool {
	return s.watch == nil || s.listening.Load()
}

// Watching reports whether the Service hears at once the key changes of
// other processes: true on a store no other process shares, and on one
// they share while Run listens.
func (s *Service) Watching() bool { return s.cacheOn() }

// Run listens, until ctx ends, for the key changes other processes
// sharing the store make (a key revoked, a grace cut short, a company
// switched off), and forgets the cached keys at each, so that they take
// effect here at once. When the listening fails it is started again after
// a pause; meanwhile every key is read from the store. On a store no other
// process shares, Run only waits for ctx. It returns nil.
func (s *Service) Run(ctx context.Context) error {
	if s.watch == nil {
		<-ctx.Done()
		return nil
	}
	for attempt := 1; ; attempt++ {
		err := s.watch.WatchAPIKeys(ctx, func() {
			s.keys.Clear()
			if !s.listening.Swap(true) {
				attempt = 1 // it listened again: the next failure starts the pauses over
			}
		})
		s.listening.Store(false)
		s.keys.Clear()
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("listening for API key changes of other processes; keys are read from the store meanwhile", "err", err)
		pause := time.Duration(min(attempt, 10)) * time.Second
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
	}
}
