package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

func TestWebhookEndpoints(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/webhooks", map[string]any{"url": "https://hooks.example.com/herald",
		"events": []string{"survey.answered", "message.status", "message.status"}})
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	created := r.obj()
	id := created["id"].(string)
	secret := created["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"), secret)
	require.Equal(t, "https://hooks.example.com/herald", created["url"])
	require.Equal(t, []any{"message.status", "survey.answered"}, created["events"], "deduplicated, in the documented order")
	require.Equal(t, true, created["enabled"])
	require.Nil(t, created["disabledAt"])
	require.Nil(t, created["batch"], "one event a request unless asked")

	// batch settings are kept and shown
	br := e.do("POST", "/api/v1/webhooks", map[string]any{"url": "https://hooks.example.com/batch",
		"events": []string{"message.status"}, "batch": map[string]any{"maxEvents": 1000, "maxWaitMs": 60000}})
	require.Equal(t, http.StatusCreated, br.Code, "body: %s", br.Body)
	require.Equal(t, map[string]any{"maxEvents": 1000.0, "maxWaitMs": 60000.0}, br.obj()["batch"])
	bid := br.obj()["id"].(string)
	require.Equal(t, map[string]any{"maxEvents": 1000.0, "maxWaitMs": 60000.0}, e.do("GET", "/api/v1/webhooks/"+bid, nil).obj()["batch"])
	nowait := e.do("POST", "/api/v1/webhooks", map[string]any{"url": "https://hooks.example.com/batch1",
		"events": []string{"message.status"}, "batch": map[string]any{"maxEvents": 1}})
	require.Equal(t, http.StatusCreated, nowait.Code, "body: %s", nowait.Body)
	require.Equal(t, map[string]any{"maxEvents": 1.0, "maxWaitMs": 0.0}, nowait.obj()["batch"])
	for _, x := range []string{bid, nowait.obj()["id"].(string)} {
		require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/webhooks/"+x, nil).Code)
	}

	// the secret is shown once: never by GET
	got := e.do("GET", "/api/v1/webhooks/"+id, nil)
	require.Equal(t, http.StatusOK, got.Code)
	require.NotContains(t, got.obj(), "secret")
	require.NotContains(t, string(got.Body), secret)
	list := e.do("GET", "/api/v1/webhooks", nil)
	require.Equal(t, http.StatusOK, list.Code)
	require.Len(t, list.arr(), 1)
	require.NotContains(t, string(list.Body), secret)

	// rotation: a new secret, and until when the old one still signs
	rot := e.do("POST", "/api/v1/webhooks/"+id+"/rotate-secret", nil)
	require.Equal(t, http.StatusOK, rot.Code, "body: %s", rot.Body)
	newSecret := rot.obj()["secret"].(string)
	require.NotEqual(t, secret, newSecret)
	until, err := time.Parse(time.RFC3339Nano, rot.obj()["previousSecretExpiresAt"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(24*time.Hour), until, time.Minute)
	require.Equal(t, rot.obj()["previousSecretExpiresAt"], e.do("GET", "/api/v1/webhooks/"+id, nil).obj()["previousSecretExpiresAt"])

	// another company sees none of it
	other := e.newCompany(t, "Other")
	require.Empty(t, e.do("GET", "/api/v1/webhooks", nil, withKey(other.key)).arr())
	requireError(t, e.do("GET", "/api/v1/webhooks/"+id, nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("DELETE", "/api/v1/webhooks/"+id, nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("POST", "/api/v1/webhooks/"+id+"/rotate-secret", nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")

	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/webhooks/"+id, nil).Code)
	requireError(t, e.do("GET", "/api/v1/webhooks/"+id, nil), http.StatusNotFound, "Not Found", "")
	require.Empty(t, e.do("GET", "/api/v1/webhooks", nil).arr())
	requireError(t, e.do("GET", "/api/v1/webhooks/not-a-uuid", nil), http.StatusBadRequest, "Bad Request", "")
}

func TestWebhookEndpointsRefuseBadInput(t *testing.T) {
	e := newEnv(t)
	bad := []struct {
		body   any
		fields []string
	}{
		{map[string]any{"url": "http://hooks.example.com/h", "events": []string{"message.status"}}, []string{"url"}},
		{map[string]any{"url": "https://169.254.169.254/latest/meta-data", "events": []string{"message.status"}}, []string{"url"}},
		{map[string]any{"url": "https://10.0.0.8/h", "events": []string{"message.status"}}, []string{"url"}},
		{map[string]any{"url": "https://localhost:8443/h", "events": []string{"message.status"}}, []string{"url"}},
		{map[string]any{"url": "https://hooks.example.com/h", "events": []string{}}, []string{"events"}},
		{map[string]any{"url": "https://hooks.example.com/h", "events": []string{"message.sent"}}, []string{"events"}},
		{map[string]any{"events": []string{"nope"}}, []string{"url", "events"}},
		{map[string]any{"url": "https://hooks.example.com/h", "events": []string{"message.status"},
			"batch": map[string]any{"maxEvents": 0, "maxWaitMs": 100}}, []string{"batch.maxEvents"}},
		{map[string]any{"url": "https://hooks.example.com/h", "events": []string{"message.status"},
			"batch": map[string]any{"maxEvents": 1001}}, []string{"batch.maxEvents"}},
		{map[string]any{"url": "https://hooks.example.com/h", "events": []string{"message.status"},
			"batch": map[string]any{"maxWaitMs": 10}}, []string{"batch.maxEvents"}},
		{map[string]any{"url": "https://hooks.example.com/h", "events": []string{"message.status"},
			"batch": map[string]any{"maxEvents": 10, "maxWaitMs": -1}}, []string{"batch.maxWaitMs"}},
		{map[string]any{"url": "https://hooks.example.com/h", "events": []string{"message.status"},
			"batch": map[string]any{"maxEvents": 10, "maxWaitMs": 60001}}, []string{"batch.maxWaitMs"}},
		{map[string]any{"url": "ftp://x", "events": []string{"message.status"},
			"batch": map[string]any{"maxEvents": 2000, "maxWaitMs": 70000}}, []string{"url", "batch.maxEvents", "batch.maxWaitMs"}},
	}
	for _, b := range bad {
		r := e.do("POST", "/api/v1/webhooks", b.body)
		for _, f := range b.fields {
			requireError(t, r, http.StatusBadRequest, "Bad Request", f)
		}
	}
	requireError(t, e.do("POST", "/api/v1/webhooks", `{"url": 5}`), http.StatusBadRequest, "Bad Request", "")
	requireError(t, e.do("POST", "/api/v1/webhooks", `{"url": "https://hooks.example.com/h", "events": ["message.status"], "batch": {"maxEvents": "ten"}}`),
		http.StatusBadRequest, "Bad Request", "")
	requireError(t, e.do("POST", "/api/v1/webhooks", nil), http.StatusBadRequest, "Bad Request", "")
	require.Empty(t, e.do("GET", "/api/v1/webhooks", nil).arr(), "nothing stored")

	// at most ten a company
	for i := range 10 {
		r := e.do("POST", "/api/v1/webhooks", map[string]any{"url": "https://hooks.example.com/" + string(rune('a'+i)), "events": []string{"campaign.status"}})
		require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	}
	requireError(t, e.do("POST", "/api/v1/webhooks", map[string]any{"url": "https://hooks.example.com/k", "events": []string{"campaign.status"}}),
		http.StatusBadRequest, "Bad Request", "url")
	require.Len(t, e.do("GET", "/api/v1/webhooks", nil).arr(), 10)
	requireError(t, e.do("GET", "/api/v1/webhooks", nil, noKey()), http.StatusUnauthorized, "Unauthorized", "")
}

// The development setting lets endpoints on this machine take events over
// plain http; it allows nothing else.
func TestWebhookLoopbackInDevelopment(t *testing.T) {
	e := newEnv(t, withWebhookURLs(true))
	r := e.do("POST", "/api/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9000/events", "events": []string{"message.status"}})
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	requireError(t, e.do("POST", "/api/v1/webhooks", map[string]any{"url": "http://hooks.example.com/events", "events": []string{"message.status"}}),
		http.StatusBadRequest, "Bad Request", "url")
}

// sentDirect sends a direct SMS to n numbers and records each Sent in the
// store, as the dispatcher would: each move writes a message.status event.
func (e *env) sentDirect(t *testing.T, n int) {
	t.Helper()
	r := e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "hi", "smsSenderId": e.sender, "recipients": recipients(n)})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	ctx := context.Background()
	now := time.Now()
	claimed, err := e.store.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: now, LeaseUntil: now.Add(time.Minute), Limit: n})
	require.NoError(t, err)
	require.Len(t, claimed, n)
	var ups []delivery.StatusUpdate
	for i, m := range claimed {
		pid := fmt.Sprintf("P%d", i)
		ups = append(ups, delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent, At: now, ProviderMessageID: pid, PartIDs: []string{pid}})
	}
	_, err = e.store.ApplyUpdates(ctx, ups)
	require.NoError(t, err)
}

