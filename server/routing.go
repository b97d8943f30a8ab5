package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
)

// connectorInput is the body of POST and PUT /admin/v1/smpp-connectors.
type connectorInput struct {
	Name               string  `json:"name"`
	Addr               string  `json:"addr"`
	SystemID           string  `json:"systemId"`
	Password           *string `json:"password"`
	SystemType         string  `json:"systemType"`
	BindType           string  `json:"bindType"`
	Binds              int     `json:"binds"`
	Window             int     `json:"window"`
	MaxPerSecond       float64 `json:"maxPerSecond"`
	TLS                bool    `json:"tls"`
	CACert             string  `json:"caCert"`
	SourceTON          *int    `json:"sourceTon"`
	SourceNPI          *int    `json:"sourceNpi"`
	DestTON            *int    `json:"destTon"`
	DestNPI            *int    `json:"destNpi"`
	SubmitIDFormat     string  `json:"submitIdFormat"`
	ReceiptIDFormat    string  `json:"receiptIdFormat"`
	EnquireLinkSeconds int     `json:"enquireLinkSeconds"`
}

func (in *connectorInput) connector() routing.Connector {
	c := routing.Connector{Name: in.Name, Addr: in.Addr, SystemID: in.SystemID, SystemType: in.SystemType, BindType: in.BindType,
		Binds: in.Binds, Window: in.Window, MaxPerSecond: in.MaxPerSecond, TLS: in.TLS, CACert: in.CACert,
		SourceTON: in.SourceTON, SourceNPI: in.SourceNPI, DestTON: in.DestTON, DestNPI: in.DestNPI,
		SubmitIDFormat: in.SubmitIDFormat, ReceiptIDFormat: in.ReceiptIDFormat, EnquireLink: time.Duration(in.EnquireLinkSeconds) * time.Second}
	if in.Password != nil {
		c.Password = *in.Password
	}
	return c
}

// connectorJSON is a connector as the admin API shows it: never its
// password, only whether it has one.
type connectorJSON struct {
	Name               string     `json:"name"`
	Addr               string     `json:"addr"`
	SystemID           string     `json:"systemId"`
	PasswordSet        bool       `json:"passwordSet"`
	SystemType         string     `json:"systemType"`
	BindType           string     `json:"bindType"`
	Binds              int        `json:"binds"`
	Window             int        `json:"window"`
	MaxPerSecond       float64    `json:"maxPerSecond"`
	TLS                bool       `json:"tls"`
	CACert             *string    `json:"caCert"`
	SourceTON          *int       `json:"sourceTon"`
	SourceNPI          *int       `json:"sourceNpi"`
	DestTON            *int       `json:"destTon"`
	DestNPI            *int       `json:"destNpi"`
	SubmitIDFormat     string     `json:"submitIdFormat"`
	ReceiptIDFormat    string     `json:"receiptIdFormat"`
	EnquireLinkSeconds *int       `json:"enquireLinkSeconds"`
	State              *stateJSON `json:"state"`
	CreatedAt          timestamp  `json:"createdAt"`
	UpdatedAt          timestamp  `json:"updatedAt"`
}

// stateJSON is a connector's live state in this process.
type stateJSON struct {
	Binds            int        `json:"binds"`
	BindsUp          int        `json:"bindsUp"`
	WindowInUse      int        `json:"windowInUse"`
	Healthy          bool       `json:"healthy"`
	SubmitsPerSecond float64    `json:"submitsPerSecond"`
	Submits          uint64     `json:"submits"`
	Errors           uint64     `json:"errors"`
	LastError        *string    `json:"lastError"`
	LastErrorAt      *timestamp `json:"lastErrorAt"`
}

// maxEnquireLinkSeconds is the longest enquire_link interval.
const maxEnquireLinkSeconds = 3600

// check refuses what would not survive the conversion to the connector:
// an interval so large that it overflows a time.Duration could wrap into
// the range routing accepts.
func (in *connectorInput) check() error {
	if in.EnquireLinkSeconds < 0 || in.EnquireLinkSeconds > maxEnquireLinkSeconds {
		return invalidField("enquireLinkSeconds", fmt.Sprintf("enquireLinkSeconds must be between 1 and %d (0 or left out: the default)", maxEnquireLinkSeconds))
	}
	return nil
}

func (s *server) connectorOut(c *routing.Connector) connectorJSON {
	out := connectorJSON{Name: c.Name, Addr: c.Addr, SystemID: c.SystemID, PasswordSet: c.Password != "", SystemType: c.SystemType,
		BindType: c.BindType, Binds: c.Binds, Window: c.Window, MaxPerSecond: c.MaxPerSecond, TLS: c.TLS, CACert: strOrNull(c.CACert),
		SourceTON: c.SourceTON, SourceNPI: c.SourceNPI, DestTON: c.DestTON, DestNPI: c.DestNPI,
		SubmitIDFormat: c.SubmitIDFormat, ReceiptIDFormat: c.ReceiptIDFormat, CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt)}
	if c.EnquireLink > 0 {
		v := int(c.EnquireLink / time.Second)
		out.EnquireLinkSeconds = &v
	}
	if s.connStates != nil {
		if st, ok := s.connStates.ConnectorState(c.Name); ok {
			out.State = &stateJSON{Binds: st.Binds, BindsUp: st.BindsUp, WindowInUse: st.WindowInUse, Healthy: st.Healthy,
				SubmitsPerSecond: st.SubmitsPerSecond, Submits: st.Submits, Errors: st.Errors, LastError: strOrNull(st.LastError),
				LastErrorAt: tsOrNull(&st.LastErrorAt)}
		}
	}
	return out
}

