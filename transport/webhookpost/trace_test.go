package webhookpost_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/transport/webhookpost"
	"github.com/heraldhq/herald/webhook"
)

// TestPostCarriesTraceparent: a request posted inside a sampled span (a
// traced attempt) carries its W3C trace context; one outside a span
// carries none.
func TestPostCarriesTraceparent(t *testing.T) {
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
	}))
	defer srv.Close()
	p := webhookpost.New(webhookpost.Config{URLs: webhook.URLPolicy{AllowLoopbackHTTP: true}})
	defer p.Close()
	tid, err := trace.TraceIDFromHex("5e1f0c2a9b7d4e3f8a6b1c2d3e4f5a6b")
	require.NoError(t, err)
	sid, err := trace.SpanIDFromHex("1a2b3c4d5e6f7081")
	require.NoError(t, err)
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))

	_, err = p.Post(ctx, srv.URL+"/hook", nil, []byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, "00-5e1f0c2a9b7d4e3f8a6b1c2d3e4f5a6b-1a2b3c4d5e6f7081-01", <-got)
	_, err = p.Post(context.Background(), srv.URL+"/hook", nil, []byte(`{}`))
	require.NoError(t, err)
	require.Empty(t, <-got, "a request outside a span carries no traceparent")
}
