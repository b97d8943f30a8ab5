// Package chatroute is the chat router: it holds one adapter per chat
// service, each built by the service's provider (a registry of
// chatprovider.Provider), sends each message through its service's
// adapter, and serves the providers' callbacks at
// /callbacks/chat/{chatServiceId}, handing each request to that
// service's adapter.
//
// The services come from a Source (accounts.Store.ChatServices), read
// again every Config.Reload (2 s), so that a service created or changed
// through the admin API is used without a restart: a service whose
// configuration changed gets a new adapter, and the old one is closed a
// while later, once the sends it took are done.
//
// The deployment's own endpoint (HERALD_CHAT_URL, HERALD_CHAT_TOKEN and
// HERALD_CHAT_CALLBACK_SECRET) is a static service of the herald
// provider (Config.Static). It sends the messages of every herald service
// that has neither baseUrl nor credentials of its own, and serves the
// callbacks posted to /callbacks/chat. While it is the only service that
// sends, the router passes on its bound of sends in flight and its pace of
// probes while its provider does not answer (delivery.SendLimiter and
// ReadyWaiter), as the chat client did alone before.
//
// Provider requests of stored services dial through the egress guard
// (Config.Addresses): a service's baseUrl cannot reach the server's own
// network unless the operator allows it.
package chatroute

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// Defaults of Config.
const (
	DefaultReload = 2 * time.Second
	// DefaultCloseDelay is how long an adapter that was replaced or
	// removed is kept before it is closed: the sends it took finish.
	DefaultCloseDelay = time.Minute
)

// CallbackPrefix is the path under which the router serves callbacks.
const CallbackPrefix = "/callbacks/chat"

// IdleConnsPerHost is how many idle connections to one provider host the
// router's own client keeps: delivery.DefaultChatConcurrency, the chat
// sends one process has in flight by default. Over HTTP/1.1 each send
// holds a connection; when more sends than this end together, the
// extra connections are closed and dialled again by the next sends
// (with TLS, a handshake each).
const IdleConnsPerHost = delivery.DefaultChatConcurrency

// Source lists every company's chat services with their provider,
// channel, baseUrl and credentials (decrypted). accounts.Store implements
// it.
type Source interface {
	ChatServices(ctx context.Context) ([]messaging.ChatService, error)
}

// Static is the deployment's own chat endpoint: a service of the herald
// provider configured by the operator rather than through the admin API.
type Static struct {
	// BaseURL is the endpoint (HERALD_CHAT_URL). Required.
	BaseURL string
	// Token and CallbackSecret are the herald provider's credentials.
	Token          string
	CallbackSecret string
	// HTTP is the client of its requests. Default: chat.NewTransport (it
	// does not dial through the egress guard: the operator chose the
	// address).
	HTTP *http.Client
}

// Config configures a Router.
type Config struct {
	// Source lists the chat services. Nil: the static service only.
	Source Source
	// Providers are the providers services may name. A service naming
	// another cannot send.
	Providers []chatprovider.Provider
	// Static is the deployment's own endpoint. Nil: none; herald services
	// without their own endpoint then cannot send.
	Static *Static
	// Reporter takes what the callbacks report. Required.
	Reporter delivery.Reporter
	// Addresses says which addresses the requests of stored services may
	// go to. Zero: public addresses only.
	Addresses egress.Policy
	// Client, when set, makes the requests of stored services instead of
	// the one built from Addresses (tests).
	Client *http.Client
	// CallbackBase is the public address of this server
	// ("https://herald.example.com"): a service's CallbackURL is
	// CallbackBase + "/callbacks/chat/{id}". Empty: none.
	CallbackBase string
	// Replays and Contacts are given to every adapter (Settings). Nil:
	// each adapter's own guard in memory; contacts never known.
	Replays  chatprovider.ReplayGuard
	Contacts chatprovider.Contacts
	// Reload is how often the services are read again. Default 2s.
	Reload time.Duration
	// CloseDelay is how long a replaced adapter lives on. Default 1m.
	CloseDelay time.Duration
	// Logger receives the router's and the adapters' logs. Default:
	// discard.
	Logger *slog.Logger
	// Now is the adapters' clock. Default time.Now.
	Now func() time.Time
}

