package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/webhook"
)

// receiver is a webhook endpoint in the test process: it verifies each
// request's signature and keeps the events it took.
type receiver struct {
	mu     sync.Mutex
	secret string
	events []receivedEvent
	bad    int // requests whose signature did not verify
	seen   map[string]int
}

type receivedEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		MessageID   string `json:"messageId"`
		CampaignID  string `json:"campaignId"`
		Status      string `json:"status"`
		PhoneNumber string `json:"phoneNumber"`
	} `json:"data"`
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "unreadable", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.secret == "" || webhook.Verify(rc.secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.DefaultTolerance) != nil {
		rc.bad++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev receivedEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	if ev.ID != r.Header.Get(webhook.EventIDHeader) {
		http.Error(w, "event id header differs", http.StatusBadRequest)
		return
	}
	if rc.seen == nil {
		rc.seen = map[string]int{}
	}
	rc.seen[ev.ID]++
	rc.events = append(rc.events, ev)
	w.WriteHeader(http.StatusNoContent)
}

// final counts the messages whose last event is Delivered or Failed.
func (rc *receiver) final() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	last := map[string]string{}
	for _, e := range rc.events {
		last[e.Data.MessageID] = e.Data.Status
	}
	n := 0
	for _, s := range last {
		if s == "Delivered" || s == "Failed" {
			n++
		}
	}
	return n
}

// testWebhooks runs the demo with a webhook endpoint in the test process:
// every message of a bulk SMS campaign reaches the endpoint as a Sent
// event and then a Delivered or Failed one, signed with the endpoint's
// secret, in that order.
func testWebhooks(t *testing.T, bin, dbURL string) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	h := startHerald(t, bin, heraldEnv("HERALD_DATABASE_URL="+dbURL), "serve", "--demo")
	api := h.client(h.key)

	var hook struct {
		ID     string
		Secret string
	}
	api.api("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.status","message.inbound"]}`, srv.URL+"/events"), http.StatusCreated, &hook)
	rc.mu.Lock()
	rc.secret = hook.Secret
	rc.mu.Unlock()

	var senders []struct{ ID int64 }
	api.api("GET", "/sms-senders", "", http.StatusOK, &senders)
	var tpl struct{ ID string }
	api.api("POST", "/templates/sms", fmt.Sprintf(`{"name":"promo","templateContent":"Hi","smsSenderId":%d}`, senders[0].ID), http.StatusCreated, &tpl)
	phones := numbers(120, 7)
	sent := api.bulk("/sms/promotional", tpl.ID, phones, "")
	api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Ready" })
	api.api("POST", "/campaigns/"+sent.CampaignID+"/start", "", http.StatusOK, nil)
	api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Completed" })
	require.Eventually(t, func() bool { return rc.final() == len(phones) }, 30*time.Second, 50*time.Millisecond)

	// A handset replies through the demo's SMSC simulator: the SMS is
	// listed by the API and reported to the endpoint.
	h.client("").call("POST", "/demo/smsc/mo", nil, `{"from":"447700900777","to":"Herald","text":"Merci, à bientôt 👋"}`, http.StatusOK, nil)
	var inbound struct {
		Messages []struct{ PhoneNumber, To, Text string }
	}
	require.Eventually(t, func() bool {
		api.api("GET", "/inbound?phoneNumber=447700900777", "", http.StatusOK, &inbound)
		return len(inbound.Messages) == 1
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, "Merci, à bientôt 👋", inbound.Messages[0].Text)
	require.Eventually(t, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for _, e := range rc.events {
			if e.Type == "message.inbound" {
				return true
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "the inbound SMS reaches the endpoint")

	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Zero(t, rc.bad, "every request is signed with the endpoint's secret")
	byMessage := map[string][]string{}
	phoneOf := map[string]string{}
	for _, e := range rc.events {
		if e.Type == "message.inbound" {
			continue
		}
		require.Equal(t, "message.status", e.Type)
		require.Equal(t, sent.CampaignID, e.Data.CampaignID)
		byMessage[e.Data.MessageID] = append(byMessage[e.Data.MessageID], e.Data.Status)
		phoneOf[e.Data.MessageID] = e.Data.PhoneNumber
	}
	require.Len(t, byMessage, len(phones))
	dup := 0
	for _, n := range rc.seen {
		dup += n - 1
	}
	for id, statuses := range byMessage {
		status, _, _ := smsOutcome(phoneOf[id])
		require.Equal(t, []string{"Sent", status}, statuses[len(statuses)-2:], "message %s: %v", id, statuses)
		require.LessOrEqual(t, len(statuses), 2+dup, "message %s: each event once but for counted redeliveries", id)
	}
	var listed []map[string]any
	api.api("GET", "/webhooks", "", http.StatusOK, &listed)
	require.Len(t, listed, 1)
	require.Equal(t, true, listed[0]["enabled"])
	h.stop()
}
