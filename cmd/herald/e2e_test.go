package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// TestBinary builds the herald binary once and runs it as an operator
// would: a plain server provisioned through the admin API, then the demo
// with its simulators, stopped and started again on the same database.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "herald")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	t.Run("bad configuration", func(t *testing.T) {
		cmd := exec.Command(bin, "serve")
		cmd.Env = heraldEnv("HERALD_MAX_PENDING=lots", "HERALD_LOG_FORMAT=xml")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, 1, exit.ExitCode())
		require.Contains(t, string(out), `HERALD_MAX_PENDING="lots": want a positive integer`)
		require.Contains(t, string(out), `HERALD_LOG_FORMAT="xml": want text or json`)
	})
	for _, db := range []struct {
		name string
		url  func(t testing.TB) string
	}{
		{"sqlite", func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "herald.db") }},
		{"postgres", pgtest.SchemaURL},
	} {
		t.Run(db.name, func(t *testing.T) {
			t.Run("serve", func(t *testing.T) { testServe(t, bin, db.url(t)) })
			t.Run("demo", func(t *testing.T) { testDemo(t, bin, db.url(t)) })
			t.Run("webhooks", func(t *testing.T) { testWebhooks(t, bin, db.url(t)) })
			t.Run("secrets", func(t *testing.T) { testSecrets(t, bin, db.url(t)) })
			t.Run("control", func(t *testing.T) { testControl(t, bin, db.url(t)) })
			t.Run("pause-kill", func(t *testing.T) { testPauseThenKill(t, bin, db.url(t)) })
			t.Run("capped-bulk-pause", func(t *testing.T) { testCappedBulkAndPause(t, bin, db.url(t)) })
		})
	}
	t.Run("simulators", func(t *testing.T) { testSimulators(t, bin) })
	t.Run("tracing", func(t *testing.T) { testTracing(t, bin, "sqlite://"+filepath.Join(t.TempDir(), "herald.db")) })
	t.Run("tracing-chat", func(t *testing.T) { testTracingChat(t, bin) })
	t.Run("trace-logs", func(t *testing.T) { testTraceLogs(t, bin) })
	t.Run("readme", func(t *testing.T) { testReadme(t, bin) })
}

// testServe runs herald serve without transports: a company provisioned
// through the admin API prepares and starts a bulk SMS campaign, whose
// messages wait for an SMSC.
func testServe(t *testing.T, bin, dbURL string) {
	h := startHerald(t, bin, heraldEnv("HERALD_DATABASE_URL="+dbURL, "HERALD_ADMIN_TOKEN=admin-secret"), "serve")
	c := h.client("")

	c.call("GET", "/healthz", nil, "", http.StatusOK, nil)
	var readiness readyAnswer
	c.call("GET", "/readyz", nil, "", http.StatusOK, &readiness)
	require.Equal(t, readyAnswer{Status: "ok", Checks: []readyCheck{{Name: "database", Status: "ok", Required: true}}}, readiness,
		"no transport configured: the database is the only check")
	c.call("POST", "/admin/v1/companies", nil, `{"name":"Acme"}`, http.StatusUnauthorized, nil)

	co := provision(t, c, "admin-secret")
	api := h.client(co.key)

	var tpl struct{ ID string }
	api.api("POST", "/templates/sms", fmt.Sprintf(`{"name":"promo","templateContent":"Hi {{name}}","smsSenderId":%d}`, co.senderID), http.StatusCreated, &tpl)
	phones := numbers(300, 0)
	sent := api.bulk("/sms/promotional", tpl.ID, append(phones, "12-34"), "")
	require.Equal(t, 300, sent.MessageCount)
	require.Equal(t, []string{"12-34"}, sent.InvalidPhoneNumbers)
	require.Equal(t, "Queuing", sent.Status)

	ready := api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status != "Queuing" })
	require.Equal(t, "Ready", ready.Status)
	require.Equal(t, 300, ready.TotalMessages)
	require.Equal(t, 300, ready.PendingCount)

	var started struct{ Status string }
	api.api("POST", "/campaigns/"+sent.CampaignID+"/start", "", http.StatusOK, &started)
	require.Equal(t, "InProgress", started.Status)
	c.call("POST", "/api/v1/campaigns/"+sent.CampaignID+"/start", map[string]string{"X-API-Key": co.key}, "", http.StatusBadRequest, nil)
	got := api.campaign(sent.CampaignID)
	require.Equal(t, "InProgress", got.Status)
	require.Equal(t, 300, got.PendingCount, "without an SMSC no message is sent")

	metrics := h.metrics()
	require.Contains(t, metrics, `herald_http_requests_total{code="202",handler="api",method="post"} 1`)
	require.Contains(t, metrics, `herald_http_requests_total{code="401",handler="admin",method="post"} 1`)
	require.Contains(t, metrics, "go_goroutines ")
	require.Contains(t, metrics, "process_resident_memory_bytes ")

	h.stop()
	require.Contains(t, h.stderr.String(), `"msg":"stopped"`)
}

