package metawhatsapp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestSendCarriesTraceparent: a send made inside a sampled span carries
// its W3C trace context to the Graph API; one made outside a span carries
// none.
func TestSendCarriesTraceparent(t *testing.T) {
	got := make(chan string, 2)
	accepted := readFile(t, "answer/accepted.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(accepted))
	}))
	defer srv.Close()
	a := newTestAdapter(t, srv.URL+"/v23.0", &fakeReporter{})
	tid, err := trace.TraceIDFromHex("5e1f0c2a9b7d4e3f8a6b1c2d3e4f5a6b")
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex("1a2b3c4d5e6f7081")
	if err != nil {
		t.Fatal(err)
	}
	ctx := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))

	if _, err := a.SendChat(ctx, textMessage("447700900123")); err != nil {
		t.Fatalf("SendChat: %v", err)
	}
	if tp := <-got; tp != "00-5e1f0c2a9b7d4e3f8a6b1c2d3e4f5a6b-1a2b3c4d5e6f7081-01" {
		t.Errorf("traceparent %q, want the span's", tp)
	}
	if _, err := a.SendChat(context.Background(), textMessage("447700900123")); err != nil {
		t.Fatalf("SendChat: %v", err)
	}
	if tp := <-got; tp != "" {
		t.Errorf("a send outside a span carries traceparent %q", tp)
	}
}
