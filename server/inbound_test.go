package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
)

// inboundSMS stores an SMS from phone to the sender id dest, as the SMPP
// adapter hands it over.
func (e *env) inboundSMS(t *testing.T, phone, dest, text string) {
	t.Helper()
	m, err := e.store.RecordInboundPart(context.Background(),
		delivery.InboundPart{From: phone, To: dest, Text: text, Count: 1, Seq: 1, At: time.Now()}, e.ids.New())
	require.NoError(t, err)
	require.NotNil(t, m)
}

func TestListInbound(t *testing.T) {
	e := newEnv(t)
	e.inboundSMS(t, "447700900001", "ACME", "STOP")
	e.inboundSMS(t, "447700900002", "ACME", "Great, thanks")
	e.inboundSMS(t, "447700900003", "NOBODY", "hello?")

	r := e.do("GET", "/api/v1/inbound", nil)
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	page := r.obj()
	require.EqualValues(t, 2, page["totalCount"])
	msgs := page["messages"].([]any)
	require.Equal(t, "Great, thanks", msgs[0].(map[string]any)["text"], "latest first")
	require.Equal(t, "ACME", msgs[1].(map[string]any)["to"])

	r = e.do("GET", "/api/v1/inbound?phoneNumber=%2B447700900001", nil)
	require.Equal(t, http.StatusOK, r.Code)
	msgs = r.obj()["messages"].([]any)
	require.Len(t, msgs, 1)
	require.Equal(t, "447700900001", msgs[0].(map[string]any)["phoneNumber"])
	requireError(t, e.do("GET", "/api/v1/inbound?phoneNumber=12ab", nil), http.StatusBadRequest, "Bad Request", "phoneNumber")

	other := e.newCompany(t, "Other")
	e.inboundSMS(t, "447700900004", "ACME", "later")
	require.EqualValues(t, 0, e.do("GET", "/api/v1/inbound", nil, withKey(other.key)).obj()["totalCount"],
		"a sender id approved for two companies: its messages go to the one that had it first")
	require.EqualValues(t, 3, e.do("GET", "/api/v1/inbound", nil).obj()["totalCount"])
}