// service is one chat service's adapter, or why it has none.
type service struct {
	cs      messaging.ChatService
	key     string
	adapter chatprovider.Adapter // nil: err says why
	err     error
	legacy  bool // sends through the static service
}

// Router is the chat sender of several providers. It implements
// delivery.ChatSender and http.Handler.
type Router struct {
	cfg       Config
	log       *slog.Logger
	providers map[string]chatprovider.Provider
	client    *http.Client
	static    chatprovider.Adapter // nil: none

	mu       sync.RWMutex
	services map[int64]*service

	// loading serializes the reads of the services; lastLoad is when the
	// last one began.
	loading  sync.Mutex
	lastLoad time.Time

	refresh chan struct{}
	stop    context.CancelFunc
	done    chan struct{}
	closers sync.WaitGroup
	closing chan struct{}
	once    sync.Once
}

var (
	_ delivery.ChatSender  = (*Router)(nil)
	_ delivery.SendLimiter = (*Router)(nil)
	_ delivery.ReadyWaiter = (*Router)(nil)
	_ http.Handler         = (*Router)(nil)
)

// New builds the router: the static service's adapter, then every stored
// service's, and starts reading the services again every Config.Reload
// until Close. A first read that fails is logged and tried again.
func New(ctx context.Context, cfg Config) (*Router, error) {
	if cfg.Reporter == nil {
		return nil, errors.New("chatroute: Config.Reporter is required")
	}
	if cfg.Reload <= 0 {
		cfg.Reload = DefaultReload
	}
	if cfg.CloseDelay <= 0 {
		cfg.CloseDelay = DefaultCloseDelay
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{cfg: cfg, log: cfg.Logger, providers: map[string]chatprovider.Provider{}, services: map[int64]*service{},
		refresh: make(chan struct{}, 1), done: make(chan struct{}), closing: make(chan struct{})}
	for _, p := range cfg.Providers {
		r.providers[p.Name] = p
	}
	r.client = cfg.Client
	if r.client == nil {
		dialer := cfg.Addresses.Dialer(net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second})
		r.client = &http.Client{
			Transport: &http.Transport{
				// As many idle connections a host as sends in flight
				// (IdleConnsPerHost): a connection back from a send
				// beyond them would be closed, and the next one dialled.
				DialContext: dialer.DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 2 * IdleConnsPerHost,
				MaxIdleConnsPerHost: IdleConnsPerHost,
				IdleConnTimeout:     90 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
				// No proxy: the address checks apply to the provider itself.
				Proxy: nil,
			},
			// A redirect could lead anywhere the guard refuses only at
			// dialling; providers do not redirect their API.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if s := cfg.Static; s != nil {
		creds, err := json.Marshal(chat.Credentials{Token: s.Token, CallbackSecret: s.CallbackSecret})
		if err != nil {
			return nil, fmt.Errorf("chatroute: static service: %w", err)
		}
		if s.CallbackSecret == "" {
			// The protocol needs a secret to verify callbacks; without
			// one they are refused (401).
			creds, _ = json.Marshal(chat.Credentials{Token: s.Token, CallbackSecret: randomSecret()})
		}
		a, err := chat.Provider().New(ctx, chatprovider.Settings{Credentials: creds, BaseURL: s.BaseURL, Client: s.HTTP,
			Reporter: cfg.Reporter, Logger: cfg.Logger, Now: cfg.Now, Replays: cfg.Replays, Contacts: cfg.Contacts})
		if err != nil {
			return nil, fmt.Errorf("chatroute: static service: %w", err)
		}
		r.static = a
	}
	if err := r.load(ctx); err != nil {
		r.log.Warn("reading the chat services; trying again", "err", err)
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop = stop
	go r.run(lctx)
	return r, nil
}

// randomSecret is a secret nobody knows.
func randomSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// run reads the services again every Reload, or at once when asked
// (refresh), until ctx ends.
func (r *Router) run(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.cfg.Reload)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.refresh:
		}
		if err := r.load(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reading the chat services", "err", err)
		}
	}
}

