package campaign

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/internal/ttlcache"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// DefaultCacheTTL is how long a Service reuses a transactional campaign
// and its compiled template.
const DefaultCacheTTL = time.Second

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
	// Media probes the media URLs of chat templates (HTTP HEAD). Nil: media
	// URLs are checked for their form only.
	Media template.MediaProber
	// Logger receives what the use cases log. Default: discard.
	Logger *slog.Logger
	// CacheTTL is how long a transactional campaign with its compiled
	// template is reused without reading the store again. What this
	// Service changes it forgets at once; changes made by another process
	// sharing the database show within the TTL. Zero means DefaultCacheTTL
	// (1 s); negative turns the cache off.
	CacheTTL time.Duration
	// OptOuts tells which numbers asked a company to stop: a bulk send
	// skips them, a transactional or direct send records their message
	// Failed with details OPTED_OUT. Nil: no number is opted out.
	OptOuts OptOutReader
	// OnQueued, when set, is called after messages became due for sending:
	// a message added to a transactional campaign, a direct send, a
	// campaign started. A dispatcher's Wake fits: it looks for due
	// messages at once instead of at its next poll. It must not block.
	OnQueued func()
	// OnHalted, when set, is called after a campaign was paused
	// (cancelled false) or cancelled, once that is stored. A dispatcher's
	// Halt fits: it withdraws the campaign's messages it claimed and has
	// not submitted yet. ctx is the pause's or the cancel's request
	// context: for its values (trace, logging), not to wait on. It must
	// not block.
	OnHalted func(ctx context.Context, campaignID messaging.ID, cancelled bool)
	// OnPrepare, when set, is called as the preparation of a campaign's
	// messages begins (a bulk send's, in the background, or a direct
	// send's), with the context of the request that asked for it and the
	// number of messages. The function it returns, when not nil, is called
	// once the preparation ended, with its error. herald serve opens a
	// span with it. It must not block.
	OnPrepare func(ctx context.Context, c messaging.Campaign, messages int) (end func(error))
	// Providers describes the chat providers: a chat template must be a
	// message its service's provider carries on the service's channel.
	// Nil: Herald's own only (accounts.HeraldProvider), which carries
	// every type.
	Providers accounts.Providers
}

// Service runs Herald's template, campaign and sending use cases for
// every company of one deployment.
type Service struct {
	store Store
	// providers describes the chat providers; nil: Herald's own only.
	providers accounts.Providers
	limits    Limits
	now       func() time.Time
	ids       *messaging.IDGenerator
	media     template.MediaProber
	log       *slog.Logger
	queued    func()
	halted    func(ctx context.Context, campaignID messaging.ID, cancelled bool)
	onPrepare func(ctx context.Context, c messaging.Campaign, messages int) func(error)
	opts      OptOutReader

	// Background preparation of bulk campaigns.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup

	// Campaigns this Service is preparing, left alone by
	// RecoverPreparations.
	preparingMu sync.Mutex
	preparing   map[messaging.ID]struct{}

	// admissions groups concurrent AddMessage writes.
	admissions admitQueue

	// targets caches transactional campaigns with their compiled
	// templates.
	targets ttlcache.Cache[targetKey, target]

	// capacity caches each company's capacity use for a second, by its
	// pending count: a client retrying in a loop while nothing moves
	// reads it once a second, not once a request.
	capacity ttlcache.Cache[capacityKey, messaging.CapacityUse]
}

// New returns a Service for cfg; Config.Store is required.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("campaign: Config.Store is required")
	}
	s := &Service{
		store: cfg.Store, limits: cfg.Limits.WithDefaults(), now: cfg.Now, ids: cfg.IDs, media: cfg.Media, log: cfg.Logger,
		queued: cfg.OnQueued, halted: cfg.OnHalted, onPrepare: cfg.OnPrepare, opts: cfg.OptOuts, providers: cfg.Providers,
		preparing: make(map[messaging.ID]struct{}),
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.ids == nil {
		s.ids = messaging.NewIDGenerator(s.now)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	ttl := cfg.CacheTTL
	if ttl == 0 {
		ttl = DefaultCacheTTL
	}
	s.targets.TTL = ttl
	s.capacity.TTL = time.Second
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	return s, nil
}

// Wait blocks until every background preparation started so far has
// finished, or ctx ends. Preparations keep running after Wait returns on
// ctx: call Close to abandon them.
func (s *Service) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for preparations: %w", ctx.Err())
	}
}

// Close cancels the preparations still running and waits for them to
// stop. A cancelled preparation leaves its campaign Failed when the store
// can still be reached, else Queuing, which RecoverPreparations fails on
// the next start.
func (s *Service) Close() {
	s.bgCancel()
	s.bg.Wait()
}

// Limits returns the limits in force.
func (s *Service) Limits() Limits { return s.limits }

func (s *Service) clock() time.Time { return s.now().UTC() }

// notifyHalted calls the OnHalted hook.
func (s *Service) notifyHalted(ctx context.Context, id messaging.ID, cancelled bool) {
	if s.halted != nil {
		s.halted(ctx, id, cancelled)
	}
}

// beginPrepare calls the OnPrepare hook, and returns the function to call
// when the preparation ended (one doing nothing without the hook).
func (s *Service) beginPrepare(ctx context.Context, c messaging.Campaign, messages int) func(error) {
	if s.onPrepare != nil {
		if end := s.onPrepare(ctx, c, messages); end != nil {
			return end
		}
	}
	return func(error) {}
}

// notifyQueued calls the OnQueued hook.
func (s *Service) notifyQueued() {
	if s.queued != nil {
		s.queued()
	}
}
