package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// GET /summary counts the company's messages of today, direct sends
// included, by status and channel, with the failed ones by reason; GET
// /admin/v1/summary counts every company's, together and one by one.
func TestSummary(t *testing.T) {
	e := newEnv(t)
	empty := e.do("GET", "/api/v1/summary", nil)
	require.Equal(t, http.StatusOK, empty.Code, "body: %s", empty.Body)
	m := empty.obj()
	require.EqualValues(t, 0, m["total"])
	require.Nil(t, m["deliveryRate"], "no message with a final status")
	require.Equal(t, []any{}, m["failuresByReason"])
	require.Equal(t, time.Now().UTC().Truncate(24*time.Hour).Format("2006-01-02T15:04:05.000Z"), m["since"])

	// One direct SMS, then two more of which one goes to an opted-out
	// number (Failed, OPTED_OUT).
	r := e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "code 1", "smsSenderId": e.sender, "recipients": recipients(1)})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	require.EqualValues(t, 1, e.do("GET", "/api/v1/summary", nil).obj()["total"], "a direct send counts")
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": phone(2)}).Code)
	r = e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "code 2", "smsSenderId": e.sender,
		"recipients": []map[string]any{{"phoneNumber": phone(2)}, {"phoneNumber": phone(3)}}})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	// Another company's message.
	other := e.newCompany(t, "Globex")
	r = e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "hi", "smsSenderId": other.sender, "recipients": recipients(1)}, withKey(other.key))
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)

	r = e.do("GET", "/api/v1/summary", nil)
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	m = r.obj()
	require.EqualValues(t, 3, m["total"])
	require.Equal(t, map[string]any{"Pending": 2.0, "Sending": 0.0, "Sent": 0.0, "Delivered": 0.0, "Seen": 0.0, "Failed": 1.0}, m["byStatus"])
	byChannel := m["byChannel"].(map[string]any)
	require.EqualValues(t, 3, byChannel["Smpp"].(map[string]any)["total"])
	require.EqualValues(t, 0, byChannel["Chat"].(map[string]any)["total"])
	require.Nil(t, byChannel["Chat"].(map[string]any)["deliveryRate"])
	require.EqualValues(t, 0, m["deliveryRate"], "the one final message failed")
	require.Equal(t, []any{map[string]any{"reason": "OPTED_OUT", "channel": "Smpp", "count": 1.0}}, m["failuresByReason"])
	require.EqualValues(t, 1, e.do("GET", "/api/v1/summary", nil, withKey(other.key)).obj()["total"], "a company sees its own")

	// Since a time: later than every message counts none.
	since := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	r = e.do("GET", "/api/v1/summary?since="+since, nil)
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.EqualValues(t, 0, r.obj()["total"])
	require.Equal(t, since[:len(since)-1]+".000Z", r.obj()["since"])

	r = e.do("GET", "/admin/v1/summary", nil, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	m = r.obj()
	require.EqualValues(t, 4, m["total"])
	rows := m["companies"].([]any)
	require.Len(t, rows, 2)
	first, second := rows[0].(map[string]any), rows[1].(map[string]any)
	require.Equal(t, e.id.String(), first["companyId"], "most messages first")
	require.Equal(t, "Acme", first["name"])
	require.EqualValues(t, 3, first["total"])
	require.Equal(t, m["failuresByReason"], first["failuresByReason"])
	require.Equal(t, other.id.String(), second["companyId"])
	require.Equal(t, "Globex", second["name"])
	require.EqualValues(t, 1, second["total"])
	requireError(t, e.do("GET", "/admin/v1/summary", nil), http.StatusUnauthorized, "Unauthorized", "")
}

// A since that is not an RFC 3339 time, or more than 7 days ago, is a 400
// on field since, on both sides.
func TestSummaryBadSince(t *testing.T) {
	e := newEnv(t)
	old := time.Now().Add(-8 * 24 * time.Hour).UTC().Format(time.RFC3339)
	for _, since := range []string{"yesterday", "2026-12-01", old} {
		requireError(t, e.do("GET", "/api/v1/summary?since="+since, nil), http.StatusBadRequest, "Bad Request", "since")
		requireError(t, e.do("GET", "/admin/v1/summary?since="+since, nil, admin()), http.StatusBadRequest, "Bad Request", "since")
	}
	ok := time.Now().Add(-6 * 24 * time.Hour).UTC().Format(time.RFC3339)
	require.Equal(t, http.StatusOK, e.do("GET", "/api/v1/summary?since="+ok, nil).Code)
}
