package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
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

// testTracing runs the demo with console traces: one direct SMS yields
// one trace holding its API request, its send, its submit_sm and its
// receipt, the receipt linked to the submit.
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

	var spans []consoleSpan
	for line := range strings.SplitSeq(h.stdout.String(), "\n") {
		if !strings.HasPrefix(line, `{"Name"`) {
			continue
		}
		var s consoleSpan
		require.NoError(t, json.Unmarshal([]byte(line), &s), line)
		spans = append(spans, s)
	}
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