// testDemo runs herald serve --demo: bulk SMS, bulk chat surveys with the
// SMS fallback and a direct SMS reach the simulators, and every message
// ends as the simulator's outcome for its number says. A restart on the
// same database finds the demo company again and fails the bulk
// preparation a crash left Queuing.
func testDemo(t *testing.T, bin, dbURL string) {
	env := heraldEnv("HERALD_DATABASE_URL="+dbURL, "HERALD_ADMIN_TOKEN=admin-secret")
	h := startHerald(t, bin, env, "serve", "--demo")
	require.Contains(t, h.stdout.String(), "admin token          (HERALD_ADMIN_TOKEN)")
	require.Contains(t, h.stdout.String(), "console              "+h.base+"/console/")
	require.NotContains(t, h.stdout.String(), "admin-secret")
	api := h.client(h.key)
	var ready readyAnswer
	h.client("").call("GET", "/readyz", nil, "", http.StatusOK, &ready)
	require.Equal(t, readyAnswer{Status: "ok", Checks: []readyCheck{
		{Name: "database", Status: "ok", Required: true}, {Name: "smsc", Status: "ok"}, {Name: "chat", Status: "ok"}}}, ready)

	var senders []struct {
		ID       int64
		SenderID string
	}
	api.api("GET", "/sms-senders", "", http.StatusOK, &senders)
	require.Len(t, senders, 1)
	require.Equal(t, "Herald", senders[0].SenderID)
	var services []struct {
		ID        int64
		BrandName string
	}
	api.api("GET", "/chat-services", "", http.StatusOK, &services)
	require.Len(t, services, 4, "the herald service, and one per provider simulator")
	slices.SortFunc(services, func(a, b struct {
		ID        int64
		BrandName string
	}) int {
		return strings.Compare(a.BrandName, b.BrandName)
	})
	require.Equal(t, "Herald Demo", services[0].BrandName)

	// Bulk SMS to 300 numbers: endings 0000 to 0011, 25 of each.
	var sms struct{ ID string }
	api.api("POST", "/templates/sms", fmt.Sprintf(`{"name":"promo","templateContent":"Hi {{name}}","smsSenderId":%d}`, senders[0].ID), http.StatusCreated, &sms)
	phones := numbers(300, 0)
	sent := api.bulk("/sms/promotional", sms.ID, phones, "bulk-sms")
	api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Ready" })
	api.api("POST", "/campaigns/"+sent.CampaignID+"/start", "", http.StatusOK, nil)
	done := api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool {
		return c.Status == "Completed" && c.DeliveredCount+c.FailedCount == 300
	})
	require.Equal(t, 75, done.FailedCount)
	require.Equal(t, 225, done.DeliveredCount)
	byPhone := map[string]messageJSON{}
	for _, m := range api.messagesOf("bulk-sms") {
		require.NotContains(t, byPhone, m.PhoneNumber)
		byPhone[m.PhoneNumber] = m
	}
	require.Len(t, byPhone, len(phones))
	for _, p := range phones {
		m := byPhone[p]
		require.Equal(t, "Smpp", m.ChannelType, p)
		require.Equal(t, "Hi friend", m.MessageContent, p)
		status, details, code := smsOutcome(p)
		require.Equal(t, status, m.Status, p)
		require.Equal(t, details, deref(m.Details), p)
		require.Equal(t, code, deref(m.SMSErrorCode), p)
		require.NotNil(t, m.SentAt, p)
	}

	// Bulk chat survey with SMS fallback to 24 numbers: endings 0000 to
	// 0011, two of each.
	var survey struct{ ID string }
	api.api("POST", "/templates/chat", fmt.Sprintf(`{"name":"poll","messageType":6,"templateContent":"How did we do, {{name}}?","chatServiceId":%d,
		"typeSpecificConfig":{"options":[{"optionText":"Great","optionValue":"great"},{"optionText":"OK","optionValue":"ok"},{"optionText":"Bad","optionValue":"bad"}]},
		"smsFallbackEnabled":true,"smsFallbackTemplateContent":"How did we do, {{name}}? Reply 1, 2 or 3","smsFallbackSenderId":%d}`,
		services[0].ID, senders[0].ID), http.StatusCreated, &survey)
	chatPhones := numbers(24, 1)
	chatSent := api.bulk("/chat/send", survey.ID, chatPhones, "")
	api.waitCampaign(chatSent.CampaignID, func(c campaignJSON) bool { return c.Status == "Ready" })
	api.api("POST", "/campaigns/"+chatSent.CampaignID+"/start", "", http.StatusOK, nil)
	chatDone := api.waitCampaign(chatSent.CampaignID, func(c campaignJSON) bool {
		return c.Status == "Completed" && c.SeenCount == 18 && c.SMSFallbackDeliveredCount == 6
	})
	require.Equal(t, "Chat", chatDone.Channel)
	require.Equal(t, 24, chatDone.TotalMessages)
	require.Equal(t, 6, chatDone.FailedCount)
	require.Equal(t, 6, chatDone.SMSFallbackCount)
	require.InDelta(t, 100.0, chatDone.OverallDeliveryRate, 0.001)
	answers := api.waitSurvey(chatSent.CampaignID, 18)
	for _, p := range chatPhones {
		ms := api.messages(p)
		last := p[len(p)-4:]
		if last == "0008" || last == "0009" || last == "0010" {
			require.Len(t, ms, 2, p)
			byChannel := map[string]messageJSON{ms[0].ChannelType: ms[0], ms[1].ChannelType: ms[1]}
			chat, fallback := byChannel["Chat"], byChannel["Smpp"]
			require.Equal(t, "Failed", chat.Status, p)
			require.Contains(t, deref(chat.Details), map[string]string{"0008": "8", "0009": "9", "0010": "10"}[last], p)
			require.Equal(t, "Delivered", fallback.Status, p)
			require.Equal(t, "How did we do, friend? Reply 1, 2 or 3", fallback.MessageContent, p)
			require.NotContains(t, answers, p)
			continue
		}
		require.Len(t, ms, 1, p)
		require.Equal(t, "Seen", ms[0].Status, p)
		require.Equal(t, "How did we do, friend?", ms[0].MessageContent, p)
		require.Contains(t, answers, p)
		require.Equal(t, int(p[len(p)-1]-'0')%3, answers[p].SelectedOptionIndex, p)
	}
	var summary struct {
		TotalResponses  int
		OptionBreakdown []struct {
			OptionText string
			Count      int
		}
	}
	api.api("GET", "/survey-results/"+chatSent.CampaignID+"/summary", "", http.StatusOK, &summary)
	require.Equal(t, 18, summary.TotalResponses)
	require.Len(t, summary.OptionBreakdown, 3)
	require.Equal(t, "Great", summary.OptionBreakdown[0].OptionText)

	// A direct SMS.
	var direct struct {
		CampaignID   string
		MessageCount int
		Status       string
	}
	api.api("POST", "/sms/send", fmt.Sprintf(`{"messageContent":"Your code is 4711","smsSenderId":%d,"recipients":[{"phoneNumber":"+447911000002"},{"phoneNumber":"+447911000005","externalUserId":"u-5"}]}`, senders[0].ID),
		http.StatusAccepted, &direct)
	require.Equal(t, 2, direct.MessageCount)
	require.Equal(t, "Pending", direct.Status)
	api.waitCampaign(direct.CampaignID, func(c campaignJSON) bool { return c.DeliveredCount+c.FailedCount == 2 })
	require.Equal(t, "Failed", api.messages("447911000002")[0].Status)
	require.Equal(t, "EXPIRED", deref(api.messages("447911000002")[0].Details))
	require.Equal(t, "Delivered", api.messages("447911000005")[0].Status)

	metrics := h.metrics()
	failedSMS := 1 // the direct SMS to 447911000002
	for _, p := range phones {
		if status, _, _ := smsOutcome(p); status == "Failed" {
			failedSMS++
		}
	}
	require.Contains(t, metrics, `herald_messages_total{channel="Smpp",status="Sent"} 308`)
	require.Contains(t, metrics, fmt.Sprintf(`herald_messages_total{channel="Smpp",status="Delivered"} %d`, 308-failedSMS),
		"every delivery counted once, those of receipts that came before the Sent was recorded too")
	require.Contains(t, metrics, fmt.Sprintf(`herald_messages_total{channel="Smpp",status="Failed"} %d`, failedSMS))
	require.Contains(t, metrics, `herald_submit_duration_seconds_count{channel="Smpp",result="sent"} 308`)
	require.Contains(t, metrics, fmt.Sprintf(`herald_delivery_latency_seconds_count{channel="Smpp"} %d`, 308-failedSMS),
		"the delivery latency of every delivered SMS, once")
	require.Contains(t, metrics, `herald_delivery_latency_seconds_bucket{channel="Smpp",le="0.05"}`)
	require.Contains(t, metrics, `herald_window_in_use{channel="Smpp"} 0`)
	require.Contains(t, metrics, `herald_queue_depth{queue="results"} 0`)
	require.Contains(t, metrics, `herald_backlog_messages{channel="Smpp"} 0`)
	require.Contains(t, metrics, `herald_backlog_messages{channel="Chat"} 0`)
	require.Contains(t, metrics, "herald_smpp_reconnects_total 0")
	// A chat message's Sent counts as a move only when the send's result
	// is recorded before the provider's delivered callback: a callback that
	// overtakes it moves the message from Sending to Delivered, and the
	// Sent recorded after that is no move. So Sent is at most 18, never
	// more: each message moved once.
	sentChat := regexp.MustCompile(`herald_messages_total\{channel="Chat",status="Sent"\} (\d+)`).FindStringSubmatch(metrics)
	require.NotNil(t, sentChat, "chat Sent moves counted")
	n, err := strconv.Atoi(sentChat[1])
	require.NoError(t, err)
	require.True(t, n > 0 && n <= 18, "chat Sent moves: %d of 18 messages", n)
	require.Contains(t, metrics, `herald_messages_total{channel="Chat",status="Delivered"} 18`, "moves made by callbacks")
	require.Contains(t, metrics, `herald_messages_total{channel="Chat",status="Seen"} 18`)
	require.Contains(t, metrics, `herald_receipts_total{outcome=`)
	require.Contains(t, metrics, `herald_window_size{channel="Smpp"}`)
	require.Contains(t, metrics, "herald_smpp_bound 1")
	require.Contains(t, metrics, `herald_connector_healthy{connector="default"} 1`)
	require.Contains(t, metrics, `herald_connector_binds_up{connector="default"} 1`)
	require.Contains(t, metrics, `herald_connector_healthy{connector="demo-backup"} 1`, "the demo's failover connector")
	routed := 0
	for _, m := range regexp.MustCompile(`herald_route_sms_total\{connector="default",result="sent",route="[^"]+"\} (\d+)`).FindAllStringSubmatch(metrics, -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		routed += n
	}
	require.Equal(t, 308, routed, "every SMS sent counted by route:\n%s", grepLines(metrics, "herald_route_sms_total"))
	require.Contains(t, metrics, `herald_http_requests_total{code="200",handler="callbacks",method="post"}`)
	require.Contains(t, metrics, `herald_chat_callbacks_total{kind="reply",outcome="stored",status=""} 18`)
	require.Contains(t, metrics, `herald_chat_callbacks_total{kind="status",outcome="stored",status="seen"} 18`)

	// Each provider's demo service sends through its simulator: a text to
	// a number on the channel is delivered, one not on it falls back to
	// SMS. WhatsApp takes no free text outside the customer window.
	for i, svc := range services[1:] {
		var sent sendJSON
		ok, off := fmt.Sprintf("+4479%d5000001", i), fmt.Sprintf("+4479%d5000009", i)
		api.api("POST", "/chat/send-text", fmt.Sprintf(`{"messageContent":"Your table is ready","chatServiceId":%d,"smsFallbackText":"Your table is ready (SMS)",
			"smsFallbackSenderId":%d,"recipients":[{"phoneNumber":%q},{"phoneNumber":%q}]}`, svc.ID, senders[0].ID, ok, off), http.StatusAccepted, &sent)
		if strings.Contains(svc.BrandName, "meta-whatsapp") {
			api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.FailedCount == 2 })
			require.Equal(t, "NOT_PERMITTED (13)", deref(api.messages(ok[1:])[0].Details), svc.BrandName)
			continue
		}
		api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool {
			return c.DeliveredCount == 1 && c.SMSFallbackDeliveredCount == 1
		})
		require.Contains(t, deref(api.messages(off[1:])[0].Details)+deref(api.messages(off[1:])[1].Details), "(9)", svc.BrandName)
	}

	// A company of the operator's, whose bulk preparation a crash cut short.
	admin := h.client("")
	co := provision(t, admin, "admin-secret")
	h.stop()
	stale := queuingCampaign(t, dbURL, co.id)

	// The restart finds the demo company again, with a new key.
	h2 := startHerald(t, bin, env, "serve", "--demo")
	require.NotEqual(t, h.key, h2.key)
	h2.client(h.key).call("GET", "/api/v1/sms-senders", map[string]string{"X-API-Key": h.key}, "", http.StatusUnauthorized, nil)
	api = h2.client(h2.key)
	var senders2, services2 []map[string]any
	api.api("GET", "/sms-senders", "", http.StatusOK, &senders2)
	api.api("GET", "/chat-services", "", http.StatusOK, &services2)
	require.Len(t, senders2, 1)
	require.EqualValues(t, senders[0].ID, senders2[0]["id"])
	require.Len(t, services2, 4, "found again, not created twice")
	require.EqualValues(t, services[0].ID, services2[0]["id"])
	require.Equal(t, "Completed", api.campaign(sent.CampaignID).Status)

	failed := h2.client(co.key).campaign(stale.String())
	require.Equal(t, "Failed", failed.Status)
	require.Contains(t, deref(failed.FailureReason), "send the campaign again")
	h2.stop()
}

