package admin

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// Bind types of a connector.
const (
	BindTransceiver = "transceiver"
	// BindTransmitter sessions get no receipts.
	BindTransmitter = "transmitter"
)

// Id formats of a connector: how its SMSC writes message ids.
const (
	IDAsSent  = "as-sent"
	IDDecimal = "decimal"
	IDHex     = "hex"
)

// Route strategies.
const (
	// StrategyFailover takes the first healthy connector, in order.
	StrategyFailover = "failover"
	// StrategyRoundRobin takes the healthy connectors in turn.
	StrategyRoundRobin = "round-robin"
	// StrategyWeighted takes the healthy connectors in proportion to their
	// weights.
	StrategyWeighted = "weighted"
)

// ConnectorInput creates an SMPP connector (CreateConnector) or replaces
// one (UpdateConnector, which ignores Name). Zero fields take the server's
// defaults.
type ConnectorInput struct {
	// Name is 1 to 40 lower-case letters, digits and dashes, unique.
	// Required to create.
	Name string `json:"name,omitempty"`
	// Addr is the SMSC's host:port. Required.
	Addr     string `json:"addr"`
	SystemID string `json:"systemId,omitempty"`
	// Password: nil sends none. On create, nil or "" means none; on
	// update, nil keeps the stored password and "" removes it.
	Password   *string `json:"password,omitempty"`
	SystemType string  `json:"systemType,omitempty"`
	// BindType is BindTransceiver (the default) or BindTransmitter.
	BindType string `json:"bindType,omitempty"`
	// Binds is the sessions kept bound (1 to 32; default 1), Window the
	// submits outstanding on each (1 to 1000; default 100), MaxPerSecond
	// the submits a second of the whole connector (0: no cap).
	Binds        int     `json:"binds,omitempty"`
	Window       int     `json:"window,omitempty"`
	MaxPerSecond float64 `json:"maxPerSecond,omitempty"`
	// TLS binds over TLS, trusting CACert (PEM) instead of the system's
	// roots when given.
	TLS    bool   `json:"tls,omitempty"`
	CACert string `json:"caCert,omitempty"`
	// SourceTON, SourceNPI, DestTON and DestNPI of submit_sm; nil: the
	// adapter's defaults.
	SourceTON *int `json:"sourceTon,omitempty"`
	SourceNPI *int `json:"sourceNpi,omitempty"`
	DestTON   *int `json:"destTon,omitempty"`
	DestNPI   *int `json:"destNpi,omitempty"`
	// SubmitIDFormat and ReceiptIDFormat: IDAsSent (the default),
	// IDDecimal or IDHex.
	SubmitIDFormat  string `json:"submitIdFormat,omitempty"`
	ReceiptIDFormat string `json:"receiptIdFormat,omitempty"`
	// EnquireLinkSeconds is the interval of enquire_link; 0: the adapter's
	// default, 30.
	EnquireLinkSeconds int `json:"enquireLinkSeconds,omitempty"`
}

