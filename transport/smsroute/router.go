// Package smsroute is the SMS sender that routes: it keeps one SMPP client
// per connector of package routing, and sends each SMS through the
// connector its route picks (failover, round-robin or weighted), among
// the healthy ones. Connectors and routes are read from their source
// every Config.Reload: a change made through the admin API of any process
// applies without a restart (a connector whose settings changed is bound
// again). An SMS no route takes goes through the default connector (the
// one of the HERALD_SMPP_* variables) when it runs, and otherwise fails at
// once with details NO_ROUTE.
package smsroute

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/routing"
)

// Client is what the router needs of a connector's client: the SMPP
// adapter's Client fits through SMPP.
type Client interface {
	delivery.SMSSender
	// Up tells whether a session is bound.
	Up() bool
	// State is the client's live state (Healthy is the router's).
	State() routing.State
	Close(ctx context.Context) error
}

// Source lists the connectors and routes, and shares the connectors among
// the processes that run them: routing.Service fits.
type Source interface {
	Connectors(ctx context.Context) ([]routing.Connector, error)
	Routes(ctx context.Context) ([]routing.Route, error)
	ShareConnectors(ctx context.Context, instance string, names []string, ttl time.Duration) (map[string]int, error)
}

// RateSetter is a Client whose rate can change while it runs.
type RateSetter interface {
	SetMaxPerSecond(r float64)
}

// Config configures a Router. Source and Dial are required.
type Config struct {
	Source Source
	// Static are connectors that are not stored (the one of the
	// HERALD_SMPP_* variables, named routing.DefaultConnector); a stored
	// connector of the same name wins.
	Static []routing.Connector
	// Dial makes the client of a connector.
	Dial func(c routing.Connector) (Client, error)
	// Reload is how often connectors and routes are read again. Default
	// 2 seconds.
	Reload time.Duration
	// Penalty is how long a connector whose sends failed Strikes times in
	// a row (timeouts, throttling, lost sessions) is left out of its
	// routes before it is tried again. Defaults 5 seconds and 3.
	Penalty time.Duration
	Strikes int
	// Instance names this process among those sharing the store: each
	// connector's rate and binds are divided among the processes running
	// it (routing.Shared), counted by heartbeat every Reload; one silent
	// for three Reloads is counted out. Empty: the connectors are not
	// shared (a single process).
	Instance string
	Logger   *slog.Logger
}

// Router is a delivery.SMSSender that routes among connectors.
type Router struct {
	cfg  Config
	log  *slog.Logger
	turn atomic.Uint64

	mu      sync.RWMutex
	conns   map[string]*connector
	routes  []routing.Route
	closing bool

	countMu sync.Mutex
	counts  map[RouteCount]uint64 // SMS by route, connector and result (Count left 0)

	stop chan struct{}
	done chan struct{}
}

// connector is a running connector.
type connector struct {
	settings routing.Connector // as configured
	share    int               // processes running it, this one included
	client   Client
	strikes  atomic.Int32
	penalty  atomic.Int64 // unix nanos until which it is left out

	// down is cancelled when the connector loses its last session (the
	// watch loop sees it within watchEvery): the sends waiting in its
	// client then give up and go through another connector. A new one is
	// made when it is up again.
	downMu sync.Mutex
	down   context.Context
	fall   context.CancelFunc
}

// watchEvery is how often the router looks at its connectors' sessions.
const watchEvery = 50 * time.Millisecond

// downCtx returns the context cancelled when the connector goes down. A
// connector bound again gets a fresh one at once, without waiting for the
// watch loop, so that a send picked because the connector is up is not
// refused as down.
func (cn *connector) downCtx() context.Context {
	cn.downMu.Lock()
	defer cn.downMu.Unlock()
	if cn.down == nil || (cn.down.Err() != nil && cn.client.Up()) {
		cn.down, cn.fall = context.WithCancel(context.Background())
	}
	return cn.down
}

// watch cancels the down context of a connector without a bound session,
// and makes a fresh one when it is up again.
func (cn *connector) watch() {
	up := cn.client.Up()
	cn.downMu.Lock()
	defer cn.downMu.Unlock()
	switch {
	case cn.down == nil:
	case !up && cn.down.Err() == nil:
		cn.fall()
	case up && cn.down.Err() != nil:
		cn.down, cn.fall = context.WithCancel(context.Background())
	}
}