// testSimulators runs herald simulate smsc and herald simulate chat as
// processes of their own and herald serve configured through the
// environment to use them, as a deployment with a real SMSC and chat
// provider is: direct sends reach them and come back with their outcomes.
func testSimulators(t *testing.T, bin string) {
	smsc := startProcess(t, bin, heraldEnv(), smscLine, "simulate", "smsc", "-addr", "127.0.0.1:0", "-system-id", "acme", "-password", "pw")
	addr := freeAddr(t) // the chat simulator needs the server's callback URL before it starts
	chat := startProcess(t, bin, heraldEnv(), chatLine, "simulate", "chat", "-addr", "127.0.0.1:0", "-token", "chat-token",
		"-callback-url", "http://"+addr+"/callbacks/chat", "-callback-secret", "shared-secret", "-delivered-delay", "10ms")
	h := startHerald(t, bin, heraldEnv("HERALD_ADDR="+addr, "HERALD_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "herald.db"),
		"HERALD_ADMIN_TOKEN=admin-secret",
		"HERALD_SMPP_ADDR="+smsc.ready[1], "HERALD_SMPP_SYSTEM_ID=acme", "HERALD_SMPP_PASSWORD=pw", "HERALD_SMPP_WINDOW=10", "HERALD_SMPP_MAX_RATE=1000",
		"HERALD_CHAT_URL="+chat.ready[1], "HERALD_CHAT_TOKEN=chat-token", "HERALD_CHAT_CALLBACK_SECRET=shared-secret"), "serve")
	co := provision(t, h.client(""), "admin-secret")
	api := h.client(co.key)
	var services []struct{ ID int64 }
	api.api("GET", "/chat-services", "", http.StatusOK, &services)
	require.Len(t, services, 1)

	var sms, chats sendJSON
	api.api("POST", "/sms/send", fmt.Sprintf(`{"messageContent":"Your code is 4711","smsSenderId":%d,"recipients":[{"phoneNumber":"+447922000003"},{"phoneNumber":"+447922000004"}]}`, co.senderID),
		http.StatusAccepted, &sms)
	api.api("POST", "/chat/send-text", fmt.Sprintf(`{"messageContent":"Your table is ready","chatServiceId":%d,"smsFallbackText":"Your table is ready (SMS)","smsFallbackSenderId":%d,
		"recipients":[{"phoneNumber":"+447933000010"},{"phoneNumber":"+447933000011"}]}`, services[0].ID, co.senderID), http.StatusAccepted, &chats)
	api.waitCampaign(sms.CampaignID, func(c campaignJSON) bool { return c.DeliveredCount+c.FailedCount == 2 })
	api.waitCampaign(chats.CampaignID, func(c campaignJSON) bool { return c.SeenCount == 1 && c.SMSFallbackDeliveredCount == 1 })

	require.Equal(t, "REJECTED", deref(api.messages("447922000003")[0].Details))
	require.Equal(t, "Delivered", api.messages("447922000004")[0].Status)
	require.Equal(t, "Seen", api.messages("447933000011")[0].Status, "the chat simulator's callbacks are signed with the shared secret")
	fallback := api.messages("447933000010")
	require.Len(t, fallback, 2)
	require.ElementsMatch(t, []string{"Chat Failed", "Smpp Delivered"},
		[]string{fallback[0].ChannelType + " " + fallback[0].Status, fallback[1].ChannelType + " " + fallback[1].Status})

	h.stop()
	smsc.stop()
	chat.stop()
	var smscStats struct {
		Submits                 uint64
		FirstSubmit, LastSubmit time.Time
	}
	_, line, ok := strings.Cut(smsc.stdout.String(), "SMSC simulator stopped: ")
	require.True(t, ok, smsc.stdout.String())
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(line)), &smscStats), "the final counters are one JSON line")
	require.Positive(t, smscStats.Submits)
	require.False(t, smscStats.FirstSubmit.IsZero())
	require.False(t, smscStats.LastSubmit.Before(smscStats.FirstSubmit))
	require.Contains(t, chat.stdout.String(), "chat provider simulator stopped: {")
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// smsOutcome is the SMSC simulator's outcome for a number: status,
// details and SMS error code.
func smsOutcome(phone string) (string, string, string) {
	switch phone[len(phone)-4:] {
	case "0001":
		return "Failed", "UNDELIVERED", "001"
	case "0002":
		return "Failed", "EXPIRED", "002"
	case "0003":
		return "Failed", "REJECTED", "003"
	}
	return "Delivered", "", ""
}

