package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heraldhq/herald/server"
)

// TestRequestSpans: with a Tracer, every routed request, of the API and of
// the admin API alike, is a server span named by its route's template,
// with its status code; a request carrying traceparent continues the
// caller's trace.
func TestRequestSpans(t *testing.T) {
	before := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{}) // as herald serve installs it
	defer otel.SetTextMapPropagator(before)
	rec := tracetest.NewSpanRecorder()
	e := newEnv(t, func(c *envConfig) {
		c.tune = func(cfg *server.Config) { cfg.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)) }
	})
	require.Equal(t, http.StatusOK, e.do("GET", "/api/v1/campaigns", nil).Code)
	require.Equal(t, http.StatusNotFound, e.do("GET", "/api/v1/campaigns/0191f6a4-6f6e-7a33-9c2b-3f7a1e2d4c5b", nil).Code)
	require.Equal(t, http.StatusOK, e.do("GET", "/admin/v1/companies", nil, admin()).Code)
	const caller = "00-5e1f0c2a9b7d4e3f8a6b1c2d3e4f5a6b-1a2b3c4d5e6f7081-01"
	require.Equal(t, http.StatusOK, e.do("GET", "/api/v1/sms-senders", nil, withHeader("traceparent", caller)).Code)

	type got struct {
		route  string
		status int64
	}
	byName := map[string]got{}
	for _, s := range rec.Ended() {
		g := got{}
		for _, a := range s.Attributes() {
			switch a.Key {
			case attribute.Key("http.route"):
				g.route = a.Value.AsString()
			case attribute.Key("http.response.status_code"):
				g.status = a.Value.AsInt64()
			}
		}
		byName[s.Name()] = g
		if s.Name() == "GET /api/v1/sms-senders" {
			require.Equal(t, "5e1f0c2a9b7d4e3f8a6b1c2d3e4f5a6b", s.SpanContext().TraceID().String(), "the caller's trace")
			require.Equal(t, "1a2b3c4d5e6f7081", s.Parent().SpanID().String(), "a child of the caller's span")
		} else {
			require.False(t, s.Parent().IsValid(), "%s: a trace of its own", s.Name())
		}
	}
	require.Equal(t, map[string]got{
		"GET /api/v1/campaigns":      {"/api/v1/campaigns", http.StatusOK},
		"GET /api/v1/campaigns/{id}": {"/api/v1/campaigns/{id}", http.StatusNotFound},
		"GET /admin/v1/companies":    {"/admin/v1/companies", http.StatusOK},
		"GET /api/v1/sms-senders":    {"/api/v1/sms-senders", http.StatusOK},
	}, byName)
}
