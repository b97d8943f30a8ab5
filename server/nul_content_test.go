package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
	"github.com/heraldhq/herald/survey"
)

// sqlEnv is a server over real TCP on a SQL store, with one active company
// ready to send.
type sqlEnv struct {
	t      *testing.T
	url    string
	key    string
	sender int64
	chat   int64
}

func newSQLEnv(t *testing.T, rawURL string) *sqlEnv {
	t.Helper()
	ctx := t.Context()
	st, err := sqlstore.Open(ctx, rawURL, sqlstore.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	svc := must(campaign.New(campaign.Config{Store: st}))
	t.Cleanup(svc.Close)
	acc := must(accounts.New(accounts.Config{Store: st}))
	srv := httptest.NewServer(must(server.New(server.Config{Accounts: acc, Campaigns: svc, Surveys: must(survey.New(survey.Config{Store: st})), AdminToken: adminToken})))
	t.Cleanup(srv.Close)
	c, err := acc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, acc.SetCompanyActive(ctx, c.ID, true))
	key, err := acc.GenerateAPIKey(ctx, c.ID)
	require.NoError(t, err)
	sd, err := acc.RegisterSMSSender(ctx, c.ID, "ACME")
	require.NoError(t, err)
	require.NoError(t, acc.ApproveSMSSender(ctx, sd.ID))
	cs, err := acc.AddChatService(ctx, c.ID, "Acme", "svc-acme")
	require.NoError(t, err)
	return &sqlEnv{t: t, url: srv.URL, key: key, sender: sd.ID, chat: cs.ID}
}

// post sends a JSON body (raw when a string) and returns the status and
// the decoded answer.
func (e *sqlEnv) post(path string, body any) (int, map[string]any) {
	e.t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		require.NoError(e.t, err)
		raw = string(b)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.url+path, strings.NewReader(raw))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/json")
	if strings.HasPrefix(path, "/admin/") {
		req.Header.Set("Authorization", "Bearer "+adminToken)
	} else {
		req.Header.Set("X-API-Key", e.key)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	var m map[string]any
	require.NoError(e.t, json.Unmarshal(b, &m), "body: %s", b)
	return res.StatusCode, m
}

// created posts and returns the id field of a 201.
func (e *sqlEnv) created(path string, body any, idField string) any {
	e.t.Helper()
	code, m := e.post(path, body)
	require.Equal(e.t, http.StatusCreated, code, "%v", m)
	return m[idField]
}

func sqlStores() []struct {
	name string
	url  func(testing.TB) string
} {
	return []struct {
		name string
		url  func(testing.TB) string
	}{
		{"sqlite", func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "herald.db") }},
		{"postgres", pgtest.SchemaURL},
	}
}