// numbers returns n distinct numbers of series s whose last four digits
// cycle through 0000 to 0011.
func numbers(n, s int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("4479%d%04d%04d", s, i, i%12)
	}
	return out
}

// queuingCampaign writes, in the stopped server's database, a bulk
// campaign of company companyID left Queuing an hour ago, as a process
// stopped in the middle of its preparation leaves it.
func queuingCampaign(t *testing.T, dbURL, companyID string) messaging.ID {
	t.Helper()
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, dbURL, sqlstore.Config{})
	require.NoError(t, err)
	defer store.Close()
	co, err := messaging.ParseID(companyID)
	require.NoError(t, err)
	at := time.Now().Add(-time.Hour).UTC()
	c := messaging.Campaign{
		ID: messaging.NewIDGenerator(func() time.Time { return at }).New(), CompanyID: co, Name: "interrupted",
		Channel: messaging.ChannelSMS, Mode: messaging.ModeBulk, Status: messaging.CampaignQueuing,
		Planned: 1000, CreatedAt: at, UpdatedAt: at,
	}
	require.NoError(t, store.CreateCampaign(ctx, &c, 50_000))
	return c.ID
}

// company is a company provisioned through the admin API.
type company struct {
	id       string
	key      string
	senderID int64
}

// provision sets a company up through the admin API as an operator does:
// create, API key, activate, SMS sender, approval, chat service.
func provision(t *testing.T, c *client, token string) company {
	t.Helper()
	admin := map[string]string{"Authorization": "Bearer " + token}
	var co struct {
		ID     string
		Name   string
		Active bool
	}
	c.call("POST", "/admin/v1/companies", admin, `{"name":"Acme"}`, http.StatusCreated, &co)
	require.Equal(t, "Acme", co.Name)
	require.False(t, co.Active)
	var key struct{ APIKey string }
	c.call("POST", "/admin/v1/companies/"+co.ID+"/api-keys", admin, "", http.StatusCreated, &key)
	require.Regexp(t, `^om_[A-Za-z0-9]{32}$`, key.APIKey)
	api := map[string]string{"X-API-Key": key.APIKey}
	c.call("GET", "/api/v1/sms-senders", api, "", http.StatusServiceUnavailable, nil)
	c.call("POST", "/admin/v1/companies/"+co.ID+"/activate", admin, "", http.StatusOK, nil)

	var sender struct {
		ID       int64
		Approved bool
	}
	c.call("POST", "/admin/v1/companies/"+co.ID+"/sms-senders", admin, `{"senderId":"ACME"}`, http.StatusCreated, &sender)
	require.False(t, sender.Approved)
	var listed []map[string]any
	c.call("GET", "/api/v1/sms-senders", api, "", http.StatusOK, &listed)
	require.Empty(t, listed, "a sender is listed once approved")
	c.call("POST", fmt.Sprintf("/admin/v1/sms-senders/%d/approve", sender.ID), admin, "", http.StatusOK, nil)
	c.call("GET", "/api/v1/sms-senders", api, "", http.StatusOK, &listed)
	require.Len(t, listed, 1)
	c.call("POST", "/admin/v1/companies/"+co.ID+"/chat-services", admin, `{"brandName":"Acme","providerServiceId":"acme"}`, http.StatusCreated, nil)
	return company{id: co.ID, key: key.APIKey, senderID: sender.ID}
}

