package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
)

// connectorSettings is the stored JSON of a connector: every field but its
// name and times.
type connectorSettings struct {
	Addr            string  `json:"addr"`
	SystemID        string  `json:"systemId"`
	Password        string  `json:"password"`
	SystemType      string  `json:"systemType"`
	BindType        string  `json:"bindType"`
	Binds           int     `json:"binds"`
	Window          int     `json:"window"`
	MaxPerSecond    float64 `json:"maxPerSecond"`
	TLS             bool    `json:"tls"`
	CACert          string  `json:"caCert,omitempty"`
	SourceTON       *int    `json:"sourceTon,omitempty"`
	SourceNPI       *int    `json:"sourceNpi,omitempty"`
	DestTON         *int    `json:"destTon,omitempty"`
	DestNPI         *int    `json:"destNpi,omitempty"`
	SubmitIDFormat  string  `json:"submitIdFormat"`
	ReceiptIDFormat string  `json:"receiptIdFormat"`
	EnquireLinkMS   int64   `json:"enquireLinkMs,omitempty"`
}

// connectorJSON is the stored JSON of c, its password encrypted
// (messaging.SecretKeyMissing without a key).
func (s *Store) connectorJSON(c *routing.Connector) (string, error) {
	password, err := s.sealSecret(c.Password, connectorSecretPlace(c.Name))
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(connectorSettings{Addr: c.Addr, SystemID: c.SystemID, Password: password, SystemType: c.SystemType,
		BindType: c.BindType, Binds: c.Binds, Window: c.Window, MaxPerSecond: c.MaxPerSecond, TLS: c.TLS, CACert: c.CACert,
		SourceTON: c.SourceTON, SourceNPI: c.SourceNPI, DestTON: c.DestTON, DestNPI: c.DestNPI,
		SubmitIDFormat: c.SubmitIDFormat, ReceiptIDFormat: c.ReceiptIDFormat, EnquireLinkMS: c.EnquireLink.Milliseconds()})
	return string(b), err
}

// scanConnector reads a connector, its password opened.
func (s *Store) scanConnector(row interface{ Scan(...any) error }) (routing.Connector, error) {
	var c routing.Connector
	var raw []byte
	if err := row.Scan(&c.Name, &raw, timeDst{&c.CreatedAt}, timeDst{&c.UpdatedAt}); err != nil {
		return c, err
	}
	var st connectorSettings
	if err := json.Unmarshal(raw, &st); err != nil {
		return c, fmt.Errorf("connector %s: %w", c.Name, err)
	}
	password, err := s.openSecret(st.Password, connectorSecretPlace(c.Name))
	if err != nil {
		return c, fmt.Errorf("connector %s: password: %w", c.Name, err)
	}
	c.Addr, c.SystemID, c.Password, c.SystemType = st.Addr, st.SystemID, password, st.SystemType
	c.BindType, c.Binds, c.Window, c.MaxPerSecond, c.TLS, c.CACert = st.BindType, st.Binds, st.Window, st.MaxPerSecond, st.TLS, st.CACert
	c.SourceTON, c.SourceNPI, c.DestTON, c.DestNPI = st.SourceTON, st.SourceNPI, st.DestTON, st.DestNPI
	c.SubmitIDFormat, c.ReceiptIDFormat, c.EnquireLink = st.SubmitIDFormat, st.ReceiptIDFormat, time.Duration(st.EnquireLinkMS)*time.Millisecond
	return c, nil
}

// CreateConnector implements routing.Store.
func (s *Store) CreateConnector(ctx context.Context, c *routing.Connector) (err error) {
	defer keepUnavailable(&err)
	doc, err := s.connectorJSON(c)
	if err != nil {
		return fmt.Errorf("create connector: %w", err)
	}
	return s.writeSecrets(ctx, "create connector", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO smpp_connectors (name, settings, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
			c.Name, doc, s.ts(c.CreatedAt), s.ts(c.UpdatedAt))
		if err != nil {
			return fmt.Errorf("create connector: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("create connector: %w", err)
		} else if n == 0 {
			return messaging.Invalidf("name", "a connector named %q exists", c.Name)
		}
		return nil
	})
}