// Connector is an SMPP connector as stored, never with its password.
type Connector struct {
	Name         string  `json:"name"`
	Addr         string  `json:"addr"`
	SystemID     string  `json:"systemId"`
	PasswordSet  bool    `json:"passwordSet"`
	SystemType   string  `json:"systemType"`
	BindType     string  `json:"bindType"`
	Binds        int     `json:"binds"`
	Window       int     `json:"window"`
	MaxPerSecond float64 `json:"maxPerSecond"`
	TLS          bool    `json:"tls"`
	CACert       string  `json:"caCert"`
	// SourceTON, SourceNPI, DestTON and DestNPI are nil when the adapter's
	// defaults apply.
	SourceTON       *int   `json:"sourceTon"`
	SourceNPI       *int   `json:"sourceNpi"`
	DestTON         *int   `json:"destTon"`
	DestNPI         *int   `json:"destNpi"`
	SubmitIDFormat  string `json:"submitIdFormat"`
	ReceiptIDFormat string `json:"receiptIdFormat"`
	// EnquireLinkSeconds is 0 when the adapter's default applies.
	EnquireLinkSeconds int `json:"enquireLinkSeconds"`
	// State is the connector's live state in the process that answered;
	// nil when that process does not run it (yet: processes read the
	// connectors every two seconds).
	State     *ConnectorState `json:"state"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// ConnectorState is a connector's live state in one process.
type ConnectorState struct {
	// Binds is the sessions this process keeps bound, BindsUp those bound
	// now, WindowInUse the submits outstanding on them.
	Binds       int `json:"binds"`
	BindsUp     int `json:"bindsUp"`
	WindowInUse int `json:"windowInUse"`
	// Healthy: sends may go through it.
	Healthy          bool      `json:"healthy"`
	SubmitsPerSecond float64   `json:"submitsPerSecond"`
	Submits          uint64    `json:"submits"`
	Errors           uint64    `json:"errors"`
	LastError        string    `json:"lastError"`
	LastErrorAt      time.Time `json:"lastErrorAt"`
}

// RouteTarget is a connector of a route.
type RouteTarget struct {
	// Name is a stored connector, or "default" (the connector of the
	// HERALD_SMPP_* variables).
	Name string `json:"name"`
	// Weight counts with StrategyWeighted (1 to 1000; default 1).
	Weight int `json:"weight,omitempty"`
}

// RouteInput creates or replaces a route: SMS to one of Prefixes, of one
// of CompanyIDs, from one of SenderIDs (each: any when empty) go through
// Connectors by Strategy.
type RouteInput struct {
	// Position orders the routes, lowest first; the first that matches
	// decides.
	Position int `json:"position"`
	// Prefixes of the destination, digits only ("44", not "+44").
	Prefixes   []string `json:"prefixes,omitempty"`
	CompanyIDs []string `json:"companyIds,omitempty"`
	SenderIDs  []string `json:"senderIds,omitempty"`
	// Strategy: StrategyFailover (the default), StrategyRoundRobin or
	// StrategyWeighted.
	Strategy string `json:"strategy,omitempty"`
	// Connectors: 1 to 16. Required.
	Connectors []RouteTarget `json:"connectors"`
}

// Route is a stored route.
type Route struct {
	ID         int64         `json:"id"`
	Position   int           `json:"position"`
	Prefixes   []string      `json:"prefixes"`
	CompanyIDs []string      `json:"companyIds"`
	SenderIDs  []string      `json:"senderIds"`
	Strategy   string        `json:"strategy"`
	Connectors []RouteTarget `json:"connectors"`
	CreatedAt  time.Time     `json:"createdAt"`
	UpdatedAt  time.Time     `json:"updatedAt"`
}

// CreateConnector creates an SMPP connector (POST /smpp-connectors); every
// process binds it within a few seconds.
func (c *Client) CreateConnector(ctx context.Context, in ConnectorInput) (*Connector, error) {
	var out Connector
	if err := c.do(ctx, http.MethodPost, "/smpp-connectors", in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListConnectors returns the stored connectors by name, with their live
// state (GET /smpp-connectors).
func (c *Client) ListConnectors(ctx context.Context) ([]Connector, error) {
	var out struct {
		Connectors []Connector `json:"connectors"`
	}
	if err := c.do(ctx, http.MethodGet, "/smpp-connectors", nil, &out); err != nil {
		return nil, err
	}
	return out.Connectors, nil
}

// GetConnector reads a stored connector with its live state (GET
// /smpp-connectors/{name}).
func (c *Client) GetConnector(ctx context.Context, name string) (*Connector, error) {
	var out Connector
	if err := c.do(ctx, http.MethodGet, "/smpp-connectors/"+seg(name), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateConnector replaces a connector (PUT /smpp-connectors/{name}): a
// field left zero takes its default, but the password, kept when
// in.Password is nil. in.Name is ignored. The connector binds again.
func (c *Client) UpdateConnector(ctx context.Context, name string, in ConnectorInput) (*Connector, error) {
	in.Name = ""
	var out Connector
	if err := c.do(ctx, http.MethodPut, "/smpp-connectors/"+seg(name), in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteConnector deletes a connector (DELETE /smpp-connectors/{name}); a
// connector a route names is a 409.
func (c *Client) DeleteConnector(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/smpp-connectors/"+seg(name), nil, nil)
}

// CreateRoute creates a route (POST /routes).
func (c *Client) CreateRoute(ctx context.Context, in RouteInput) (*Route, error) {
	var out Route
	if err := c.do(ctx, http.MethodPost, "/routes", in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRoutes returns the routes in the order they are tried (GET
// /routes).
func (c *Client) ListRoutes(ctx context.Context) ([]Route, error) {
	var out struct {
		Routes []Route `json:"routes"`
	}
	if err := c.do(ctx, http.MethodGet, "/routes", nil, &out); err != nil {
		return nil, err
	}
	return out.Routes, nil
}

// UpdateRoute replaces a route (PUT /routes/{id}).
func (c *Client) UpdateRoute(ctx context.Context, id int64, in RouteInput) (*Route, error) {
	var out Route
	if err := c.do(ctx, http.MethodPut, "/routes/"+strconv.FormatInt(id, 10), in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteRoute deletes a route (DELETE /routes/{id}).
func (c *Client) DeleteRoute(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, "/routes/"+strconv.FormatInt(id, 10), nil, nil)
}