// heraldEnv is this process's environment without its HERALD_ variables,
// plus kv: what the developer's shell sets must not change the test.
func heraldEnv(kv ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "HERALD_") {
			env = append(env, e)
		}
	}
	return append(append(env, "HERALD_ADDR=127.0.0.1:0", "HERALD_LOG_FORMAT=json", "HERALD_SECRET_KEY="+testSecretKey), kv...)
}

// testSecretKey is the HERALD_SECRET_KEY of the processes the tests start
// (a later HERALD_SECRET_KEY= in their environment takes it away).
const testSecretKey = "7465737473206f6e6c793a2074686973206b65792070726f7465637473206e6f"

// herald is a running herald process: a server or a simulator.
type herald struct {
	t              *testing.T
	cmd            *exec.Cmd
	exited         chan error
	stdout, stderr *lockedBuffer
	ready          []string // the submatches of its ready line
	base           string   // http://host:port
	key            string   // the demo's API key
}

// Lines telling that a process is ready, each with the submatches
// startHerald keeps: the base URL and, for the demo, the API key.
var (
	servingLine = regexp.MustCompile(`"msg":"herald serving","addr":"([^"]+)"`)
	demoLine    = regexp.MustCompile(`export API=(http://\S+)/api/v1 KEY=(om_\S+)`)
	smscLine    = regexp.MustCompile(`SMSC simulator listening on (\S+) `)
	chatLine    = regexp.MustCompile(`chat provider simulator at (http://[^;\s]+)`)
)

