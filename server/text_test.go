package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInvalidTextIsABadRequest: a JSON string holding invalid UTF-8 or an
// escaped lone surrogate is a 400 naming the field, in the bodies of the
// API and of the admin API, decoded whole or as a stream, and nothing is
// stored; a surrogate pair is text and is kept.
func TestInvalidTextIsABadRequest(t *testing.T) {
	e := newEnv(t)
	tpl := e.smsTemplate("greeting", "Hi {{name}}")
	camp := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": tpl, "recipients": recipients(1)}).obj()["campaignId"]
	e.wait()
	cases := []struct {
		name, method, path, body, field string
		admin                           bool
	}{
		{"invalid bytes, admin", "POST", "/admin/v1/companies", "{\"name\":\"a\xff\xfeb\"}", "name", true},
		{"lone high surrogate, admin", "POST", "/admin/v1/companies", `{"name":"a\ud800b"}`, "name", true},
		{"lone low surrogate", "POST", "/api/v1/templates/sms", `{"name":"x","templateContent":"a\udc00"}`, "templateContent", false},
		{"reversed pair", "POST", "/api/v1/templates/sms", `{"name":"\ude00\ud83d","templateContent":"a"}`, "name", false},
		{"key name", "POST", "/admin/v1/companies/" + e.id.String() + "/api-keys", "{\"name\":\"k\xc3\"}", "name", true},
		{"stream, placeholder", "POST", "/api/v1/sms/promotional",
			`{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+33612345678","placeholders":{"name":"\ud800"}}]}`, "recipients[0].placeholders.name", false},
		{"stream, bytes", "POST", "/api/v1/sms/promotional",
			"{\"templateId\":\"" + tpl + "\",\"recipients\":[{\"phoneNumber\":\"+33612345678\",\"placeholders\":{\"name\":\"\xff\"}}]}", "recipients[0].placeholders.name", false},
		{"start body", "POST", "/api/v1/campaigns/" + camp.(string) + "/start", `{"sendAt":"2026-01-01T00:00:00Z\udfff"}`, "sendAt", false},
		{"config string", "POST", "/api/v1/templates/chat",
			`{"name":"c","templateContent":"x","messageType":1,"chatServiceId":1,"typeSpecificConfig":"{\"title\":\"\\ud800\"}"}`, "typeSpecificConfig", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []reqOpt
			if c.admin {
				opts = append(opts, admin())
			}
			m := requireError(t, e.doT(t, c.method, c.path, c.body, opts...), http.StatusBadRequest, "Bad Request", c.field)
			require.Contains(t, m["message"], "valid text")
		})
	}
	companies := e.do("GET", "/admin/v1/companies", nil, admin()).obj()["companies"].([]any)
	require.Len(t, companies, 1, "nothing stored")
	require.Len(t, e.do("GET", "/api/v1/templates", nil).obj()["templates"].([]any), 1, "nothing stored")

	r := e.do("POST", "/admin/v1/companies", `{"name":"smile \ud83d\ude00"}`, admin())
	require.Equal(t, http.StatusCreated, r.Code, "a surrogate pair is text: %s", r.Body)
	require.Equal(t, "smile 😀", r.obj()["name"])
}
