package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// consoleSpan is the part of a span of OTEL_TRACES_EXPORTER=console the
// test reads.
type consoleSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
	Links []struct {
		SpanContext struct{ TraceID, SpanID string }
	}
}

// attr returns the value of attribute key, as text.
func (s consoleSpan) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			if v, ok := a.Value.Value.(string); ok {
				return v
			}
		}
	}
	return ""
}

// consoleSpans reads the spans of OTEL_TRACES_EXPORTER=console from out.
func consoleSpans(t *testing.T, out string) []consoleSpan {
	t.Helper()
	var spans []consoleSpan
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.HasPrefix(line, `{"Name"`) {
			continue
		}
		var s consoleSpan
		require.NoError(t, json.Unmarshal([]byte(line), &s), line)
		spans = append(spans, s)
	}
	return spans
}

// testTracing runs the demo with console traces: one direct SMS yields
// one trace holding its API request, its campaign's preparation, its
// send, its submit_sm and its receipt, the receipt linked to the submit.
func testTracing(t *testing.T, bin, dbURL string) {
	h := startHerald(t, bin, heraldEnv("HERALD_DATABASE_URL="+dbURL, "HERALD_ADMIN_TOKEN=admin-secret",
		"OTEL_TRACES_EXPORTER=console"), "serve", "--demo")
	api := h.client(h.key)
	var sent sendJSON
	api.api("POST", "/sms/send", `{"messageContent":"Traced","smsSenderId":1,"recipients":[{"phoneNumber":"+447700900555"}]}`,
		http.StatusAccepted, &sent)
	require.Eventually(t, func() bool {
		ms := api.messages("447700900555")
		return len(ms) == 1 && ms[0].Status == "Delivered"
	}, 20*time.Second, 100*time.Millisecond)
	h.stop() // flushes the spans

	spans := consoleSpans(t, h.stdout.String())
	var request *consoleSpan
	for i, s := range spans {
		if s.Name == "POST /api/v1/sms/send" {
			require.Nil(t, request, "one request span")
			request = &spans[i]
		}
	}
	require.NotNil(t, request, "the request's span: %v", spans)
	require.Equal(t, "/api/v1/sms/send", request.attr("http.route"))
	byName := map[string]consoleSpan{}
	for _, s := range spans {
		if s.SpanContext.TraceID == request.SpanContext.TraceID {
			byName[s.Name] = s
		}
	}
	prepare, ok := byName["campaign.prepare"]
	require.True(t, ok, "the preparation joins the request's trace: %v", spans)
	require.Equal(t, request.SpanContext.SpanID, prepare.Parent.SpanID)
	require.Equal(t, sent.CampaignID, prepare.attr("herald.campaign_id"))
	send, ok := byName["delivery.send Smpp"]
	require.True(t, ok, "the send joins the request's trace: %v", spans)
	require.Equal(t, request.SpanContext.SpanID, send.Parent.SpanID)
	require.Equal(t, sent.CampaignID, send.attr("herald.campaign_id"))
	submit, ok := byName["smpp submit_sm"]
	require.True(t, ok, "the submit_sm joins the request's trace")
	require.Equal(t, send.SpanContext.SpanID, submit.Parent.SpanID)
	require.Equal(t, "default", submit.attr("smpp.connector"), "the demo's connector")
	receipt, ok := byName["smpp deliver_sm receipt"]
	require.True(t, ok, "the receipt joins the request's trace")
	require.Equal(t, "DELIVRD", receipt.attr("smpp.state"))
	require.Len(t, receipt.Links, 1)
	require.Equal(t, submit.SpanContext.SpanID, receipt.Links[0].SpanContext.SpanID)
}