// startHerald starts bin with args and env and waits until it serves (and,
// with --demo, printed its key).
func startHerald(t *testing.T, bin string, env []string, args ...string) *herald {
	t.Helper()
	if len(args) > 1 && args[1] == "--demo" {
		h := startProcess(t, bin, env, demoLine, args...)
		h.base, h.key = h.ready[1], h.ready[2]
		return h
	}
	h := startProcess(t, bin, env, servingLine, args...)
	h.base = "http://" + h.ready[1]
	return h
}

// startProcess starts bin with args and env and waits until a line of its
// output matches ready.
func startProcess(t *testing.T, bin string, env []string, ready *regexp.Regexp, args ...string) *herald {
	t.Helper()
	h := &herald{t: t, cmd: exec.Command(bin, args...), exited: make(chan error, 1),
		stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
	h.cmd.Env = env
	stdout, err := h.cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := h.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, h.cmd.Start())
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			<-h.exited
		}
		if t.Failed() {
			t.Logf("%s stdout:\n%s\n%[1]s stderr:\n%s", strings.Join(args, " "), h.stdout.String(), h.stderr.String())
		}
	})

	matched := make(chan []string, 1)
	var once sync.Once
	var pipes sync.WaitGroup
	for _, p := range []struct {
		r   io.Reader
		buf *lockedBuffer
	}{{stdout, h.stdout}, {stderr, h.stderr}} {
		pipes.Go(func() {
			sc := bufio.NewScanner(p.r)
			for sc.Scan() {
				p.buf.WriteLine(sc.Text())
				if m := ready.FindStringSubmatch(sc.Text()); m != nil {
					once.Do(func() { matched <- m })
				}
			}
		})
	}
	go func() {
		pipes.Wait()
		h.exited <- h.cmd.Wait()
	}()

	select {
	case h.ready = <-matched:
	case err := <-h.exited:
		t.Fatalf("%s exited before it was ready: %v\n%s", strings.Join(args, " "), err, h.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not get ready\n%s", strings.Join(args, " "), h.stderr.String())
	}
	return h
}

