package chaos_test

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

// hookReceiver is a webhook endpoint in the test process: it checks every
// request's signature and keeps, per message, the statuses its events
// reported.
type hookReceiver struct {
	srv *http.Server
	url string

	mu       sync.Mutex
	secret   string
	bad      int
	ids      map[string]int      // event id -> requests that carried it
	statuses map[string][]string // message id -> statuses, in the order received
	phoneOf  map[string]string
}

func startHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	r := &hookReceiver{ids: map[string]int{}, statuses: map[string][]string{}, phoneOf: map[string]string{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/events"
	return r
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if webhook.Verify(r.secret, req.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.DefaultTolerance) != nil {
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			MessageID   string `json:"messageId"`
			Status      string `json:"status"`
			PhoneNumber string `json:"phoneNumber"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != req.Header.Get(webhook.EventIDHeader) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.ids[ev.ID]++
	if ev.Type == string(webhook.MessageStatus) && r.ids[ev.ID] == 1 {
		r.statuses[ev.Data.MessageID] = append(r.statuses[ev.Data.MessageID], ev.Data.Status)
		r.phoneOf[ev.Data.MessageID] = ev.Data.PhoneNumber
	}
	w.WriteHeader(http.StatusNoContent)
}

// register registers the receiver for message.status events.
func (r *hookReceiver) register(c *client) {
	var hook struct{ Secret string }
	c.api("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.status"]}`, r.url), http.StatusCreated, &hook)
	r.mu.Lock()
	r.secret = hook.Secret
	r.mu.Unlock()
}

// check waits until every message of the campaign has its final event and
// checks what came: every event signed with the secret, each message's
// last event its final status, and returns how many events came more than
// once (at-least-once after a kill).
func (r *hookReceiver) check(t *testing.T, c *client, externalUserID string, n int) (duplicates int) {
	t.Helper()
	final := map[string]string{}
	for _, m := range c.messagesOf(externalUserID) {
		final[m.ID] = m.Status
	}
	require.Len(t, final, n)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r.mu.Lock()
		missing := 0
		for id, st := range final {
			got := r.statuses[id]
			if len(got) == 0 || got[len(got)-1] != st {
				missing++
			}
		}
		r.mu.Unlock()
		if missing == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d of %d messages still without their final event", missing, n)
		time.Sleep(50 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Zero(t, r.bad, "every request is signed with the endpoint's secret")
	for id, sts := range r.statuses {
		require.Contains(t, final, id, "an event of a message of the campaign")
		require.Contains(t, sts, "Sent", "message %s: %v", id, sts)
	}
	for _, k := range r.ids {
		duplicates += k - 1
	}
	return duplicates
}
