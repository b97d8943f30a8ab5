package chaos_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/webhook/webhooktest"
)

// hookReceiver is a webhook endpoint in the test process keeping, per
// message, the statuses its events reported, in the order received.
type hookReceiver struct {
	*webhooktest.Receiver
	url string

	mu       sync.Mutex
	statuses map[string][]string // message id -> statuses
}

func startHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	r := &hookReceiver{statuses: map[string][]string{}}
	r.Receiver = webhooktest.NewReceiver(func(e webhooktest.Event) {
		var d struct{ MessageID, Status string }
		if e.Type == "message.status" && json.Unmarshal(e.Data, &d) == nil {
			r.mu.Lock()
			r.statuses[d.MessageID] = append(r.statuses[d.MessageID], d.Status)
			r.mu.Unlock()
		}
	})
	srv := httptest.NewServer(r.Receiver)
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/events"
	return r
}

// register registers the receiver for message.status events, in
// batches of up to batch events when batch is positive.
func (r *hookReceiver) register(c *client, batch int) {
	var hook struct{ Secret string }
	opt := ""
	if batch > 0 {
		opt = fmt.Sprintf(`,"batch":{"maxEvents":%d,"maxWaitMs":200}`, batch)
	}
	c.api("POST", "/webhooks", fmt.Sprintf(`{"url":%q,"events":["message.status"]%s}`, r.url, opt), http.StatusCreated, &hook)
	r.SetSecret(hook.Secret)
}

// check waits until every message of the campaign has its final event and
// checks what came: every event signed with the secret, each message's
// last event its final status; it returns how many events came more than
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
	require.Zero(t, r.BadSignatures(), "every request is signed with the endpoint's secret")
	duplicates = r.Duplicates() // read before r.mu: the receiver's handler takes its own lock, then r.mu
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, sts := range r.statuses {
		require.Contains(t, final, id, "an event of a message of the campaign")
		require.Contains(t, sts, "Sent", "message %s: %v", id, sts)
	}
	return duplicates
}
