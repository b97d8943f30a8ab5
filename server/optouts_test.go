package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOptOutList(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "+447700900001"})
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	require.Equal(t, "All", r.obj()["channel"])
	require.Equal(t, "api", r.obj()["source"])
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "447700900001"}).Code, "already")
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "447700900002", "channel": "Chat"}).Code)
	requireError(t, e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "12", "channel": "Fax"}), http.StatusBadRequest, "Bad Request", "channel")

	// an SMS with STOP opts its sender out too
	e.inboundSMS(t, "447700900003", "ACME", "stop")
	page := e.do("GET", "/api/v1/opt-outs", nil).obj()
	require.EqualValues(t, 3, page["totalCount"])
	first := page["optOuts"].([]any)[0].(map[string]any)
	require.Equal(t, "447700900003", first["phoneNumber"])
	require.Equal(t, "keyword", first["source"])

	other := e.newCompany(t, "Other")
	require.EqualValues(t, 0, e.do("GET", "/api/v1/opt-outs", nil, withKey(other.key)).obj()["totalCount"])
	requireError(t, e.do("DELETE", "/api/v1/opt-outs/447700900001", nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")

	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/opt-outs/447700900001", nil).Code)
	requireError(t, e.do("DELETE", "/api/v1/opt-outs/447700900001", nil), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("DELETE", "/api/v1/opt-outs/447700900002", nil), http.StatusNotFound, "Not Found", "")
	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/opt-outs/447700900002?channel=Chat", nil).Code)
	requireError(t, e.do("DELETE", "/api/v1/opt-outs/abc", nil), http.StatusBadRequest, "Bad Request", "phoneNumber")
}