// fingerprint is what an adapter is built from: a change rebuilds it.
func fingerprint(cs messaging.ChatService) string {
	var b bytes.Buffer
	for _, s := range []string{cs.CompanyID.String(), cs.ProviderName(), cs.ChannelName(), cs.ProviderServiceID, cs.BaseURL} {
		b.WriteString(strconv.Quote(s))
		b.WriteByte(' ')
	}
	b.Write(cs.Credentials)
	return b.String()
}

// legacy reports whether cs sends through the static service: a herald
// service with neither baseUrl nor credentials of its own.
func legacy(cs messaging.ChatService) bool {
	creds := bytes.TrimSpace(cs.Credentials)
	return cs.ProviderName() == chat.ProviderName && cs.BaseURL == "" && (len(creds) == 0 || string(creds) == "null")
}

// load reads the services and builds the adapters of those new or changed.
func (r *Router) load(ctx context.Context) error {
	if r.cfg.Source == nil {
		return nil
	}
	r.loading.Lock()
	defer r.loading.Unlock()
	return r.loadLocked(ctx)
}

// loadSince reads the services unless a read began after since.
func (r *Router) loadSince(ctx context.Context, since time.Time) error {
	r.loading.Lock()
	defer r.loading.Unlock()
	if r.lastLoad.After(since) {
		return nil
	}
	return r.loadLocked(ctx)
}

// loadLocked is load, with loading held.
func (r *Router) loadLocked(ctx context.Context) error {
	r.lastLoad = time.Now()
	list, err := r.cfg.Source.ChatServices(ctx)
	if err != nil {
		return fmt.Errorf("chatroute: %w", err)
	}
	r.mu.RLock()
	old := r.services
	r.mu.RUnlock()
	next := make(map[int64]*service, len(list))
	var retired []chatprovider.Adapter
	for _, cs := range list {
		key := fingerprint(cs)
		if s, ok := old[cs.ID]; ok && s.key == key {
			next[cs.ID] = s
			continue
		}
		next[cs.ID] = r.build(ctx, cs, key)
	}
	for id, s := range old {
		if n, ok := next[id]; (!ok || n != s) && s.adapter != nil {
			retired = append(retired, s.adapter)
		}
	}
	r.mu.Lock()
	r.services = next
	r.mu.Unlock()
	for _, a := range retired {
		r.retire(a)
	}
	return nil
}

// build makes the adapter of one service.
func (r *Router) build(ctx context.Context, cs messaging.ChatService, key string) *service {
	s := &service{cs: cs, key: key}
	if legacy(cs) {
		s.legacy = true
		return s
	}
	p, ok := r.providers[cs.ProviderName()]
	if !ok {
		s.err = fmt.Errorf("chat service %d names the provider %q, which this server does not have", cs.ID, cs.ProviderName())
		r.log.Error("chat service cannot send", "service", cs.ID, "provider", cs.ProviderName(), "err", s.err)
		return s
	}
	st := chatprovider.Settings{
		ServiceID: cs.ID, CompanyID: cs.CompanyID, Channel: cs.ChannelName(), Sender: cs.ProviderServiceID,
		BaseURL: cs.BaseURL, Credentials: cs.Credentials, Client: r.client,
		Reporter: scoped{Reporter: r.cfg.Reporter, serviceID: cs.ID, companyID: cs.CompanyID},
		Replays:  r.cfg.Replays, Contacts: r.cfg.Contacts, Logger: r.log.With("chat_service", cs.ID, "provider", p.Name), Now: r.cfg.Now,
	}
	if st.BaseURL == "" {
		st.BaseURL = p.BaseURL
	}
	if r.cfg.CallbackBase != "" {
		st.CallbackURL = strings.TrimRight(r.cfg.CallbackBase, "/") + CallbackPrefix + "/" + strconv.FormatInt(cs.ID, 10)
	}
	a, err := p.New(ctx, st)
	if err != nil {
		// The error names fields, never their values: no credential is
		// logged.
		s.err = fmt.Errorf("chat service %d: %w", cs.ID, err)
		r.log.Error("chat service cannot send: its adapter could not be built", "service", cs.ID, "provider", p.Name, "err", err)
		return s
	}
	r.log.Info("chat service ready", "service", cs.ID, "provider", p.Name, "channel", st.Channel)
	s.adapter = a
	return s
}

