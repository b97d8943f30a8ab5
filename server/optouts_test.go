package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

func TestOptOutList(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "+447700900001"})
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	require.Equal(t, "All", r.obj()["channel"])
	require.Equal(t, "api", r.obj()["source"])
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "447700900001"}).Code, "already")
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "447700900002", "channel": "Chat"}).Code)
	requireError(t, e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "12", "channel": "Fax"}), http.StatusBadRequest, "Bad Request", "channel")

	// an SMS with STOP opts its sender out too
	e.inboundSMS(t, "447700900003", "ACME", "stop")
	page := e.do("GET", "/api/v1/opt-outs", nil).obj()
	require.EqualValues(t, 3, page["totalCount"])
	first := page["optOuts"].([]any)[0].(map[string]any)
	require.Equal(t, "447700900003", first["phoneNumber"])
	require.Equal(t, "keyword", first["source"])

	other := e.newCompany(t, "Other")
	require.EqualValues(t, 0, e.do("GET", "/api/v1/opt-outs", nil, withKey(other.key)).obj()["totalCount"])
	requireError(t, e.do("DELETE", "/api/v1/opt-outs/447700900001", nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")

	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/opt-outs/447700900001", nil).Code)
	requireError(t, e.do("DELETE", "/api/v1/opt-outs/447700900001", nil), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("DELETE", "/api/v1/opt-outs/447700900002", nil), http.StatusNotFound, "Not Found", "")
	require.Equal(t, http.StatusNoContent, e.do("DELETE", "/api/v1/opt-outs/447700900002?channel=Chat", nil).Code)
	requireError(t, e.do("DELETE", "/api/v1/opt-outs/abc", nil), http.StatusBadRequest, "Bad Request", "phoneNumber")
}

// A bulk send skips opted-out numbers and lists them; a direct or
// transactional send records their message Failed with details OPTED_OUT,
// never handed to a provider; an opt-out of chat stops chat messages only.
func TestSendsRespectOptOuts(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": phone(1)}).Code)
	require.Equal(t, http.StatusCreated, e.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": phone(2), "channel": "Chat"}).Code)
	sms := e.smsTemplate("promo", "Hi")

	r := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(4)})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	m := r.obj()
	require.EqualValues(t, 3, m["messageCount"], "phone(2) opted out of chat only")
	require.EqualValues(t, 1, m["skippedCount"])
	require.Equal(t, []any{strings.TrimPrefix(phone(1), "+")}, m["optedOutPhoneNumbers"])
	require.Contains(t, m["message"], "opted out")
	e.wait()

	r = e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "code 1234", "smsSenderId": e.sender, "recipients": recipients(2)})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	require.EqualValues(t, 2, r.obj()["messageCount"])
	require.NotContains(t, r.obj(), "optedOutPhoneNumbers")
	direct := e.do("GET", "/api/v1/campaigns/"+r.obj()["campaignId"].(string), nil).obj()
	require.EqualValues(t, 1, direct["failedCount"])
	require.EqualValues(t, 1, direct["pendingCount"])
	msgs := e.do("GET", "/api/v1/messages?phoneNumber="+strings.TrimPrefix(phone(1), "+"), nil).obj()["messages"].([]any)
	require.Len(t, msgs, 1, "the bulk skipped it; the direct send recorded it")
	require.Equal(t, "Failed", msgs[0].(map[string]any)["status"])
	require.Equal(t, "OPTED_OUT", msgs[0].(map[string]any)["details"])

	tx := e.transactional("chat", e.chatTemplate("hello", "Hello", nil))
	r = e.do("POST", "/api/v1/chat/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(2)})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	require.Equal(t, "Failed", r.obj()["status"], "opted out of chat")
	r = e.do("POST", "/api/v1/chat/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(3)})
	require.Equal(t, "Pending", r.obj()["status"])

	// none of the opted-out messages can be claimed
	claimed, err := e.store.ClaimDue(context.Background(), delivery.Claim{Channel: messaging.ChannelChat, Now: time.Now().Add(time.Hour),
		LeaseUntil: time.Now().Add(2 * time.Hour), Limit: 100})
	require.NoError(t, err)
	for _, c := range claimed {
		require.NotEqual(t, strings.TrimPrefix(phone(2), "+"), c.Phone)
	}
}

func TestOptOutKeywords(t *testing.T) {
	e := newEnv(t)
	k := e.do("GET", "/api/v1/opt-outs/keywords", nil).obj()
	require.Contains(t, k["optOut"], "STOP")
	require.Contains(t, k["optIn"], "START")

	r := e.do("PUT", "/api/v1/opt-outs/keywords", map[string]any{"optOut": []string{" arrêt ", "ARRÊT", "fin"}, "optIn": []string{"reprise"}})
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, []any{"ARRÊT", "FIN"}, r.obj()["optOut"])
	require.Equal(t, r.obj(), e.do("GET", "/api/v1/opt-outs/keywords", nil).obj())
	requireError(t, e.do("PUT", "/api/v1/opt-outs/keywords", map[string]any{"optOut": []string{"stop"}, "optIn": []string{"STOP"}}),
		http.StatusBadRequest, "Bad Request", "optIn")
	requireError(t, e.do("PUT", "/api/v1/opt-outs/keywords", map[string]any{"optOut": []string{"no way"}, "optIn": []string{}}), http.StatusBadRequest, "Bad Request", "optOut")
	requireError(t, e.do("PUT", "/api/v1/opt-outs/keywords", map[string]any{"optOut": []string{"x"}}), http.StatusBadRequest, "Bad Request", "optIn")

	e.inboundSMS(t, "447700900001", "ACME", "STOP")
	e.inboundSMS(t, "447700900002", "ACME", "Arrêt")
	list := e.do("GET", "/api/v1/opt-outs", nil).obj()["optOuts"].([]any)
	require.Len(t, list, 1, "the company's own words, not the defaults")
	require.Equal(t, "447700900002", list[0].(map[string]any)["phoneNumber"])
	other := e.newCompany(t, "Other")
	require.Contains(t, e.do("GET", "/api/v1/opt-outs/keywords", nil, withKey(other.key)).obj()["optOut"], "STOP")
}
