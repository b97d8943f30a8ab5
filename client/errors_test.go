package client_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
)

// TestErrorFromAnswer: an API error body gives its name, message, fields,
// capacity and wait; any other body the HTTP phrase and its start.
func TestErrorFromAnswer(t *testing.T) {
	h := http.Header{"Retry-After": {"7"}, "X-Request-Id": {"req-1"}}
	e := client.ErrorFromAnswer("POST", "/api/v1/sms/send", http.StatusTooManyRequests, h,
		[]byte(`{"error":"Too many pending messages","message":"wait","currentPending":10,"maxAllowed":10,"heldBy":{"Ready":10}}`))
	require.Equal(t, http.StatusTooManyRequests, e.StatusCode)
	require.Equal(t, "Too many pending messages", e.Name)
	require.Equal(t, "wait", e.Message)
	require.Equal(t, 7*time.Second, e.RetryAfter)
	require.Equal(t, "req-1", e.RequestID)
	require.NotNil(t, e.Capacity)
	require.Equal(t, map[string]int{"Ready": 10}, e.Capacity.HeldBy)
	require.True(t, client.IsRateLimited(e))
	require.Equal(t, "herald: POST /api/v1/sms/send: 429 Too many pending messages: wait", e.Error())

	e = client.ErrorFromAnswer("GET", "/api/v1/messages", http.StatusBadRequest, http.Header{},
		[]byte(`{"error":"Bad Request","message":"page must be positive","validationErrors":{"page":"page must be positive"}}`))
	require.Equal(t, map[string]string{"page": "page must be positive"}, e.ValidationErrors)
	require.Zero(t, e.RetryAfter)
	require.Nil(t, e.Capacity)

	e = client.ErrorFromAnswer("GET", "/api/v1/campaigns", http.StatusBadGateway, http.Header{}, []byte("<html>"+strings.Repeat("x", 500)+"</html>"))
	require.Equal(t, "Bad Gateway", e.Name)
	require.True(t, strings.HasPrefix(e.Message, "<html>xxx"))
	require.True(t, strings.HasSuffix(e.Message, "..."), "a long page is cut")
}
