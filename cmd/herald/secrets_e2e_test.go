package main_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testSecrets runs herald serve without a secret key, then with one, then
// rotates the key with herald secrets rotate: without a key a webhook or
// a connector with a password is refused with 503 in the API's error
// format, and the log says why; with a key they are stored; a server
// started without the key of the stored secrets refuses to start, naming
// the key; after the rotation the new key alone is enough.
func testSecrets(t *testing.T, bin, dbURL string) {
	admin := map[string]string{"Authorization": "Bearer admin-secret"}
	base := []string{"HERALD_DATABASE_URL=" + dbURL, "HERALD_ADMIN_TOKEN=admin-secret"}
	h := startHerald(t, bin, heraldEnv(append(base, "HERALD_SECRET_KEY=")...), "serve")
	c := h.client("")
	co := provision(t, c, "admin-secret")
	api := h.client(co.key)
	hookBody := `{"url":"https://hooks.example.com/herald","events":["message.status"]}`

	req, err := http.NewRequest("POST", h.base+"/api/v1/webhooks", strings.NewReader(hookBody))
	require.NoError(t, err)
	req.Header.Set("X-API-Key", co.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Retry-After"), "waiting does not help")
	var refused struct{ Error, Message string }
	api.api("POST", "/webhooks", hookBody, http.StatusServiceUnavailable, &refused)
	require.Equal(t, "Secret key not configured", refused.Error)
	require.Contains(t, refused.Message, "HERALD_SECRET_KEY")
	var listed []map[string]any
	api.api("GET", "/webhooks", "", http.StatusOK, &listed)
	require.Empty(t, listed)
	c.call("POST", "/admin/v1/smpp-connectors", admin, `{"name":"with-password","addr":"127.0.0.1:2775","systemId":"herald","password":"pw"}`,
		http.StatusServiceUnavailable, &refused)
	require.Equal(t, "Secret key not configured", refused.Error)
	c.call("POST", "/admin/v1/smpp-connectors", admin, `{"name":"no-password","addr":"127.0.0.1:2775","systemId":"herald"}`, http.StatusCreated, nil)
	h.stop()
	require.Contains(t, h.stderr.String(), "HERALD_SECRET_KEY is not set")

	// With a key: stored.
	h = startHerald(t, bin, heraldEnv(base...), "serve")
	c, api = h.client(""), h.client(co.key)
	var hook struct{ ID, Secret string }
	api.api("POST", "/webhooks", hookBody, http.StatusCreated, &hook)
	require.NotEmpty(t, hook.Secret)
	c.call("POST", "/admin/v1/smpp-connectors", admin, `{"name":"with-password","addr":"127.0.0.1:2775","systemId":"herald","password":"pw"}`, http.StatusCreated, nil)
	h.stop()

	// Without the key, the stored secrets could not be used: no start.
	out := runHerald(t, bin, heraldEnv(append(base, "HERALD_SECRET_KEY=")...), 1, "serve")
	require.Contains(t, out, "holds encrypted secrets")

	// Rotation to a new key, the old one given as previous.
	newKey := strings.TrimSpace(runHerald(t, bin, heraldEnv(), 0, "secrets", "new-key"))
	require.Regexp(t, regexp.MustCompile(`^[A-Za-z0-9+/]{43}=$`), newKey)
	out = runHerald(t, bin, heraldEnv(append(base, "HERALD_SECRET_KEY="+newKey, "HERALD_SECRET_KEY_PREVIOUS="+testSecretKey)...), 0, "secrets", "rotate")
	require.Contains(t, out, "encrypted 2 stored secrets again")
	out = runHerald(t, bin, heraldEnv(append(base, "HERALD_SECRET_KEY="+newKey)...), 0, "secrets", "rotate")
	require.Contains(t, out, "encrypted 0 stored secrets again; all 2 are under key")

	h = startHerald(t, bin, heraldEnv(append(base, "HERALD_SECRET_KEY="+newKey)...), "serve")
	var conn struct{ PasswordSet bool }
	h.client("").call("GET", "/admin/v1/smpp-connectors/with-password", admin, "", http.StatusOK, &conn)
	require.True(t, conn.PasswordSet)
	api = h.client(co.key)
	var rotated struct{ Secret string }
	api.api("POST", "/webhooks/"+hook.ID+"/rotate-secret", "", http.StatusOK, &rotated)
	require.NotEqual(t, hook.Secret, rotated.Secret)
	h.stop()
}

// runHerald runs bin with args to its end and returns its output, having
// checked its exit code.
func runHerald(t *testing.T, bin string, env []string, wantCode int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	require.Equal(t, wantCode, code, fmt.Sprintf("herald %s: %s", strings.Join(args, " "), out))
	return string(out)
}
