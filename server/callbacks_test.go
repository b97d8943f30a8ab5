package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/server"
)

// The chat callbacks are mounted without an API key at /callbacks/chat
// and /callbacks/chat/{chatServiceId}, the handler seeing the whole path;
// other paths under /callbacks are not theirs.
func TestChatCallbacksMount(t *testing.T) {
	var paths []string
	cb := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.WriteHeader(http.StatusNoContent)
	})
	e := newEnv(t, func(c *envConfig) {
		c.tune = func(sc *server.Config) { sc.ChatCallbacks = cb }
	})
	for _, p := range []string{"/callbacks/chat", "/callbacks/chat/42"} {
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, p, strings.NewReader(`{}`)))
		require.Equal(t, http.StatusNoContent, rec.Code, p)
	}
	require.Equal(t, []string{"/callbacks/chat", "/callbacks/chat/42"}, paths)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/callbacks/chat/42/x", strings.NewReader(`{}`)))
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Len(t, paths, 2)
}
