package routing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Store keeps connectors and routes. Errors are *messaging.Error where the
// caller can act: NotFound, Invalid on "name" for a connector name taken.
type Store interface {
	// CreateConnector inserts c; a name taken is Invalid on "name".
	CreateConnector(ctx context.Context, c *Connector) error
	// GetConnector returns the connector named name, or NotFound.
	GetConnector(ctx context.Context, name string) (Connector, error)
	// ListConnectors returns every connector by name.
	ListConnectors(ctx context.Context) ([]Connector, error)
	// UpdateConnector replaces every field of the connector c.Name but
	// Name and CreatedAt; NotFound when there is none.
	UpdateConnector(ctx context.Context, c *Connector) error
	// DeleteConnector removes it; NotFound when there is none.
	DeleteConnector(ctx context.Context, name string) error
	// CreateRoute inserts r and sets its ID.
	CreateRoute(ctx context.Context, r *Route) error
	// ListRoutes returns every route by Position, then ID.
	ListRoutes(ctx context.Context) ([]Route, error)
	// UpdateRoute replaces every field of route r.ID but ID and
	// CreatedAt; NotFound when there is none.
	UpdateRoute(ctx context.Context, r *Route) error
	// DeleteRoute removes route id; NotFound when there is none.
	DeleteRoute(ctx context.Context, id int64) error
	// ShareConnectors records that process instance runs the connectors
	// names at now (a heartbeat, forgetting the connectors it no longer
	// runs), and returns, for each of them, how many processes ran it
	// since now minus ttl, this one included: each takes that share of
	// the connector's rate and binds. A process that stops beating is
	// counted out once ttl has passed.
	ShareConnectors(ctx context.Context, instance string, names []string, now time.Time, ttl time.Duration) (map[string]int, error)
}

// Config configures a Service. Store is required.
type Config struct {
	Store Store
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Service manages connectors and routes for the admin API. Every process
// sharing the store sees a change within its reload interval.
type Service struct {
	store Store
	now   func() time.Time
}

// New returns a Service for cfg.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("routing: Config.Store is required")
	}
	s := &Service{store: cfg.Store, now: cfg.Now}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// CreateConnector checks c and stores it.
func (s *Service) CreateConnector(ctx context.Context, c Connector) (Connector, error) {
	if err := c.Check(); err != nil {
		return Connector{}, err
	}
	c.CreatedAt = s.now().UTC()
	c.UpdatedAt = c.CreatedAt
	if err := s.store.CreateConnector(ctx, &c); err != nil {
		return Connector{}, fmt.Errorf("create connector: %w", err)
	}
	return c, nil
}

// Connector returns the connector named name.
func (s *Service) Connector(ctx context.Context, name string) (Connector, error) {
	c, err := s.store.GetConnector(ctx, name)
	if err != nil {
		return Connector{}, fmt.Errorf("get connector: %w", err)
	}
	return c, nil
}

// Connectors returns every connector by name.
func (s *Service) Connectors(ctx context.Context) ([]Connector, error) {
	cs, err := s.store.ListConnectors(ctx)
	if err != nil {
		return nil, fmt.Errorf("list connectors: %w", err)
	}
	return cs, nil
}

// UpdateConnector replaces the connector named c.Name (its password kept
// when c.Password is empty and keepPassword is set).
func (s *Service) UpdateConnector(ctx context.Context, c Connector, keepPassword bool) (Connector, error) {
	old, err := s.store.GetConnector(ctx, c.Name)
	if err != nil {
		return Connector{}, fmt.Errorf("update connector: %w", err)
	}
	if keepPassword && c.Password == "" {
		c.Password = old.Password
	}
	if err := c.Check(); err != nil {
		return Connector{}, err
	}
	c.CreatedAt, c.UpdatedAt = old.CreatedAt, s.now().UTC()
	if err := s.store.UpdateConnector(ctx, &c); err != nil {
		return Connector{}, fmt.Errorf("update connector: %w", err)
	}
	return c, nil
}

