package infobip_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/transport/infobip"
)

// TestSendCarriesTraceparent: a send made inside a sampled span carries
// its W3C trace context to Infobip; one made outside a span carries none.
func TestSendCarriesTraceparent(t *testing.T) {
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == infobip.SendPath {
			got <- r.Header.Get("traceparent")
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(golden(t, "answer_accepted.json"))
	}))
	defer srv.Close()
	a := newAdapter(t, srv.URL, newReporter())
	tid, err := trace.TraceIDFromHex("5e1f0c2a9b7d4e3f8a6b1c2d3e4f5a6b")
	require.NoError(t, err)
	sid, err := trace.SpanIDFromHex("1a2b3c4d5e6f7081")
	require.NoError(t, err)
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))

	m := goldenSends()[0].m
	_, err = a.SendChat(ctx, m)
	require.NoError(t, err)
	require.Equal(t, "00-5e1f0c2a9b7d4e3f8a6b1c2d3e4f5a6b-1a2b3c4d5e6f7081-01", <-got)
	_, err = a.SendChat(context.Background(), m)
	require.NoError(t, err)
	require.Empty(t, <-got, "a send outside a span carries no traceparent")
}