// New loads the connectors and routes once (a failure is an error: the
// process should not start without its routes), dials the connectors and
// starts reloading them every Config.Reload until Close.
func New(ctx context.Context, cfg Config) (*Router, error) {
	if cfg.Source == nil || cfg.Dial == nil {
		return nil, errors.New("smsroute: Config.Source and Config.Dial are required")
	}
	if cfg.Reload <= 0 {
		cfg.Reload = 2 * time.Second
	}
	if cfg.Penalty <= 0 {
		cfg.Penalty = 5 * time.Second
	}
	if cfg.Strikes <= 0 {
		cfg.Strikes = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{cfg: cfg, log: cfg.Logger, conns: map[string]*connector{}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := r.reload(ctx); err != nil {
		return nil, err
	}
	go r.run()
	return r, nil
}

// run reloads until Close.
func (r *Router) run() {
	defer close(r.done)
	t := time.NewTicker(r.cfg.Reload)
	defer t.Stop()
	w := time.NewTicker(watchEvery)
	defer w.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-w.C:
			r.mu.RLock()
			for _, cn := range r.conns {
				cn.watch()
			}
			r.mu.RUnlock()
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Reload)
			if err := r.reload(ctx); err != nil {
				r.log.Error("reading SMPP connectors and routes; keeping the last ones", "err", err)
			}
			cancel()
		}
	}
}

// reload reads connectors and routes and brings the clients in line: new
// connectors dialled, changed ones dialled again, removed ones closed.
func (r *Router) reload(ctx context.Context) error {
	stored, err := r.cfg.Source.Connectors(ctx)
	if err != nil {
		return fmt.Errorf("smsroute: %w", err)
	}
	routes, err := r.cfg.Source.Routes(ctx)
	if err != nil {
		return fmt.Errorf("smsroute: %w", err)
	}
	want := map[string]routing.Connector{}
	for _, c := range r.cfg.Static {
		want[c.Name] = c
	}
	for _, c := range stored {
		want[c.Name] = c
	}
	shares := map[string]int{}
	if r.cfg.Instance != "" {
		names := make([]string, 0, len(want))
		for name := range want {
			names = append(names, name)
		}
		if shares, err = r.cfg.Source.ShareConnectors(ctx, r.cfg.Instance, names, 3*r.cfg.Reload); err != nil {
			return fmt.Errorf("smsroute: %w", err)
		}
	}
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return nil
	}
	var old []Client
	for name, cn := range r.conns {
		// A stored connector's UpdatedAt moves with every change of it.
		c, ok := want[name]
		n := max(1, shares[name])
		switch {
		case !ok || !c.UpdatedAt.Equal(cn.settings.UpdatedAt):
		case n == cn.share:
			continue
		case routing.Shared(c, n).Binds == routing.Shared(c, cn.share).Binds:
			// Only the rate's share changed: applied in place when the
			// client can.
			if rs, ok := cn.client.(RateSetter); ok {
				rs.SetMaxPerSecond(routing.Shared(c, n).MaxPerSecond)
				cn.share = n
				continue
			}
		}
		old = append(old, cn.client)
		delete(r.conns, name)
	}
	for name, c := range want {
		if _, ok := r.conns[name]; ok {
			continue
		}
		n := max(1, shares[name])
		cl, err := r.cfg.Dial(routing.Shared(c, n))
		if err != nil {
			r.log.Error("starting an SMPP connector", "connector", name, "err", err)
			continue
		}
		r.conns[name] = &connector{settings: c, share: n, client: cl}
		r.log.Info("SMPP connector started", "connector", name, "addr", c.Addr, "binds", routing.Shared(c, n).Binds, "processes", n)
	}
	r.routes = routes
	r.mu.Unlock()
	for _, cl := range old {
		// A changed connector's old client finishes its sends in flight.
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = cl.Close(cctx)
		}()
	}
	return nil
}

// route returns the route of sms: the first stored route that matches,
// else the default connector when it runs (the routes refine where SMS
// go; the HERALD_SMPP_* connector takes the rest); nil when neither.
func (r *Router) route(sms delivery.SMS) *routing.Route {
	if rt := routing.Match(r.routes, sms.To, sms.CompanyID, sms.From); rt != nil {
		return rt
	}
	if _, ok := r.conns[routing.DefaultConnector]; ok {
		return &routing.Route{Strategy: routing.Failover, Targets: []routing.Target{{Connector: routing.DefaultConnector, Weight: 1}}}
	}
	return nil
}

