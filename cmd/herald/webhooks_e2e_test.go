package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/webhook"
	"github.com/heraldhq/herald/webhook/webhooktest"
)

// receivedEvent is an event the test's endpoint took.
type receivedEvent struct {
	Type string
	Data struct {
		MessageID   string `json:"messageId"`
		CampaignID  string `json:"campaignId"`
		Status      string `json:"status"`
		PhoneNumber string `json:"phoneNumber"`
	}
}

// receiver is a webhook endpoint in the test process keeping the events
// it took.
type receiver struct {
	*webhooktest.Receiver
	mu     sync.Mutex
	events []receivedEvent
}

func newReceiver() *receiver {
	rc := &receiver{}
	rc.Receiver = webhooktest.NewReceiver(func(e webhooktest.Event) {
		ev := receivedEvent{Type: e.Type}
		_ = json.Unmarshal(e.Data, &ev.Data)
		rc.mu.Lock()
		rc.events = append(rc.events, ev)
		rc.mu.Unlock()
	})
	return rc
}

// final counts the messages whose last event is Delivered or Failed.
func (rc *receiver) final() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	last := map[string]string{}
	for _, e := range rc.events {
		if e.Type == "message.status" {
			last[e.Data.MessageID] = e.Data.Status
		}
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
// secret, in that order. A second endpoint beside it takes the same
// message events in batches of up to 25, with the same guarantees, then
// alone for a second campaign. It runs without HERALD_SECRET_KEY: the
// demo has its own.
func testWebhooks(t *testing.T, bin, dbURL string) {
	rc := newReceiver()
	srv := httptest.NewServer(rc)
	defer srv.Close()
	batched := newReceiver()
	var batchRequests atomic.Int64
	bsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(webhook.EventCountHeader) != "" {
			batchRequests.Add(1)
		}
		batched.ServeHTTP(w, r)
	}))
	defer bsrv.Close()
	// The demo without HERALD_SECRET_KEY stores the secret under its
	// built-in key.
	h := startHerald(t, bin, heraldEnv("HERALD_DATABASE_URL="+dbURL, "HERALD_SECRET_KEY="), "serve", "--demo")
	api := h.client(h.key)

	var hook struct {
		ID     string
		Secret string
	}
	api.api("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.status","message.inbound"]}`, srv.URL+"/events"), http.StatusCreated, &hook)
	rc.SetSecret(hook.Secret)
	var bhook struct {
		Secret string
		Batch  struct{ MaxEvents, MaxWaitMs int }
	}
	api.api("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.status"],"batch":{"maxEvents":25,"maxWaitMs":1000}}`, bsrv.URL+"/events"),
		http.StatusCreated, &bhook)
	require.Equal(t, 25, bhook.Batch.MaxEvents)
	batched.SetSecret(bhook.Secret)

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
	require.Eventually(t, func() bool { return batched.final() == len(phones) }, 30*time.Second, 50*time.Millisecond)
	require.Zero(t, batched.BadSignatures(), "every batch is signed over its body")
	requireInOrder(t, batched, sent.CampaignID, len(phones))
	// 240 events in batches of at most 25: at least 10 requests, and
	// fewer than one a message
	require.GreaterOrEqual(t, batchRequests.Load(), int64(10))
	require.Less(t, batchRequests.Load(), int64(len(phones)))

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

	require.Zero(t, rc.BadSignatures(), "every request is signed with the endpoint's secret")
	requireInOrder(t, rc, sent.CampaignID, len(phones))
	var listed []map[string]any
	api.api("GET", "/webhooks", "", http.StatusOK, &listed)
	require.Len(t, listed, 2)
	require.Equal(t, true, listed[0]["enabled"])

	// With the batched endpoint alone, the store keeps the events of a
	// write in one row: they come as before.
	api.api("DELETE", "/webhooks/"+hook.ID, "", http.StatusNoContent, nil)
	batched.mu.Lock()
	batched.events = nil
	batched.mu.Unlock()
	phones = numbers(80, 8)
	sent = api.bulk("/sms/promotional", tpl.ID, phones, "")
	api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Ready" })
	api.api("POST", "/campaigns/"+sent.CampaignID+"/start", "", http.StatusOK, nil)
	api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Completed" })
	require.Eventually(t, func() bool { return batched.final() == len(phones) }, 30*time.Second, 50*time.Millisecond)
	require.Zero(t, batched.BadSignatures())
	requireInOrder(t, batched, sent.CampaignID, len(phones))
	h.stop()
}

// requireInOrder checks that rc took each message of the campaign's
// events in order, Sent then its final status, once each but for counted
// redeliveries.
func requireInOrder(t *testing.T, rc *receiver, campaignID string, messages int) {
	t.Helper()
	dup := rc.Duplicates()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	byMessage := map[string][]string{}
	phoneOf := map[string]string{}
	for _, e := range rc.events {
		if e.Type == "message.inbound" {
			continue
		}
		require.Equal(t, "message.status", e.Type)
		require.Equal(t, campaignID, e.Data.CampaignID)
		byMessage[e.Data.MessageID] = append(byMessage[e.Data.MessageID], e.Data.Status)
		phoneOf[e.Data.MessageID] = e.Data.PhoneNumber
	}
	require.Len(t, byMessage, messages)
	for id, statuses := range byMessage {
		status, _, _ := smsOutcome(phoneOf[id])
		require.Equal(t, []string{"Sent", status}, statuses[len(statuses)-2:], "message %s: %v", id, statuses)
		require.LessOrEqual(t, len(statuses), 2+dup, "message %s: each event once but for counted redeliveries", id)
	}
}
