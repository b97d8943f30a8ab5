package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/transport/smscsim"
)

// logLine is the part of a JSON log line the test reads.
type logLine struct {
	Msg     string `json:"msg"`
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

// logLines reads the JSON log lines of out.
func logLines(t *testing.T, out string) []logLine {
	t.Helper()
	var lines []logLine
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var l logLine
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		lines = append(lines, l)
	}
	return lines
}

// testTraceLogs runs herald serve with console traces against an SMSC
// answering every submit_sm ESME_RSYSERR, an Infobip endpoint answering
// 401 and a webhook endpoint answering 410 Gone. The lines logged on
// those failures carry the trace and span ids of the span they happened
// in: the SMS's send, the chat message's send, the webhook attempt.
func testTraceLogs(t *testing.T, bin string) {
	smsc := smscsim.New(smscsim.Config{Faults: smscsim.Faults{Status: 0x08}}) // ESME_RSYSERR: transient
	require.NoError(t, smsc.Start("127.0.0.1:0"))
	defer smsc.Close()
	infobip := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"requestError":{"serviceException":{"messageId":"UNAUTHORIZED","text":"Invalid login details"}}}`))
	}))
	defer infobip.Close()
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone)
	}))
	defer hooks.Close()

	h := startHerald(t, bin, heraldEnv("HERALD_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "herald.db"),
		"HERALD_ADMIN_TOKEN=admin-secret", "OTEL_TRACES_EXPORTER=console", "HERALD_WEBHOOK_ALLOW=loopback",
		"HERALD_SMPP_ADDR="+smsc.Addr(), "HERALD_LOG_LEVEL=debug"), "serve")
	c := h.client("")
	co := provision(t, c, "admin-secret")
	api := h.client(co.key)
	admin := map[string]string{"Authorization": "Bearer admin-secret"}
	var svc struct{ ID int64 }
	c.call("POST", "/admin/v1/companies/"+co.id+"/chat-services", admin, fmt.Sprintf(
		`{"brandName":"Acme","providerServiceId":"Acme","provider":"infobip","channel":"viber","baseUrl":%q,`+
			`"credentials":{"apiKey":"wrong","callbackUsername":"u","callbackPassword":"p"}}`, infobip.URL), http.StatusCreated, &svc)
	api.api("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.status"]}`, hooks.URL+"/events"), http.StatusCreated, nil)

	// Three failed sends through the connector leave it out of its routes
	// for a while (a warning).
	api.api("POST", "/sms/send", fmt.Sprintf(`{"messageContent":"Traced","smsSenderId":%d,"recipients":[`+
		`{"phoneNumber":"+447700900601"},{"phoneNumber":"+447700900602"},{"phoneNumber":"+447700900603"}]}`, co.senderID),
		http.StatusAccepted, nil)
	api.api("POST", "/chat/send-text", fmt.Sprintf(`{"messageContent":"Traced","chatServiceId":%d,"recipients":[{"phoneNumber":"+447933000031"}]}`,
		svc.ID), http.StatusAccepted, nil)
	const (
		smppWarning    = "SMPP connector left out of its routes for a while"
		smppDebug      = "send failed; retrying later"
		chatWarning    = "infobip refused the service's requests"
		webhookWarning = "webhooks: endpoint answered 410 Gone; disabled"
	)
	require.Eventually(t, func() bool {
		out := h.stderr.String()
		return strings.Contains(out, smppWarning) && strings.Contains(out, chatWarning) && strings.Contains(out, webhookWarning)
	}, 30*time.Second, 100*time.Millisecond)
	h.stop() // flushes the spans

	spans := map[string]consoleSpan{} // by span id
	for _, s := range consoleSpans(t, h.stdout.String()) {
		spans[s.SpanContext.SpanID] = s
	}
	// inSpan checks that the lines logged as msg carry the ids of a span
	// whose name begins with name.
	inSpan := func(msg, name string) {
		t.Helper()
		n := 0
		for _, l := range logLines(t, h.stderr.String()) {
			if l.Msg != msg {
				continue
			}
			n++
			s, ok := spans[l.SpanID]
			if assert.True(t, ok, "%q carries the span id of a span: %+v", msg, l) {
				assert.True(t, strings.HasPrefix(s.Name, name), "%q is logged in %s, not in %s", msg, s.Name, name)
				assert.Equal(t, s.SpanContext.TraceID, l.TraceID, msg)
			}
		}
		assert.Positive(t, n, "%q was logged", msg)
	}
	inSpan(smppWarning, "delivery.send Smpp")
	inSpan(smppDebug, "delivery.send ")
	inSpan(chatWarning, "delivery.send Chat")
	inSpan(webhookWarning, "webhook.deliver")
}