// TestNULIsABadRequest sends "\u0000" (and an escape character) in the
// text fields of every kind of request, on SQLite and Postgres, and
// expects a 400 naming the field, never a 500.
func TestNULIsABadRequest(t *testing.T) {
	for _, store := range sqlStores() {
		t.Run(store.name, func(t *testing.T) {
			e := newSQLEnv(t, store.url(t))
			smsTmpl := e.created("/api/v1/templates/sms", map[string]any{"name": "otp", "templateContent": "Code {{code}}"}, "id")
			campaignID := e.created("/api/v1/sms/campaigns", map[string]any{"name": "otp", "templateId": smsTmpl}, "campaignId")
			_, company := e.post("/admin/v1/companies", map[string]any{"name": "Beta"})
			companyID := company["id"]
			item := `{"title":"Card","imageUrl":"https://cdn.example.com/a.png","buttonText":"Buy","buttonUrl":"https://shop.example.com/"}`
			for _, bad := range []string{`\u0000`, `\u001b`} {
				cases := []struct {
					name, path, body, field string
				}{
					{"template name", "/api/v1/templates/sms", `{"name":"a` + bad + `","templateContent":"Hi"}`, "name"},
					{"template content", "/api/v1/templates/sms", `{"name":"a","templateContent":"Hi` + bad + `"}`, "templateContent"},
					{"template description", "/api/v1/templates/sms", `{"name":"a","templateContent":"Hi","description":"` + bad + `"}`, "description"},
					{"chat template carousel title", "/api/v1/templates/chat", fmt.Sprintf(`{"name":"c","chatServiceId":%d,"messageType":5,"typeSpecificConfig":{"items":[%s,%s]}}`,
						e.chat, strings.Replace(item, "Card", "Card"+bad, 1), item), "typeSpecificConfig.items[0].title"},
					{"chat template fallback", "/api/v1/templates/chat", fmt.Sprintf(`{"name":"c","chatServiceId":%d,"messageType":1,"templateContent":"Hi","smsFallbackEnabled":true,"smsFallbackSenderId":%d,"smsFallbackTemplateContent":"Hi%s"}`,
						e.chat, e.sender, bad), "smsFallbackTemplateContent"},
					{"campaign name", "/api/v1/sms/campaigns", fmt.Sprintf(`{"name":"c%s","templateId":%q}`, bad, smsTmpl), "name"},
					{"campaign description", "/api/v1/sms/campaigns", fmt.Sprintf(`{"name":"c","description":"%s","templateId":%q}`, bad, smsTmpl), "description"},
					{"add-message placeholder", fmt.Sprintf("/api/v1/sms/campaigns/%s/messages", campaignID), `{"phoneNumber":"+447700900001","placeholders":{"code":"1` + bad + `"}}`, "placeholders.code"},
					{"add-message externalUserId", fmt.Sprintf("/api/v1/sms/campaigns/%s/messages", campaignID), `{"phoneNumber":"+447700900001","externalUserId":"` + bad + `"}`, "externalUserId"},
					{"direct sms text", "/api/v1/sms/send", fmt.Sprintf(`{"messageContent":"Hi%s","smsSenderId":%d,"recipients":[{"phoneNumber":"+447700900001"}]}`, bad, e.sender), "messageContent"},
					{"direct chat externalUserId", "/api/v1/chat/send-text", fmt.Sprintf(`{"messageContent":"Hi","chatServiceId":%d,"recipients":[{"phoneNumber":"+447700900001","externalUserId":"u%s"}]}`, e.chat, bad), "recipients[0].externalUserId"},
					{"direct chat fallback", "/api/v1/chat/send-text", fmt.Sprintf(`{"messageContent":"Hi","chatServiceId":%d,"smsFallbackText":"%s","smsFallbackSenderId":%d,"recipients":[{"phoneNumber":"+447700900001"}]}`, e.chat, bad, e.sender), "smsFallbackText"},
					{"bulk recipient placeholder", "/api/v1/sms/promotional", fmt.Sprintf(`{"templateId":%q,"recipients":[{"phoneNumber":"+447700900001"},{"phoneNumber":"+447700900002","placeholders":{"code":"%s"}}]}`, smsTmpl, bad), "recipients[1].placeholders.code"},
					{"bulk request placeholder", "/api/v1/sms/promotional", fmt.Sprintf(`{"templateId":%q,"placeholders":{"code":"%s"},"recipients":[{"phoneNumber":"+447700900001"}]}`, smsTmpl, bad), "placeholders.code"},
					{"admin company name", "/admin/v1/companies", `{"name":"B` + bad + `"}`, "name"},
					{"admin chat service brandName", fmt.Sprintf("/admin/v1/companies/%s/chat-services", companyID), `{"brandName":"B` + bad + `","providerServiceId":"p"}`, "brandName"},
					{"admin chat service providerServiceId", fmt.Sprintf("/admin/v1/companies/%s/chat-services", companyID), `{"brandName":"B","providerServiceId":"p` + bad + `"}`, "providerServiceId"},
					{"admin sms sender", fmt.Sprintf("/admin/v1/companies/%s/sms-senders", companyID), `{"senderId":"AC` + bad + `"}`, "senderId"},
				}
				for _, tc := range cases {
					t.Run(tc.name+"/"+bad, func(t *testing.T) {
						e.t = t
						code, m := e.post(tc.path, tc.body)
						require.Equal(t, http.StatusBadRequest, code, "%v", m)
						require.Equal(t, "Bad Request", m["error"], "%v", m)
						require.Contains(t, m["validationErrors"], tc.field, "%v", m)
					})
				}
			}
		})
	}
}

// TestRenderedLengthThroughHTTP: on both stores a bulk recipient whose
// message would exceed 1,600 characters once rendered is skipped, the
// others are queued, and an add-message that would exceed it is a 400.
func TestRenderedLengthThroughHTTP(t *testing.T) {
	for _, store := range sqlStores() {
		t.Run(store.name, func(t *testing.T) {
			e := newSQLEnv(t, store.url(t))
			tmpl := e.created("/api/v1/templates/sms", map[string]any{"name": "x320", "templateContent": strings.Repeat("{{x}}", 320)}, "id")
			code, m := e.post("/api/v1/sms/promotional", map[string]any{"templateId": tmpl, "recipients": []map[string]any{
				{"phoneNumber": "+447700900001", "placeholders": map[string]any{"x": strings.Repeat("a", 100)}},
				{"phoneNumber": "+447700900002", "placeholders": map[string]any{"x": "abcde"}},
				{"phoneNumber": "12-34", "placeholders": map[string]any{"x": "abcde"}},
			}})
			require.Equal(t, http.StatusAccepted, code, "%v", m)
			require.EqualValues(t, 1, m["messageCount"], "%v", m)
			require.EqualValues(t, 2, m["skippedCount"], "%v", m)
			require.Equal(t, []any{"+447700900001"}, m["contentTooLong"], "the number as sent")
			require.Equal(t, []any{"12-34"}, m["invalidPhoneNumbers"])
			require.Contains(t, m["message"], "1 invalid phone number (see invalidPhoneNumbers) and 1 recipient whose message would be too long (see contentTooLong) skipped")

			campaignID := e.created("/api/v1/sms/campaigns", map[string]any{"name": "t", "templateId": tmpl}, "campaignId")
			code, m = e.post(fmt.Sprintf("/api/v1/sms/campaigns/%s/messages", campaignID),
				map[string]any{"phoneNumber": "+447700900001", "placeholders": map[string]any{"x": "abcdef"}}) // 1,920 characters
			require.Equal(t, http.StatusBadRequest, code, "%v", m)
			require.Contains(t, m["validationErrors"], "placeholders.x", "%v", m)
		})
	}
}