// GetConnector implements routing.Store.
func (s *Store) GetConnector(ctx context.Context, name string) (_ routing.Connector, err error) {
	defer keepUnavailable(&err)
	c, err := s.scanConnector(s.read.QueryRowContext(ctx, "SELECT name, settings, created_at, updated_at FROM smpp_connectors WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return routing.Connector{}, routing.ConnectorNotFound(name)
	}
	if err != nil {
		return routing.Connector{}, fmt.Errorf("get connector: %w", err)
	}
	return c, nil
}

// ListConnectors implements routing.Store.
func (s *Store) ListConnectors(ctx context.Context) (_ []routing.Connector, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT name, settings, created_at, updated_at FROM smpp_connectors ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list connectors: %w", err)
	}
	out, err := collect(rows, s.scanConnector)
	if err != nil {
		return nil, fmt.Errorf("list connectors: %w", err)
	}
	return out, nil
}

// UpdateConnector implements routing.Store.
func (s *Store) UpdateConnector(ctx context.Context, c *routing.Connector) (err error) {
	defer keepUnavailable(&err)
	doc, err := s.connectorJSON(c)
	if err != nil {
		return fmt.Errorf("update connector: %w", err)
	}
	return s.writeSecrets(ctx, "update connector", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "UPDATE smpp_connectors SET settings = ?, updated_at = ? WHERE name = ?", doc, s.ts(c.UpdatedAt), c.Name)
		return updatedOne(res, err, "update connector", func() error { return routing.ConnectorNotFound(c.Name) })
	})
}

// DeleteConnector implements routing.Store.
func (s *Store) DeleteConnector(ctx context.Context, name string) (err error) {
	defer keepUnavailable(&err)
	return s.writeSecrets(ctx, "delete connector", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM smpp_connectors WHERE name = ?", name)
		return updatedOne(res, err, "delete connector", func() error { return routing.ConnectorNotFound(name) })
	})
}

// routeSettings is the stored JSON of a route.
type routeSettings struct {
	Prefixes   []string         `json:"prefixes,omitempty"`
	CompanyIDs []messaging.ID   `json:"companyIds,omitempty"`
	SenderIDs  []string         `json:"senderIds,omitempty"`
	Strategy   routing.Strategy `json:"strategy"`
	Targets    []routeTarget    `json:"targets"`
}

type routeTarget struct {
	Connector string `json:"connector"`
	Weight    int    `json:"weight"`
}

func routeJSON(r *routing.Route) (string, error) {
	st := routeSettings{Prefixes: r.Prefixes, CompanyIDs: r.CompanyIDs, SenderIDs: r.SenderIDs, Strategy: r.Strategy}
	for _, t := range r.Targets {
		st.Targets = append(st.Targets, routeTarget{t.Connector, t.Weight})
	}
	b, err := json.Marshal(st)
	return string(b), err
}

func scanRoute(row interface{ Scan(...any) error }) (routing.Route, error) {
	var r routing.Route
	var raw []byte
	if err := row.Scan(&r.ID, &r.Position, &raw, timeDst{&r.CreatedAt}, timeDst{&r.UpdatedAt}); err != nil {
		return r, err
	}
	var st routeSettings
	if err := json.Unmarshal(raw, &st); err != nil {
		return r, fmt.Errorf("route %d: %w", r.ID, err)
	}
	r.Prefixes, r.CompanyIDs, r.SenderIDs, r.Strategy = st.Prefixes, st.CompanyIDs, st.SenderIDs, st.Strategy
	for _, t := range st.Targets {
		r.Targets = append(r.Targets, routing.Target{Connector: t.Connector, Weight: t.Weight})
	}
	return r, nil
}

