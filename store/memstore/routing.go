package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
)

// routingState holds connectors and routes.
type routingState struct {
	connectors map[string]routing.Connector
	routes     map[int64]routing.Route
	lastRoute  int64
	beats      map[shareKey]time.Time // last heartbeat of a connector in a process
}

// shareKey is a connector run by a process.
type shareKey struct{ connector, instance string }

func cloneConnector(c routing.Connector) routing.Connector {
	for _, p := range []**int{&c.SourceTON, &c.SourceNPI, &c.DestTON, &c.DestNPI} {
		if *p != nil {
			v := **p
			*p = &v
		}
	}
	return c
}

func cloneRoute(r routing.Route) routing.Route {
	r.Prefixes = slices.Clone(r.Prefixes)
	r.CompanyIDs = slices.Clone(r.CompanyIDs)
	r.SenderIDs = slices.Clone(r.SenderIDs)
	r.Targets = slices.Clone(r.Targets)
	return r
}

// CreateConnector implements routing.Store.
func (s *Store) CreateConnector(ctx context.Context, c *routing.Connector) error {
	if err := s.lock(ctx, "create connector"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.routing.connectors == nil {
		s.routing.connectors = map[string]routing.Connector{}
	}
	if _, ok := s.routing.connectors[c.Name]; ok {
		return messaging.Invalidf("name", "a connector named %q exists", c.Name)
	}
	s.routing.connectors[c.Name] = cloneConnector(*c)
	return nil
}

// GetConnector implements routing.Store.
func (s *Store) GetConnector(ctx context.Context, name string) (routing.Connector, error) {
	if err := s.lock(ctx, "get connector"); err != nil {
		return routing.Connector{}, err
	}
	defer s.mu.Unlock()
	c, ok := s.routing.connectors[name]
	if !ok {
		return routing.Connector{}, routing.ConnectorNotFound(name)
	}
	return cloneConnector(c), nil
}

// ListConnectors implements routing.Store.
func (s *Store) ListConnectors(ctx context.Context) ([]routing.Connector, error) {
	if err := s.lock(ctx, "list connectors"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]routing.Connector, 0, len(s.routing.connectors))
	for _, c := range s.routing.connectors {
		out = append(out, cloneConnector(c))
	}
	slices.SortFunc(out, func(a, b routing.Connector) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateConnector implements routing.Store.
func (s *Store) UpdateConnector(ctx context.Context, c *routing.Connector) error {
	if err := s.lock(ctx, "update connector"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	old, ok := s.routing.connectors[c.Name]
	if !ok {
		return routing.ConnectorNotFound(c.Name)
	}
	v := cloneConnector(*c)
	v.CreatedAt = old.CreatedAt
	s.routing.connectors[c.Name] = v
	return nil
}

// DeleteConnector implements routing.Store.
func (s *Store) DeleteConnector(ctx context.Context, name string) error {
	if err := s.lock(ctx, "delete connector"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.routing.connectors[name]; !ok {
		return routing.ConnectorNotFound(name)
	}
	delete(s.routing.connectors, name)
	return nil
}

// CreateRoute implements routing.Store.
func (s *Store) CreateRoute(ctx context.Context, r *routing.Route) error {
	if err := s.lock(ctx, "create route"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.routing.routes == nil {
		s.routing.routes = map[int64]routing.Route{}
	}
	s.routing.lastRoute++
	r.ID = s.routing.lastRoute
	s.routing.routes[r.ID] = cloneRoute(*r)
	return nil
}

// ListRoutes implements routing.Store.
func (s *Store) ListRoutes(ctx context.Context) ([]routing.Route, error) {
	if err := s.lock(ctx, "list routes"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]routing.Route, 0, len(s.routing.routes))
	for _, r := range s.routing.routes {
		out = append(out, cloneRoute(r))
	}
	slices.SortFunc(out, func(a, b routing.Route) int {
		return cmp.Or(cmp.Compare(a.Position, b.Position), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// UpdateRoute implements routing.Store.
func (s *Store) UpdateRoute(ctx context.Context, r *routing.Route) error {
	if err := s.lock(ctx, "update route"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	old, ok := s.routing.routes[r.ID]
	if !ok {
		return routing.RouteNotFound(r.ID)
	}
	v := cloneRoute(*r)
	v.CreatedAt = old.CreatedAt
	s.routing.routes[r.ID] = v
	return nil
}

// DeleteRoute implements routing.Store.
func (s *Store) DeleteRoute(ctx context.Context, id int64) error {
	if err := s.lock(ctx, "delete route"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.routing.routes[id]; !ok {
		return routing.RouteNotFound(id)
	}
	delete(s.routing.routes, id)
	return nil
}

// ShareConnectors implements routing.Store.
func (s *Store) ShareConnectors(ctx context.Context, instance string, names []string, now time.Time, ttl time.Duration) (map[string]int, error) {
	if err := s.lock(ctx, "share connectors"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if s.routing.beats == nil {
		s.routing.beats = map[shareKey]time.Time{}
	}
	for k := range s.routing.beats {
		if k.instance == instance && !slices.Contains(names, k.connector) {
			delete(s.routing.beats, k)
		}
	}
	out := make(map[string]int, len(names))
	for _, n := range names {
		s.routing.beats[shareKey{n, instance}] = now
	}
	for k, at := range s.routing.beats {
		if _, ok := out[k.connector]; (ok || slices.Contains(names, k.connector)) && at.After(now.Add(-ttl)) {
			out[k.connector]++
		}
	}
	return out, nil
}