// stop sends SIGTERM and requires a clean exit.
func (h *herald) stop() {
	h.t.Helper()
	require.NoError(h.t, h.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-h.exited:
		require.NoError(h.t, err, "herald stops on SIGTERM with exit code 0")
	case <-time.After(60 * time.Second):
		h.t.Fatal("herald did not stop on SIGTERM")
	}
}

// metrics returns the text of GET /metrics.
func (h *herald) metrics() string {
	h.t.Helper()
	var b bytes.Buffer
	h.client("").call("GET", "/metrics", nil, "", http.StatusOK, &b)
	return b.String()
}

func (h *herald) client(key string) *client {
	return &client{t: h.t, base: h.base, key: key, http: &http.Client{Timeout: 30 * time.Second}}
}

// client calls one herald process.
type client struct {
	t    *testing.T
	base string
	key  string
	http *http.Client
}

// call sends a request and requires the status want; it decodes the
// answer into out (JSON, or the raw body into a *bytes.Buffer).
// readyAnswer is the answer of GET /readyz.
type readyAnswer struct {
	Status string       `json:"status"`
	Checks []readyCheck `json:"checks"`
}

// readyCheck is one check of a readyAnswer.
type readyCheck struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	Required bool   `json:"required"`
	Error    string `json:"error"`
}

