package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// missingBody is a bulk send of "{{greeting}} {{name}}, see you in
// {{city}}" with greeting for everyone: the second recipient lacks city,
// the third every value, the fourth's number is invalid.
func missingBody(tmpl any, policy string) map[string]any {
	body := map[string]any{"templateId": tmpl, "placeholders": map[string]any{"greeting": "Hello"}, "recipients": []map[string]any{
		{"phoneNumber": "+447700900001", "placeholders": map[string]any{"name": "Ann", "city": "Leeds"}},
		{"phoneNumber": "+447700900002", "placeholders": map[string]any{"name": "Bob"}},
		{"phoneNumber": "+447700900003"},
		{"phoneNumber": "12-34", "placeholders": map[string]any{"name": "Bad"}},
	}}
	if policy != "" {
		body["missingPlaceholders"] = policy
	}
	return body
}

// TestMissingPlaceholdersThroughHTTP: a bulk send's 202 counts the
// recipients lacking each placeholder; "skip" leaves them out, listed as
// sent; anything else is a 400 on the field. An add-message names what it
// lacks, or is refused with "skip". Direct sends, which take no
// placeholders, answer neither list. Every answer matches the OpenAPI
// document.
func TestMissingPlaceholdersThroughHTTP(t *testing.T) {
	e := newEnv(t)
	tmpl := e.smsTemplate("visit", "{{greeting}} {{name}}, see you in {{city}}")
	for _, ch := range []string{"sms", "chat"} {
		t.Run(ch, func(t *testing.T) {
			tpl, path := tmpl, "/api/v1/sms/promotional"
			if ch == "chat" {
				tpl, path = e.chatTemplate("visit-chat", "{{greeting}} {{name}}, see you in {{city}}", nil), "/api/v1/chat/send"
			}
			r := e.doT(t, "POST", path, missingBody(tpl, ""))
			require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
			m := r.obj()
			require.Equal(t, []any{map[string]any{"name": "name", "recipients": 1.0}, map[string]any{"name": "city", "recipients": 2.0}}, m["missingPlaceholders"])
			require.Equal(t, []any{}, m["missingPlaceholderPhoneNumbers"])
			require.EqualValues(t, 3, m["messageCount"])
			require.Contains(t, m["message"], "Some recipients have no value for {{name}}, {{city}} (see missingPlaceholders)")

			r = e.doT(t, "POST", path, missingBody(tpl, "skip"))
			require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
			m = r.obj()
			require.Equal(t, []any{map[string]any{"name": "name", "recipients": 1.0}, map[string]any{"name": "city", "recipients": 2.0}}, m["missingPlaceholders"])
			require.Equal(t, []any{"+447700900002", "+447700900003"}, m["missingPlaceholderPhoneNumbers"])
			require.EqualValues(t, 1, m["messageCount"])
			require.EqualValues(t, 3, m["skippedCount"])
			require.Contains(t, m["message"], "1 invalid phone number skipped (see invalidPhoneNumbers); 2 recipients without a value for a placeholder (see missingPlaceholderPhoneNumbers) skipped")

			requireError(t, e.doT(t, "POST", path, missingBody(tpl, "drop")), http.StatusBadRequest, "Bad Request", "missingPlaceholders")
			requireError(t, e.doT(t, "POST", path, missingBody(tpl, "Skip")), http.StatusBadRequest, "Bad Request", "missingPlaceholders")
			body := missingBody(tpl, "")
			body["missingPlaceholders"] = true
			requireError(t, e.doT(t, "POST", path, body), http.StatusBadRequest, "Bad Request", "missingPlaceholders")
			body = missingBody(tpl, "skip")
			body["recipients"] = body["recipients"].([]map[string]any)[1:]
			requireError(t, e.doT(t, "POST", path, body), http.StatusBadRequest, "Bad Request", "placeholders.city")

			tx := e.transactional(ch, tpl)
			r = e.doT(t, "POST", "/api/v1/"+ch+"/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": "+447700900009", "placeholders": map[string]any{"name": "Ann"}})
			require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
			require.Equal(t, []any{map[string]any{"name": "greeting", "recipients": 1.0}, map[string]any{"name": "city", "recipients": 1.0}}, r.obj()["missingPlaceholders"])
			r = e.doT(t, "POST", "/api/v1/"+ch+"/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": "+447700900009",
				"placeholders": map[string]any{"name": "Ann", "greeting": "Hi", "city": "York"}, "missingPlaceholders": "skip"})
			require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
			require.Equal(t, []any{}, r.obj()["missingPlaceholders"])
			requireError(t, e.doT(t, "POST", "/api/v1/"+ch+"/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": "+447700900009",
				"placeholders": map[string]any{"name": "Ann"}, "missingPlaceholders": "skip"}), http.StatusBadRequest, "Bad Request", "placeholders.greeting")
			requireError(t, e.doT(t, "POST", "/api/v1/"+ch+"/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": "+447700900009",
				"missingPlaceholders": "never"}), http.StatusBadRequest, "Bad Request", "missingPlaceholders")
		})
	}
	r := e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "Hi", "smsSenderId": e.sender, "recipients": recipients(1)})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	require.NotContains(t, r.obj(), "missingPlaceholders")
	require.NotContains(t, r.obj(), "missingPlaceholderPhoneNumbers")
}