// CreateRoute implements routing.Store.
func (s *Store) CreateRoute(ctx context.Context, r *routing.Route) (err error) {
	defer keepUnavailable(&err)
	doc, err := routeJSON(r)
	if err != nil {
		return fmt.Errorf("create route: %w", err)
	}
	err = s.db.QueryRowContext(ctx, "INSERT INTO routes (position, settings, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id",
		r.Position, doc, s.ts(r.CreatedAt), s.ts(r.UpdatedAt)).Scan(&r.ID)
	if err != nil {
		return fmt.Errorf("create route: %w", err)
	}
	return nil
}

// ListRoutes implements routing.Store.
func (s *Store) ListRoutes(ctx context.Context) (_ []routing.Route, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT id, position, settings, created_at, updated_at FROM routes ORDER BY position, id")
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	out, err := collect(rows, scanRoute)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	return out, nil
}

// UpdateRoute implements routing.Store.
func (s *Store) UpdateRoute(ctx context.Context, r *routing.Route) (err error) {
	defer keepUnavailable(&err)
	doc, err := routeJSON(r)
	if err != nil {
		return fmt.Errorf("update route: %w", err)
	}
	res, err := s.db.ExecContext(ctx, "UPDATE routes SET position = ?, settings = ?, updated_at = ? WHERE id = ?", r.Position, doc, s.ts(r.UpdatedAt), r.ID)
	return updatedOne(res, err, "update route", func() error { return routing.RouteNotFound(r.ID) })
}

// DeleteRoute implements routing.Store.
func (s *Store) DeleteRoute(ctx context.Context, id int64) (err error) {
	defer keepUnavailable(&err)
	res, err := s.db.ExecContext(ctx, "DELETE FROM routes WHERE id = ?", id)
	return updatedOne(res, err, "delete route", func() error { return routing.RouteNotFound(id) })
}

// ShareConnectors implements routing.Store: one transaction writes this
// process's heartbeats, forgets the connectors it no longer runs and
// those of processes silent for ten times ttl, and counts the live ones.
func (s *Store) ShareConnectors(ctx context.Context, instance string, names []string, now time.Time, ttl time.Duration) (_ map[string]int, err error) {
	defer keepUnavailable(&err)
	out := make(map[string]int, len(names))
	err = s.write(ctx, "share connectors", func(tx *txn) error {
		clear(out)
		if _, err := tx.ExecContext(ctx, "DELETE FROM connector_shares WHERE beat_at < ?", s.ts(now.Add(-10*ttl))); err != nil {
			return fmt.Errorf("share connectors: %w", err)
		}
		rows, err := tx.QueryContext(ctx, "SELECT connector FROM connector_shares WHERE instance = ?", instance)
		if err != nil {
			return fmt.Errorf("share connectors: %w", err)
		}
		var mine []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return fmt.Errorf("share connectors: %w", err)
			}
			mine = append(mine, c)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("share connectors: %w", err)
		}
		for _, c := range mine {
			if !slices.Contains(names, c) {
				if _, err := tx.ExecContext(ctx, "DELETE FROM connector_shares WHERE connector = ? AND instance = ?", c, instance); err != nil {
					return fmt.Errorf("share connectors: %w", err)
				}
			}
		}
		for _, c := range names {
			if _, err := tx.ExecContext(ctx, "INSERT INTO connector_shares (connector, instance, beat_at) VALUES (?, ?, ?) "+
				"ON CONFLICT (connector, instance) DO UPDATE SET beat_at = excluded.beat_at", c, instance, s.ts(now)); err != nil {
				return fmt.Errorf("share connectors: %w", err)
			}
		}
		rows, err = tx.QueryContext(ctx, "SELECT connector, COUNT(*) FROM connector_shares WHERE beat_at > ? GROUP BY connector", s.ts(now.Add(-ttl)))
		if err != nil {
			return fmt.Errorf("share connectors: %w", err)
		}
		for rows.Next() {
			var c string
			var n int
			if err := rows.Scan(&c, &n); err != nil {
				rows.Close()
				return fmt.Errorf("share connectors: %w", err)
			}
			if slices.Contains(names, c) {
				out[c] = n
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("share connectors: %w", err)
		}
		return nil
	})
	return out, err
}