// healthy tells whether a connector may take sends now.
func (r *Router) healthy(name string) bool {
	cn := r.conns[name]
	return cn != nil && cn.client.Up() && time.Now().UnixNano() >= cn.penalty.Load()
}

// BudgetSpan is how much of its rate a capped connector may hold claimed
// at once (PickConnector): enough to keep it busy between two claims, and
// no more, so that the places of the dispatcher stay free for the other
// connectors' SMS.
const BudgetSpan = 2 * time.Second

// PickConnector implements delivery.ConnectorPicker: the connector that
// Send would pick for sms now, and, when it is capped, the SMS it can use
// at once: BudgetSpan of this process's share of its rate (at least one).
// An uncapped connector, or an SMS no route takes, has no bound.
func (r *Router) PickConnector(sms delivery.SMS) (string, int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rt := r.route(sms)
	if rt == nil {
		return "", 0
	}
	name, _ := routing.Pick(rt, r.healthy, r.turn.Load()+1)
	cn := r.conns[name]
	if cn == nil {
		return name, 0
	}
	rate := routing.Shared(cn.settings, cn.share).MaxPerSecond
	if rate <= 0 {
		return name, 0
	}
	return name, max(1, int(math.Ceil(rate*BudgetSpan.Seconds())))
}

// DetailsNoRoute is the details of an SMS no route takes.
const DetailsNoRoute = "NO_ROUTE"

// Send implements delivery.SMSSender: through the connector the SMS's
// route picks among its healthy connectors (when none is healthy, a
// failover route's first, whose client waits for its session).
func (r *Router) Send(ctx context.Context, sms delivery.SMS) (delivery.SMSResult, error) {
	r.mu.RLock()
	rt := r.route(sms)
	var cn *connector
	if rt != nil {
		if name, _ := routing.Pick(rt, r.healthy, r.turn.Add(1)); name != "" {
			cn = r.conns[name]
		}
	}
	r.mu.RUnlock()
	if rt == nil {
		r.count(RouteNone, "", ResultFailed)
		return delivery.SMSResult{}, &delivery.SendError{Permanent: true, Details: DetailsNoRoute,
			Err: fmt.Errorf("no route takes an SMS to %s from %s", sms.To, sms.From)}
	}
	if cn == nil {
		// Every connector of a round-robin or weighted route is down, or
		// the route names a connector that does not run: retried later.
		r.count(routeLabel(rt), "", ResultRetry)
		return delivery.SMSResult{}, &delivery.SendError{Details: "no connector of the route is up",
			Err: fmt.Errorf("route to %s: no connector up", sms.To)}
	}
	res, err := r.sendVia(ctx, cn, sms)
	if errors.Is(err, delivery.ErrWithdrawn) {
		// Its campaign was halted before it was submitted: no fault of
		// the connector's.
		r.count(routeLabel(rt), cn.settings.Name, ResultWithdrawn)
		return delivery.SMSResult{}, err
	}
	if err != nil && ctx.Err() == nil && cn.downCtx().Err() != nil {
		// Its connector went down while the SMS waited in it: at once
		// through the next healthy one of the route, if any.
		r.mu.RLock()
		var next *connector
		if name, ok := routing.Pick(rt, func(n string) bool { return n != cn.settings.Name && r.healthy(n) }, r.turn.Add(1)); ok {
			next = r.conns[name]
		}
		r.mu.RUnlock()
		if next != nil {
			cn = next
			res, err = r.sendVia(ctx, cn, sms)
		}
	}
	result := ResultSent
	switch {
	case err == nil:
	case delivery.IsPermanent(err):
		result = ResultFailed
	default:
		result = ResultRetry
	}
	r.count(routeLabel(rt), cn.settings.Name, result)
	switch {
	case err == nil:
		cn.strikes.Store(0)
		res.Connector = cn.settings.Name
		for i, id := range res.PartIDs {
			res.PartIDs[i] = PartID(cn.settings.Name, id)
		}
	case !delivery.IsPermanent(err) && ctx.Err() == nil:
		if cn.strikes.Add(1) >= int32(r.cfg.Strikes) {
			cn.penalty.Store(time.Now().Add(r.cfg.Penalty).UnixNano())
			cn.strikes.Store(0)
			r.log.WarnContext(ctx, "SMPP connector left out of its routes for a while", "connector", cn.settings.Name, "for", r.cfg.Penalty, "err", err)
		}
	}
	return res, err
}

