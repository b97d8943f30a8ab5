package vonage_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/vonage"
)

// TestSendCarriesTraceparent: a send made inside a sampled span carries
// its W3C trace context to Vonage; one made outside a span carries none.
func TestSendCarriesTraceparent(t *testing.T) {
	_, creds := testKey(t)
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == vonage.MessagesPath {
			got <- r.Header.Get("traceparent")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(accepted))
	}))
	defer srv.Close()
	a := newAdapter(t, chatprovider.ChannelViber, srv.URL, creds, &fakeReporter{}, nil)
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
	m := delivery.ChatSend{MessageID: messaging.MustParseID(testMsgID), ServiceID: 42, To: "447700900000",
		Type: messaging.TypeSimpleText, Text: "Your parcel arrives today."}

	if _, err := a.SendChat(ctx, m); err != nil {
		t.Fatalf("SendChat: %v", err)
	}
	if tp := <-got; tp != "00-5e1f0c2a9b7d4e3f8a6b1c2d3e4f5a6b-1a2b3c4d5e6f7081-01" {
		t.Errorf("traceparent %q, want the span's", tp)
	}
	if _, err := a.SendChat(context.Background(), m); err != nil {
		t.Fatalf("SendChat: %v", err)
	}
	if tp := <-got; tp != "" {
		t.Errorf("a send outside a span carries traceparent %q", tp)
	}
}