// retire closes a after CloseDelay (at once when the router closes).
func (r *Router) retire(a chatprovider.Adapter) {
	r.closers.Add(1)
	go func() {
		defer r.closers.Done()
		t := time.NewTimer(r.cfg.CloseDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.closing:
		}
		if err := a.Close(); err != nil {
			r.log.Warn("closing a chat adapter", "err", err)
		}
	}()
}

// lookup returns the service of id, reading the services again at once
// when it is not known yet (created since the last read). Concurrent
// lookups of unknown ids share a read that began after they looked.
func (r *Router) lookup(ctx context.Context, id int64) (*service, bool) {
	asked := time.Now()
	r.mu.RLock()
	s, ok := r.services[id]
	r.mu.RUnlock()
	if ok || r.cfg.Source == nil {
		return s, ok
	}
	if err := r.loadSince(ctx, asked); err != nil {
		r.log.WarnContext(ctx, "reading the chat services", "err", err)
		return nil, false
	}
	r.mu.RLock()
	s, ok = r.services[id]
	r.mu.RUnlock()
	return s, ok
}

// SendChat sends m through the adapter of its service (m.ServiceID).
// A service that is not known, whose provider this server does not have,
// or whose adapter could not be built fails permanently
// (delivery.ReasonServiceRefused); a herald service without its own
// endpoint goes through the static one, and fails transiently while there
// is none.
func (r *Router) SendChat(ctx context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	s, ok := r.lookup(ctx, m.ServiceID)
	switch {
	case !ok && r.cfg.Source == nil && r.static != nil:
		// No stored services: everything goes through the static one.
		return r.static.SendChat(ctx, m)
	case !ok:
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonServiceRefused, "unknown service",
			fmt.Errorf("chatroute: chat service %d is not known", m.ServiceID))
	case s.legacy && r.static == nil:
		se := delivery.ChatFailure(delivery.ReasonTransient, "no endpoint",
			fmt.Errorf("chatroute: chat service %d has no endpoint: set HERALD_CHAT_URL, or its baseUrl and credentials", m.ServiceID))
		se.RetryAfter = time.Minute
		return delivery.ChatAccepted{}, se
	case s.legacy:
		return r.static.SendChat(ctx, m)
	case s.adapter == nil:
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonServiceRefused, "no adapter", s.err)
	}
	if m.Sender == "" {
		m.Sender = s.cs.ProviderServiceID
	}
	return s.adapter.SendChat(ctx, m)
}

// ServeHTTP serves the providers' callbacks: /callbacks/chat/{id} goes to
// the adapter of service id (404 when there is none), /callbacks/chat to
// the static service's (404 without one). A herald service without its
// own endpoint has its callbacks served by the static service's adapter.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rest, ok := strings.CutPrefix(req.URL.Path, CallbackPrefix)
	if !ok {
		notFound(w, "no such callback endpoint")
		return
	}
	rest = strings.Trim(rest, "/")
	if rest == "" {
		if r.static == nil {
			notFound(w, "no chat endpoint is configured for /callbacks/chat")
			return
		}
		r.static.ServeHTTP(w, req)
		return
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || id <= 0 {
		notFound(w, "no such chat service")
		return
	}
	s, ok := r.lookup(req.Context(), id)
	switch {
	case !ok:
		notFound(w, "no such chat service")
	case s.legacy && r.static != nil:
		r.static.ServeHTTP(w, req)
	case s.adapter == nil:
		notFound(w, "this chat service takes no callbacks")
	default:
		s.adapter.ServeHTTP(w, req)
	}
}

// notFound answers 404 in the API's error format.
func notFound(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	b, _ := json.Marshal(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{"Not Found", msg})
	_, _ = w.Write(append(b, '\n'))
}

// Refresh makes the router read the services again now (after a change
// through the admin API), without waiting for the next Reload.
func (r *Router) Refresh() {
	select {
	case r.refresh <- struct{}{}:
	default:
	}
}