// adminCreateConnector answers POST /admin/v1/smpp-connectors.
func (s *server) adminCreateConnector(w http.ResponseWriter, r *http.Request) error {
	var in connectorInput
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	if err := in.check(); err != nil {
		return err
	}
	c, err := s.routing.CreateConnector(r.Context(), in.connector())
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, s.connectorOut(&c))
	return nil
}

// adminListConnectors answers GET /admin/v1/smpp-connectors.
func (s *server) adminListConnectors(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.routing.Connectors(r.Context())
	if err != nil {
		return err
	}
	out := make([]connectorJSON, len(cs))
	for i := range cs {
		out[i] = s.connectorOut(&cs[i])
	}
	s.writeJSON(w, http.StatusOK, struct {
		Connectors []connectorJSON `json:"connectors"`
	}{out})
	return nil
}

// adminGetConnector answers GET /admin/v1/smpp-connectors/{name}.
func (s *server) adminGetConnector(w http.ResponseWriter, r *http.Request) error {
	name, err := pathVar(r, "name")
	if err != nil {
		return err
	}
	c, err := s.routing.Connector(r.Context(), name)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, s.connectorOut(&c))
	return nil
}

// adminUpdateConnector answers PUT /admin/v1/smpp-connectors/{name}: the
// whole connector, its password kept when the body has none.
func (s *server) adminUpdateConnector(w http.ResponseWriter, r *http.Request) error {
	name, err := pathVar(r, "name")
	if err != nil {
		return err
	}
	var in connectorInput
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	in.Name = name
	if err := in.check(); err != nil {
		return err
	}
	c, err := s.routing.UpdateConnector(r.Context(), in.connector(), in.Password == nil)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, s.connectorOut(&c))
	return nil
}

// adminDeleteConnector answers DELETE /admin/v1/smpp-connectors/{name}.
func (s *server) adminDeleteConnector(w http.ResponseWriter, r *http.Request) error {
	name, err := pathVar(r, "name")
	if err != nil {
		return err
	}
	if err := s.routing.DeleteConnector(r.Context(), name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// routeInput is the body of POST and PUT /admin/v1/routes.
type routeInput struct {
	Position   int            `json:"position"`
	Prefixes   []string       `json:"prefixes"`
	CompanyIDs []messaging.ID `json:"companyIds"`
	SenderIDs  []string       `json:"senderIds"`
	Strategy   string         `json:"strategy"`
	Connectors []struct {
		Name   string `json:"name"`
		Weight int    `json:"weight"`
	} `json:"connectors"`
}

func (in *routeInput) route() routing.Route {
	r := routing.Route{Position: in.Position, Prefixes: in.Prefixes, CompanyIDs: in.CompanyIDs, SenderIDs: in.SenderIDs,
		Strategy: routing.Strategy(in.Strategy)}
	for _, c := range in.Connectors {
		r.Targets = append(r.Targets, routing.Target{Connector: c.Name, Weight: c.Weight})
	}
	return r
}

// routeJSON is a route as the admin API shows it.
type routeJSON struct {
	ID         int64             `json:"id"`
	Position   int               `json:"position"`
	Prefixes   []string          `json:"prefixes"`
	CompanyIDs []messaging.ID    `json:"companyIds"`
	SenderIDs  []string          `json:"senderIds"`
	Strategy   routing.Strategy  `json:"strategy"`
	Connectors []routeTargetJSON `json:"connectors"`
	CreatedAt  timestamp         `json:"createdAt"`
	UpdatedAt  timestamp         `json:"updatedAt"`
}

type routeTargetJSON struct {
	Name   string `json:"name"`
	Weight int    `json:"weight"`
}

func routeOut(r *routing.Route) routeJSON {
	out := routeJSON{ID: r.ID, Position: r.Position, Prefixes: nonNil(r.Prefixes), CompanyIDs: nonNil(r.CompanyIDs),
		SenderIDs: nonNil(r.SenderIDs), Strategy: r.Strategy, CreatedAt: ts(r.CreatedAt), UpdatedAt: ts(r.UpdatedAt)}
	for _, t := range r.Targets {
		out.Connectors = append(out.Connectors, routeTargetJSON{t.Connector, t.Weight})
	}
	return out
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// adminCreateRoute answers POST /admin/v1/routes.
func (s *server) adminCreateRoute(w http.ResponseWriter, r *http.Request) error {
	var in routeInput
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	rt, err := s.routing.CreateRoute(r.Context(), in.route())
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, routeOut(&rt))
	return nil
}

// adminListRoutes answers GET /admin/v1/routes: in the order they are
// tried.
func (s *server) adminListRoutes(w http.ResponseWriter, r *http.Request) error {
	rs, err := s.routing.Routes(r.Context())
	if err != nil {
		return err
	}
	out := make([]routeJSON, len(rs))
	for i := range rs {
		out[i] = routeOut(&rs[i])
	}
	s.writeJSON(w, http.StatusOK, struct {
		Routes []routeJSON `json:"routes"`
	}{out})
	return nil
}

// routeID reads the {id} of a route path.
func routeID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidField("id", "id must be a route id (a positive integer)")
	}
	return id, nil
}

// adminUpdateRoute answers PUT /admin/v1/routes/{id}.
func (s *server) adminUpdateRoute(w http.ResponseWriter, r *http.Request) error {
	id, err := routeID(r)
	if err != nil {
		return err
	}
	var in routeInput
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	rt := in.route()
	rt.ID = id
	rt, err = s.routing.UpdateRoute(r.Context(), rt)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, routeOut(&rt))
	return nil
}

// adminDeleteRoute answers DELETE /admin/v1/routes/{id}.
func (s *server) adminDeleteRoute(w http.ResponseWriter, r *http.Request) error {
	id, err := routeID(r)
	if err != nil {
		return err
	}
	if err := s.routing.DeleteRoute(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