func (c *client) call(method, path string, headers map[string]string, body string, want int, out any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	require.NoError(c.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	require.Equal(c.t, want, resp.StatusCode, "%s %s: %s", method, path, data)
	switch out := out.(type) {
	case nil:
	case *bytes.Buffer:
		out.Write(data)
	default:
		require.NoError(c.t, json.Unmarshal(data, out), "%s %s: %s", method, path, data)
	}
}

// api calls the API v1 with the client's key.
func (c *client) api(method, path, body string, want int, out any) {
	c.t.Helper()
	c.call(method, "/api/v1"+path, map[string]string{"X-API-Key": c.key}, body, want, out)
}

// sendJSON is the answer of a bulk send.
type sendJSON struct {
	CampaignID          string
	MessageCount        int
	SkippedCount        int
	InvalidPhoneNumbers []string
	Status              string
}

// bulk sends template tpl to phones through path, with name=friend as the
// request's placeholder and externalUserID, when not empty, on every
// recipient.
func (c *client) bulk(path, tpl string, phones []string, externalUserID string) sendJSON {
	c.t.Helper()
	recipients := make([]string, len(phones))
	for i, p := range phones {
		if _, ok := messaging.NormalizePhone(p); ok {
			p = "+" + p // sent in international form, listed by its digits
		}
		recipients[i] = fmt.Sprintf(`{"phoneNumber":%q,"externalUserId":%q}`, p, externalUserID)
	}
	var out sendJSON
	c.api("POST", path, fmt.Sprintf(`{"templateId":%q,"placeholders":{"name":"friend"},"recipients":[%s]}`, tpl, strings.Join(recipients, ",")),
		http.StatusAccepted, &out)
	return out
}

// campaignJSON is a campaign's detail.
type campaignJSON struct {
	Status                    string
	Channel                   string
	TotalMessages             int
	DeliveredCount            int
	FailedCount               int
	PendingCount              int
	SeenCount                 int
	SMSFallbackCount          int `json:"smsFallbackCount"`
	SMSFallbackDeliveredCount int `json:"smsFallbackDeliveredCount"`
	OverallDeliveryRate       float64
	FailureReason             *string
	StartedAt                 *time.Time
	ScheduledAt               *time.Time
}

func (c *client) campaign(id string) campaignJSON {
	c.t.Helper()
	var out campaignJSON
	c.api("GET", "/campaigns/"+id, "", http.StatusOK, &out)
	return out
}

// waitCampaign polls campaign id until done holds of it.
func (c *client) waitCampaign(id string, done func(campaignJSON) bool) campaignJSON {
	c.t.Helper()
	var got campaignJSON
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = c.campaign(id); done(got) {
			return got
		}
	}
	c.t.Fatalf("campaign %s did not get there: %+v", id, got)
	return got
}

// messageJSON is a message as GET /messages answers it.
type messageJSON struct {
	PhoneNumber    string
	Status         string
	ChannelType    string
	MessageContent string
	Details        *string
	SMSErrorCode   *string `json:"smsErrorCode"`
	SentAt         *time.Time
}

// messages returns the messages sent to phone.
func (c *client) messages(phone string) []messageJSON {
	c.t.Helper()
	var page struct{ Messages []messageJSON }
	c.api("GET", "/messages?phoneNumber="+phone, "", http.StatusOK, &page)
	return page.Messages
}

// messagesOf returns every message of the given externalUserId, page by
// page.
func (c *client) messagesOf(externalUserID string) []messageJSON {
	c.t.Helper()
	var all []messageJSON
	for page := 1; ; page++ {
		var p struct {
			Messages   []messageJSON
			TotalPages int
		}
		c.api("GET", fmt.Sprintf("/messages?externalUserId=%s&pageSize=100&page=%d", externalUserID, page), "", http.StatusOK, &p)
		all = append(all, p.Messages...)
		if page >= p.TotalPages {
			return all
		}
	}
}

// surveyResultJSON is one survey answer.
type surveyResultJSON struct {
	PhoneNumber         string
	SelectedOptionIndex int
	SelectedOptionText  string
}

// waitSurvey polls the survey results of campaign id until n arrived, and
// returns them by phone number.
func (c *client) waitSurvey(id string, n int) map[string]surveyResultJSON {
	c.t.Helper()
	var page struct {
		Results    []surveyResultJSON
		TotalCount int
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c.api("GET", "/survey-results?pageSize=100&campaignId="+id, "", http.StatusOK, &page)
		if page.TotalCount >= n {
			break
		}
	}
	require.Equal(c.t, n, page.TotalCount)
	out := map[string]surveyResultJSON{}
	for _, r := range page.Results {
		out[r.PhoneNumber] = r
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// lockedBuffer collects a process's output lines for failure logs.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) WriteLine(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
	l.b.WriteByte('\n')
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// grepLines returns the lines of text that contain sub.
func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