// TestCancelledCampaignIsToldInLists: a cancelled campaign is Completed
// with cancelledAt, in GET /campaigns as on its own page; one that ran to
// its end has no cancelledAt.
func TestCancelledCampaignIsToldInLists(t *testing.T) {
	e := newEnv(t)
	tmpl := e.smsTemplate("promo", "Hi")
	var ids []string
	for range 2 {
		r := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": tmpl, "recipients": recipients(2)})
		require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
		ids = append(ids, r.obj()["campaignId"].(string))
	}
	e.wait()
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/campaigns/"+ids[0]+"/cancel", nil).Code)
	r := e.do("GET", "/api/v1/campaigns", nil)
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	seen := 0
	for _, c := range r.obj()["campaigns"].([]any) {
		c := c.(map[string]any)
		switch c["campaignId"] {
		case ids[0]:
			seen++
			require.Equal(t, "Completed", c["status"])
			requireTime(t, c["cancelledAt"])
			require.EqualValues(t, 2, c["failedCount"])
		case ids[1]:
			seen++
			require.Equal(t, "Ready", c["status"])
			require.NotContains(t, c, "cancelledAt")
		}
	}
	require.Equal(t, 2, seen)
	d := e.do("GET", "/api/v1/campaigns/"+ids[0], nil).obj()
	requireTime(t, d["cancelledAt"])
}

// get reads a JSON answer of the API.
func (e *sqlEnv) get(path string) (int, map[string]any) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodGet, e.url+path, nil)
	require.NoError(e.t, err)
	req.Header.Set("X-API-Key", e.key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	var m map[string]any
	require.NoError(e.t, json.Unmarshal(b, &m), "body: %s", b)
	return res.StatusCode, m
}

// TestMissingPlaceholdersOnSQLStores: on SQLite and Postgres, "skip"
// writes only the recipients with every value, the default keeps the
// placeholders as written, and an add-message reports what it lacks.
func TestMissingPlaceholdersOnSQLStores(t *testing.T) {
	for _, store := range sqlStores() {
		t.Run(store.name, func(t *testing.T) {
			e := newSQLEnv(t, store.url(t))
			tmpl := e.created("/api/v1/templates/sms", map[string]any{"name": "visit", "templateContent": "{{greeting}} {{name}}, see you in {{city}}"}, "id")
			contents := func(id any) map[string]string {
				t.Helper()
				out := map[string]string{}
				require.Eventually(t, func() bool {
					_, c := e.get(fmt.Sprintf("/api/v1/campaigns/%s", id))
					return c["status"] == "Ready"
				}, 20*time.Second, 50*time.Millisecond)
				code, m := e.get(fmt.Sprintf("/api/v1/messages?campaignId=%s", id))
				require.Equal(t, http.StatusOK, code, "%v", m)
				for _, msg := range m["messages"].([]any) {
					msg := msg.(map[string]any)
					out[msg["phoneNumber"].(string)] = msg["messageContent"].(string)
				}
				return out
			}
			code, m := e.post("/api/v1/sms/promotional", missingBody(tmpl, "skip"))
			require.Equal(t, http.StatusAccepted, code, "%v", m)
			require.Equal(t, []any{"+447700900002", "+447700900003"}, m["missingPlaceholderPhoneNumbers"])
			require.Equal(t, map[string]string{"447700900001": "Hello Ann, see you in Leeds"}, contents(m["campaignId"]))

			code, m = e.post("/api/v1/sms/promotional", missingBody(tmpl, "keep"))
			require.Equal(t, http.StatusAccepted, code, "%v", m)
			require.Equal(t, []any{map[string]any{"name": "name", "recipients": 1.0}, map[string]any{"name": "city", "recipients": 2.0}}, m["missingPlaceholders"])
			require.Equal(t, map[string]string{"447700900001": "Hello Ann, see you in Leeds", "447700900002": "Hello Bob, see you in {{city}}",
				"447700900003": "Hello {{name}}, see you in {{city}}"}, contents(m["campaignId"]))

			tx := e.created("/api/v1/sms/campaigns", map[string]any{"name": "tx", "templateId": tmpl}, "campaignId")
			code, m = e.post(fmt.Sprintf("/api/v1/sms/campaigns/%s/messages", tx), map[string]any{"phoneNumber": "+447700900009", "placeholders": map[string]any{"greeting": "Hi", "name": "Ann"}})
			require.Equal(t, http.StatusAccepted, code, "%v", m)
			require.Equal(t, []any{map[string]any{"name": "city", "recipients": 1.0}}, m["missingPlaceholders"])
			code, m = e.post(fmt.Sprintf("/api/v1/sms/campaigns/%s/messages", tx), map[string]any{"phoneNumber": "+447700900009", "missingPlaceholders": "skip"})
			require.Equal(t, http.StatusBadRequest, code, "%v", m)
			require.Contains(t, m["validationErrors"], "placeholders.greeting", "%v", m)
		})
	}
}