// Route labels of RouteCount besides a route's id.
const (
	// RouteDefault is the implicit route of the SMS no route takes, to the
	// connector named default.
	RouteDefault = "default"
	// RouteNone counts the SMS no route takes when there is no default
	// connector (NO_ROUTE).
	RouteNone = "none"
)

// Results of RouteCount.
const (
	ResultSent   = "sent"   // the SMSC accepted it
	ResultFailed = "failed" // refused for good, or no route
	ResultRetry  = "retry"  // a transient failure: sent again later
	// ResultWithdrawn: its campaign was paused or cancelled before it was
	// submitted (delivery.ErrWithdrawn).
	ResultWithdrawn = "withdrawn"
)

// RouteCount is how many SMS a route sent through a connector with a
// result, since the Router started.
type RouteCount struct {
	// Route is the route's id, RouteDefault or RouteNone.
	Route string
	// Connector is the connector's name; empty when none was picked.
	Connector string
	// Result is ResultSent, ResultFailed, ResultRetry or ResultWithdrawn.
	Result string
	Count  uint64
}

// routeLabel is rt's Route in RouteCount.
func routeLabel(rt *routing.Route) string {
	if rt.ID == 0 {
		return RouteDefault
	}
	return strconv.FormatInt(rt.ID, 10)
}

func (r *Router) count(route, connector, result string) {
	r.countMu.Lock()
	defer r.countMu.Unlock()
	if r.counts == nil {
		r.counts = map[RouteCount]uint64{}
	}
	r.counts[RouteCount{Route: route, Connector: connector, Result: result}]++
}

// RouteCounts returns the SMS sent by route, connector and result, sorted.
func (r *Router) RouteCounts() []RouteCount {
	r.countMu.Lock()
	out := make([]RouteCount, 0, len(r.counts))
	for k, n := range r.counts {
		k.Count = n
		out = append(out, k)
	}
	r.countMu.Unlock()
	slices.SortFunc(out, func(a, b RouteCount) int {
		return cmp.Or(strings.Compare(a.Route, b.Route), strings.Compare(a.Connector, b.Connector), strings.Compare(a.Result, b.Result))
	})
	return out
}

// Up tells whether a connector has a bound session.
func (r *Router) Up() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, cn := range r.conns {
		if cn.client.Up() {
			return true
		}
	}
	return false
}

// Names returns the running connectors' names, sorted.
func (r *Router) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.conns))
	for n := range r.conns {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Client returns the running client of connector name.
func (r *Router) Client(name string) (Client, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	cn := r.conns[name]
	if cn == nil {
		return nil, false
	}
	return cn.client, true
}

// WaitReady implements delivery.ReadyWaiter: it returns once a connector
// has a bound session (with no connector at all, SMS wait, Pending, until
// one is set up).
func (r *Router) WaitReady(ctx context.Context) error {
	for {
		if r.Up() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("smsroute: waiting for a bound connector: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ConnectorState implements routing.StateReader.
func (r *Router) ConnectorState(name string) (routing.State, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	cn := r.conns[name]
	if cn == nil {
		return routing.State{}, false
	}
	st := cn.client.State()
	st.Healthy = r.healthy(name)
	return st, true
}

// Close stops reloading and closes every client, waiting for their sends
// in flight until ctx ends.
func (r *Router) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return nil
	}
	r.closing = true
	conns := r.conns
	r.conns = map[string]*connector{}
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	var errs []error
	for _, cn := range conns {
		errs = append(errs, cn.client.Close(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("smsroute: close: %w", err)
	}
	return nil
}

// PartID is the id Herald keeps for a part an SMSC accepted through
// connector: the SMSC's own id, prefixed with the connector's name and a
// colon unless it is the default connector (whose ids stay as they were
// before connectors existed). Two SMSCs may hand out the same ids; a
// receipt is matched with the connector it came through.
func PartID(connector, id string) string {
	if connector == routing.DefaultConnector {
		return id
	}
	return connector + ":" + id
}

// sendVia sends sms through cn, giving up as soon as cn loses its last
// session.
func (r *Router) sendVia(ctx context.Context, cn *connector, sms delivery.SMS) (delivery.SMSResult, error) {
	down := cn.downCtx()
	if down.Err() != nil {
		return delivery.SMSResult{}, &delivery.SendError{Details: "connector down", Err: fmt.Errorf("connector %s is down", cn.settings.Name)}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(down, cancel)
	defer stop()
	return cn.client.Send(sctx, sms)
}
