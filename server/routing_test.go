package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdminConnectorsAndRoutes: the operator creates, lists, reads,
// updates and deletes SMPP connectors and routes through the admin API;
// a password is never shown and is kept by an update without one; a
// route naming an unknown connector, or a connector a route uses being
// deleted, is refused; bad fields are 400s naming them; a missing one is
// a 404, and no token a 401.
func TestAdminConnectorsAndRoutes(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/admin/v1/smpp-connectors", map[string]any{"name": "eu-main", "addr": "smsc.example.com:2775", "systemId": "herald",
		"password": "secret", "binds": 4, "window": 50, "maxPerSecond": 500, "submitIdFormat": "hex"}, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	c := r.obj()
	require.Equal(t, true, c["passwordSet"])
	require.NotContains(t, c, "password")
	require.Equal(t, "transceiver", c["bindType"], "the default bind type")
	require.Equal(t, float64(4), c["binds"])
	require.Equal(t, "hex", c["submitIdFormat"])
	require.Equal(t, "as-sent", c["receiptIdFormat"])
	require.Equal(t, http.StatusCreated, e.do("POST", "/admin/v1/smpp-connectors", map[string]any{"name": "backup", "addr": "10.0.0.2:2775"}, admin()).Code)
	requireError(t, e.do("POST", "/admin/v1/smpp-connectors", map[string]any{"name": "backup", "addr": "10.0.0.2:2775"}, admin()),
		http.StatusBadRequest, "Bad Request", "name")
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		requireError(t, e.do(method, "/admin/v1/smpp-connectors/back%01up", map[string]any{"addr": "10.0.0.2:2775"}, admin()),
			http.StatusBadRequest, "Bad Request", "name")
	}
	for field, body := range map[string]map[string]any{
		"name":      {"name": "Bad Name", "addr": "a:1"},
		"addr":      {"name": "x", "addr": "nowhere"},
		"binds":     {"name": "x", "addr": "a:1", "binds": 99},
		"window":    {"name": "x", "addr": "a:1", "window": -1},
		"systemId":  {"name": "x", "addr": "a:1", "systemId": "far-too-long-system-id"},
		"bindType":  {"name": "x", "addr": "a:1", "bindType": "receiver"},
		"sourceTon": {"name": "x", "addr": "a:1", "sourceTon": 300},
		"caCert":    {"name": "x", "addr": "a:1", "caCert": "not a certificate"},
	} {
		requireError(t, e.do("POST", "/admin/v1/smpp-connectors", body, admin()), http.StatusBadRequest, "Bad Request", field)
	}

	r = e.do("PUT", "/admin/v1/smpp-connectors/eu-main", map[string]any{"addr": "smsc2.example.com:2775", "systemId": "herald", "binds": 8}, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, true, r.obj()["passwordSet"], "no password in the body: kept")
	require.Equal(t, float64(8), r.obj()["binds"])
	r = e.do("PUT", "/admin/v1/smpp-connectors/eu-main", map[string]any{"addr": "smsc2.example.com:2775", "password": ""}, admin())
	require.Equal(t, false, r.obj()["passwordSet"], "an empty password clears it")
	list := e.do("GET", "/admin/v1/smpp-connectors", nil, admin()).obj()["connectors"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, "backup", list[0].(map[string]any)["name"])
	require.Equal(t, "smsc2.example.com:2775", e.do("GET", "/admin/v1/smpp-connectors/eu-main", nil, admin()).obj()["addr"])
	requireError(t, e.do("GET", "/admin/v1/smpp-connectors/nope", nil, admin()), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("PUT", "/admin/v1/smpp-connectors/nope", map[string]any{"addr": "a:1"}, admin()), http.StatusNotFound, "Not Found", "")

	requireError(t, e.do("POST", "/admin/v1/routes", map[string]any{"connectors": []any{map[string]any{"name": "ghost"}}}, admin()),
		http.StatusBadRequest, "Bad Request", "connectors[0].name")
	requireError(t, e.do("POST", "/admin/v1/routes", map[string]any{"prefixes": []string{"+44"}, "connectors": []any{map[string]any{"name": "backup"}}}, admin()),
		http.StatusBadRequest, "Bad Request", "prefixes[0]")
	requireError(t, e.do("POST", "/admin/v1/routes", map[string]any{"strategy": "random", "connectors": []any{map[string]any{"name": "backup"}}}, admin()),
		http.StatusBadRequest, "Bad Request", "strategy")
	// Integers beyond what a route or a connector takes are a 400 on the
	// field, on every store (Postgres's integer columns would fail with a
	// 500, SQLite would keep them).
	for _, pos := range []int64{1 << 31, -1, 1_000_001, 1 << 62} {
		requireError(t, e.do("POST", "/admin/v1/routes", map[string]any{"position": pos, "connectors": []any{map[string]any{"name": "backup"}}}, admin()),
			http.StatusBadRequest, "Bad Request", "position")
	}
	for _, secs := range []int64{1 << 62, 9_223_372_037, -1} {
		requireError(t, e.do("POST", "/admin/v1/smpp-connectors", map[string]any{"name": "wrap", "addr": "smsc.example:2775", "systemId": "x", "password": "y",
			"enquireLinkSeconds": secs}, admin()), http.StatusBadRequest, "Bad Request", "enquireLinkSeconds")
	}
	requireError(t, e.do("GET", "/admin/v1/smpp-connectors/wrap", nil, admin()), http.StatusNotFound, "Not Found", "")
	r = e.do("POST", "/admin/v1/routes", map[string]any{"position": 10, "prefixes": []string{"44"}, "companyIds": []string{e.id.String()},
		"strategy": "failover", "connectors": []any{map[string]any{"name": "eu-main"}, map[string]any{"name": "backup"}}}, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	uk := r.obj()
	require.Equal(t, []any{map[string]any{"name": "eu-main", "weight": float64(1)}, map[string]any{"name": "backup", "weight": float64(1)}}, uk["connectors"])
	r = e.do("POST", "/admin/v1/routes", map[string]any{"position": 100, "connectors": []any{map[string]any{"name": "backup"}}}, admin())
	require.Equal(t, http.StatusCreated, r.Code)
	rest := r.obj()
	require.Equal(t, "failover", rest["strategy"], "the default strategy")
	require.Equal(t, []any{}, rest["prefixes"])
	routes := e.do("GET", "/admin/v1/routes", nil, admin()).obj()["routes"].([]any)
	require.Equal(t, []any{uk["id"], rest["id"]}, []any{routes[0].(map[string]any)["id"], routes[1].(map[string]any)["id"]})
	r = e.do("PUT", fmt.Sprintf("/admin/v1/routes/%v", uk["id"]), map[string]any{"position": 200, "strategy": "weighted",
		"connectors": []any{map[string]any{"name": "eu-main", "weight": 3}, map[string]any{"name": "backup", "weight": 1}}}, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	routes = e.do("GET", "/admin/v1/routes", nil, admin()).obj()["routes"].([]any)
	require.Equal(t, rest["id"], routes[0].(map[string]any)["id"], "moved after the other")

	requireError(t, e.do("DELETE", "/admin/v1/smpp-connectors/eu-main", nil, admin()), http.StatusConflict, "Conflict", "")
	require.Equal(t, http.StatusNoContent, e.do("DELETE", fmt.Sprintf("/admin/v1/routes/%v", uk["id"]), nil, admin()).Code)
	requireError(t, e.do("DELETE", fmt.Sprintf("/admin/v1/routes/%v", uk["id"]), nil, admin()), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("DELETE", "/admin/v1/routes/x", nil, admin()), http.StatusBadRequest, "Bad Request", "id")
	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/admin/v1/smpp-connectors/eu-main", nil, admin()).Code)
	requireError(t, e.do("GET", "/admin/v1/smpp-connectors", nil), http.StatusUnauthorized, "Unauthorized", "")
}