// Services returns how many stored services have an adapter, and how many
// cannot send (an unknown provider, credentials the adapter refused).
func (r *Router) Services() (ready, broken int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, s := range r.services {
		switch {
		case s.adapter != nil || s.legacy:
			ready++
		default:
			broken++
		}
	}
	return ready, broken
}

// Reachable reports whether the static service's provider answered its
// last request (chat.Client.Reachable); nil without a static service.
func (r *Router) Reachable(ctx context.Context) error {
	if c, ok := r.static.(interface{ Reachable(context.Context) error }); ok {
		return c.Reachable(ctx)
	}
	return nil
}

// staticOnly returns the static service's adapter when it is the only
// one that sends: no stored service has an adapter of its own.
func (r *Router) staticOnly() (chatprovider.Adapter, bool) {
	if r.static == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, s := range r.services {
		if s.adapter != nil {
			return nil, false
		}
	}
	return r.static, true
}

// SendLimit implements delivery.SendLimiter: while the static service is
// the only one that sends, its bound (one message at a time while its
// provider does not answer: chat.Client.SendLimit); otherwise none, so
// that one provider down does not hold back the others' messages.
func (r *Router) SendLimit() int {
	if a, ok := r.staticOnly(); ok {
		if l, ok := a.(delivery.SendLimiter); ok {
			return l.SendLimit()
		}
	}
	return 0
}

// WaitReady implements delivery.ReadyWaiter, as SendLimit: the static
// service's pace of probes while it is the only one that sends; at once
// otherwise.
func (r *Router) WaitReady(ctx context.Context) error {
	if a, ok := r.staticOnly(); ok {
		if w, ok := a.(delivery.ReadyWaiter); ok {
			return w.WaitReady(ctx)
		}
	}
	return ctx.Err()
}

// Close stops reading the services and closes every adapter.
func (r *Router) Close() error {
	var errs []error
	r.once.Do(func() {
		r.stop()
		<-r.done
		close(r.closing)
		r.closers.Wait()
		r.mu.Lock()
		services := r.services
		r.services = map[int64]*service{}
		r.mu.Unlock()
		for _, s := range services {
			if s.adapter != nil {
				errs = append(errs, s.adapter.Close())
			}
		}
		if r.static != nil {
			errs = append(errs, r.static.Close())
		}
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("chatroute: close: %w", err)
	}
	return nil
}

// scoped is the Reporter of one service's adapter: what people send is
// attributed to that service and its company, whatever the callback
// says.
type scoped struct {
	delivery.Reporter
	serviceID int64
	companyID messaging.ID
}

// ChatStatuses implements delivery.Reporter: each status names the
// service's company (delivery.ChatStatus.CompanyID), so that the store
// leaves another company's message as it is. The check costs no read of
// its own: the store reads each message's company as it applies the
// status.
func (s scoped) ChatStatuses(ctx context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	own := make([]delivery.ChatStatus, len(ss))
	for i, st := range ss {
		st.CompanyID = s.companyID
		own[i] = st
	}
	return s.Reporter.ChatStatuses(ctx, own)
}

// ChatStatusesOnce implements delivery.OnceReporter, each status naming
// the service's company as in ChatStatuses; ok is false when the Reporter
// it wraps is no OnceReporter.
func (s scoped) ChatStatusesOnce(ctx context.Context, guard any, keys []delivery.ReplayKey,
	ss []delivery.ChatStatus, keyOf []int) ([]bool, []delivery.ChatEventOutcome, bool, error) {
	or, ok := s.Reporter.(delivery.OnceReporter)
	if !ok {
		return nil, nil, false, nil
	}
	own := make([]delivery.ChatStatus, len(ss))
	for i, st := range ss {
		st.CompanyID = s.companyID
		own[i] = st
	}
	return or.ChatStatusesOnce(ctx, guard, keys, own, keyOf)
}

// ChatInbound implements delivery.Reporter.
func (s scoped) ChatInbound(ctx context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	in.ServiceID, in.CompanyID = s.serviceID, s.companyID
	return s.Reporter.ChatInbound(ctx, in)
}
