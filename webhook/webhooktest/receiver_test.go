package webhooktest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/webhook"
	"github.com/heraldhq/herald/webhook/webhooktest"
)

func TestReceiver(t *testing.T) {
	var got []webhooktest.Event
	rc := webhooktest.NewReceiver(func(e webhooktest.Event) { got = append(got, e) })
	rc.SetSecret("whsec_x")
	post := func(id, secret, body string) int {
		req := httptest.NewRequest(http.MethodPost, "/events", strings.NewReader(body))
		req.Header.Set(webhook.EventIDHeader, id)
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(time.Now(), []byte(body), secret))
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, req)
		return rec.Code
	}
	body := `{"id":"e1","type":"message.status","createdAt":"2026-11-26T10:00:00.000Z","data":{"status":"Sent"}}`
	require.Equal(t, http.StatusNoContent, post("e1", "whsec_x", body))
	require.Equal(t, http.StatusNoContent, post("e1", "whsec_x", body), "sent again")
	require.Equal(t, http.StatusUnauthorized, post("e1", "whsec_y", body))
	require.Equal(t, http.StatusBadRequest, post("e2", "whsec_x", body), "the header names another event")
	require.Equal(t, http.StatusBadRequest, post("e3", "whsec_x", "not json"))
	require.Len(t, got, 1)
	require.Equal(t, "message.status", got[0].Type)
	require.JSONEq(t, `{"status":"Sent"}`, string(got[0].Data))
	require.Equal(t, 1, rc.Duplicates())
	require.Equal(t, 1, rc.BadSignatures())

	// a batch: its events in order, the ones taken before skipped
	batch := `{"events":[` + body + `,{"id":"e4","type":"campaign.status","createdAt":"2026-11-26T10:00:01.000Z","data":{}}]}`
	postBatch := func(count, body string) int {
		req := httptest.NewRequest(http.MethodPost, "/events", strings.NewReader(body))
		req.Header.Set(webhook.EventCountHeader, count)
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(time.Now(), []byte(body), "whsec_x"))
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, req)
		return rec.Code
	}
	require.Equal(t, http.StatusBadRequest, postBatch("3", batch), "the count differs")
	require.Equal(t, http.StatusNoContent, postBatch("2", batch))
	require.Len(t, got, 2)
	require.Equal(t, "e4", got[1].ID)
	require.Equal(t, 2, rc.Duplicates(), "e1 again")
}