// DeleteConnector removes the connector named name; a route that names
// it is a Conflict (change or delete the route first).
func (s *Service) DeleteConnector(ctx context.Context, name string) error {
	routes, err := s.store.ListRoutes(ctx)
	if err != nil {
		return fmt.Errorf("delete connector: %w", err)
	}
	for _, r := range routes {
		for _, t := range r.Targets {
			if t.Connector == name {
				return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "Route %d sends through connector %q: change or delete it first", r.ID, name)
			}
		}
	}
	if err := s.store.DeleteConnector(ctx, name); err != nil {
		return fmt.Errorf("delete connector: %w", err)
	}
	return nil
}

// CreateRoute checks r (its connectors must exist) and stores it.
func (s *Service) CreateRoute(ctx context.Context, r Route) (Route, error) {
	if err := s.checkRoute(ctx, &r); err != nil {
		return Route{}, err
	}
	r.CreatedAt = s.now().UTC()
	r.UpdatedAt = r.CreatedAt
	if err := s.store.CreateRoute(ctx, &r); err != nil {
		return Route{}, fmt.Errorf("create route: %w", err)
	}
	return r, nil
}

// Routes returns every route in the order they are tried.
func (s *Service) Routes(ctx context.Context) ([]Route, error) {
	rs, err := s.store.ListRoutes(ctx)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	return rs, nil
}

// UpdateRoute replaces route r.ID.
func (s *Service) UpdateRoute(ctx context.Context, r Route) (Route, error) {
	rs, err := s.store.ListRoutes(ctx)
	if err != nil {
		return Route{}, fmt.Errorf("update route: %w", err)
	}
	i := slices.IndexFunc(rs, func(x Route) bool { return x.ID == r.ID })
	if i < 0 {
		return Route{}, RouteNotFound(r.ID)
	}
	if err := s.checkRoute(ctx, &r); err != nil {
		return Route{}, err
	}
	r.CreatedAt, r.UpdatedAt = rs[i].CreatedAt, s.now().UTC()
	if err := s.store.UpdateRoute(ctx, &r); err != nil {
		return Route{}, fmt.Errorf("update route: %w", err)
	}
	return r, nil
}

// DeleteRoute removes route id.
func (s *Service) DeleteRoute(ctx context.Context, id int64) error {
	if err := s.store.DeleteRoute(ctx, id); err != nil {
		return fmt.Errorf("delete route: %w", err)
	}
	return nil
}

// checkRoute checks r and that its connectors exist: stored ones, or the
// default connector (the one herald serve makes of its HERALD_SMPP_*
// variables, which is not stored).
func (s *Service) checkRoute(ctx context.Context, r *Route) error {
	if err := r.Check(); err != nil {
		return err
	}
	cs, err := s.store.ListConnectors(ctx)
	if err != nil {
		return fmt.Errorf("check route: %w", err)
	}
	var fe messaging.FieldErrors
	for i, t := range r.Targets {
		if t.Connector != DefaultConnector && !slices.ContainsFunc(cs, func(c Connector) bool { return c.Name == t.Connector }) {
			fe.Add(fmt.Sprintf("connectors[%d].name", i), "no connector is named %q", t.Connector)
		}
	}
	return fe.Err()
}

// ShareConnectors records this process's heartbeat for the connectors it
// runs and returns how many processes run each (see Store).
func (s *Service) ShareConnectors(ctx context.Context, instance string, names []string, ttl time.Duration) (map[string]int, error) {
	n, err := s.store.ShareConnectors(ctx, instance, names, s.now(), ttl)
	if err != nil {
		return nil, fmt.Errorf("share connectors: %w", err)
	}
	return n, nil
}

// Shared returns c as one of n processes runs it: its rate and binds
// divided among them (at least one bind each).
func Shared(c Connector, n int) Connector {
	if n > 1 {
		c.MaxPerSecond /= float64(n)
		c.Binds = max(1, c.Binds/n)
	}
	return c
}

// ConnectorNotFound is the NotFound error of a connector.
func ConnectorNotFound(name string) error {
	return messaging.NotFoundf("SMPP connector %q not found", name)
}

// RouteNotFound is the NotFound error of a route.
func RouteNotFound(id int64) error {
	return messaging.NotFoundf("Route %d not found", id)
}