// testTracingChat runs herald serve with console traces against herald
// simulate chat: one direct chat message yields one trace holding its API
// request, its send and its status events (Delivered, Seen), each a child
// of the send and linked to its callback's request. The simulator sees
// the send's traceparent, and a webhook receiver each attempt's.
func testTracingChat(t *testing.T, bin string) {
	addr := freeAddr(t) // the chat simulator needs the server's callback URL before it starts
	chat := startProcess(t, bin, heraldEnv(), chatLine, "simulate", "chat", "-addr", "127.0.0.1:0", "-token", "chat-token",
		"-callback-url", "http://"+addr+"/callbacks/chat", "-callback-secret", "shared-secret", "-delivered-delay", "10ms")
	h := startHerald(t, bin, heraldEnv("HERALD_ADDR="+addr, "HERALD_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "herald.db"),
		"HERALD_ADMIN_TOKEN=admin-secret", "OTEL_TRACES_EXPORTER=console", "HERALD_WEBHOOK_ALLOW=loopback",
		"HERALD_CHAT_URL="+chat.ready[1], "HERALD_CHAT_TOKEN=chat-token", "HERALD_CHAT_CALLBACK_SECRET=shared-secret"), "serve")
	co := provision(t, h.client(""), "admin-secret")
	api := h.client(co.key)
	var (
		mu       sync.Mutex
		received []string // the traceparent of each webhook request
	)
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.Header.Get("traceparent"))
		mu.Unlock()
	}))
	defer hooks.Close()
	api.api("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.status"]}`, hooks.URL+"/events"), http.StatusCreated, nil)
	var services []struct{ ID int64 }
	api.api("GET", "/chat-services", "", http.StatusOK, &services)
	require.Len(t, services, 1)
	var sent sendJSON
	api.api("POST", "/chat/send-text", fmt.Sprintf(`{"messageContent":"Traced","chatServiceId":%d,"recipients":[{"phoneNumber":"+447933000021"}]}`,
		services[0].ID), http.StatusAccepted, &sent)
	require.Eventually(t, func() bool {
		ms := api.messages("447933000021")
		return len(ms) == 1 && ms[0].Status == "Seen"
	}, 20*time.Second, 100*time.Millisecond)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(received) >= 3 // Sent, Delivered, Seen
	}, 20*time.Second, 100*time.Millisecond)
	h.stop() // flushes the spans
	chat.stop()

	spans := consoleSpans(t, h.stdout.String())
	var request *consoleSpan
	for i, s := range spans {
		if s.Name == "POST /api/v1/chat/send-text" {
			require.Nil(t, request, "one request span")
			request = &spans[i]
		}
	}
	require.NotNil(t, request, "the request's span: %v", spans)
	inTrace := map[string]consoleSpan{}
	callbacks := map[string]bool{}
	for _, s := range spans {
		if s.SpanContext.TraceID == request.SpanContext.TraceID {
			inTrace[s.Name] = s
		}
		if s.Name == "POST /callbacks/chat" {
			callbacks[s.SpanContext.SpanID] = true
		}
	}
	send, ok := inTrace["delivery.send Chat"]
	require.True(t, ok, "the send joins the request's trace: %v", spans)
	require.Equal(t, request.SpanContext.SpanID, send.Parent.SpanID)
	require.Equal(t, sent.CampaignID, send.attr("herald.campaign_id"))
	messageID := send.attr("herald.message_id")
	require.NotEmpty(t, messageID)
	for _, status := range []string{"Delivered", "Seen"} {
		ev, ok := inTrace["delivery.chat_status "+status]
		require.True(t, ok, "the %s event joins the send's trace: %v", status, spans)
		require.Equal(t, send.SpanContext.SpanID, ev.Parent.SpanID, status)
		require.Equal(t, messageID, ev.attr("herald.message_id"), status)
		require.Equal(t, "stored", ev.attr("herald.outcome"), status)
		require.Len(t, ev.Links, 1, status)
		require.True(t, callbacks[ev.Links[0].SpanContext.SpanID], "%s links to its callback's request", status)
	}
	attempts := map[string]bool{}
	for _, s := range spans {
		if s.Name == "webhook.deliver" {
			attempts["00-"+s.SpanContext.TraceID+"-"+s.SpanContext.SpanID+"-01"] = true
		}
	}
	mu.Lock()
	for _, tp := range received {
		require.True(t, attempts[tp], "the webhook request's traceparent %q is its attempt's span: %v", tp, attempts)
	}
	mu.Unlock()
	require.Contains(t, chat.stderr.String()+chat.stdout.String(),
		"traceparent=00-"+request.SpanContext.TraceID+"-"+send.SpanContext.SpanID+"-01",
		"the provider's request carries the send's trace context")
}