func TestWebhookDeliveryLog(t *testing.T) {
	e := newEnv(t)
	id := e.do("POST", "/api/v1/webhooks", map[string]any{"url": "https://hooks.example.com/h", "events": []string{"message.status"}}).obj()["id"].(string)
	e.sentDirect(t, 3)

	r := e.do("GET", "/api/v1/webhooks/"+id+"/deliveries?pageSize=2", nil)
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	page := r.obj()
	require.EqualValues(t, 3, page["totalCount"])
	require.EqualValues(t, 2, page["totalPages"])
	ds := page["deliveries"].([]any)
	require.Len(t, ds, 2)
	first := ds[0].(map[string]any)
	require.Equal(t, "message.status", first["eventType"])
	require.Equal(t, "Waiting", first["status"])
	require.EqualValues(t, 0, first["attempts"])
	require.Nil(t, first["lastAttemptAt"])
	require.NotNil(t, first["nextAttemptAt"])
	body := first["body"].(map[string]any)
	require.Equal(t, first["eventId"], body["id"])
	require.Equal(t, "Sent", body["data"].(map[string]any)["status"])

	eventID := first["eventId"].(string)
	r = e.do("POST", "/api/v1/webhooks/"+id+"/deliveries/"+eventID+"/redeliver", nil)
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	require.Equal(t, "Waiting", r.obj()["status"])
	requireError(t, e.do("POST", "/api/v1/webhooks/"+id+"/deliveries/"+id+"/redeliver", nil), http.StatusNotFound, "Not Found", "")

	other := e.newCompany(t, "Other")
	requireError(t, e.do("GET", "/api/v1/webhooks/"+id+"/deliveries", nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("POST", "/api/v1/webhooks/"+id+"/deliveries/"+eventID+"/redeliver", nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("GET", "/api/v1/webhooks/"+id+"/deliveries?page=0", nil), http.StatusBadRequest, "Bad Request", "page")
}
