package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// The recipients of a sending request are read token by token; these
// cases pin what that reading accepts beside the plain form.
func TestSendBodyForms(t *testing.T) {
	// Off the documented schema on purpose: the request checker is off.
	e := newEnv(t, func(c *envConfig) { c.noVerify = true })
	tpl := e.smsTemplate("forms", "Hi {{name}} {{n}} {{b}} [{{gone}}]")
	body := `{"templateId":"` + tpl + `","unknown":{"nested":[1,{"a":null}]},"recipients":[
		{"PhoneNumber":"+447700900001","placeholders":{"name":"Ada","n":42,"b":true,"gone":null}},
		{"phoneNumber":"+447700900002","placeholders":{"name":"first","name":"second","n":-1.5e3,"b":false}},
		{"phoneNumber":"+447700900003","extra":"skipped","placeholders":{"name":"\u00c9mile \"E\"","n":"7","b":"x"}},
		{"phoneNumber":null,"placeholders":null}]}`
	r := e.do("POST", "/api/v1/sms/promotional", body)
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	out := r.obj()
	require.EqualValues(t, 3, out["messageCount"])
	require.EqualValues(t, 1, out["skippedCount"], "a null phone number is an invalid one")
	e.wait()
	want := map[string]string{
		"447700900001": "Hi Ada 42 true [{{gone}}]",
		"447700900002": "Hi second -1.5e3 false [{{gone}}]",
		"447700900003": `Hi Émile "E" 7 x [{{gone}}]`,
	}
	for p, content := range want {
		ms, _, err := e.store.ListMessages(context.Background(), e.id, messaging.MessageFilter{Phone: p, PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
		require.NoError(t, err)
		require.Len(t, ms, 1, p)
		require.Equal(t, content, ms[0].Content, p)
	}
}

func TestSendBodyRefusals(t *testing.T) {
	e := newEnv(t, func(c *envConfig) { c.noVerify = true })
	tpl := e.smsTemplate("refusals", "Hi {{name}}")
	cases := []struct {
		name, body, field string
	}{
		{"invalid UTF-8", "{\"templateId\":\"" + tpl + "\",\"recipients\":[{\"phoneNumber\":\"+447700900001\",\"placeholders\":{\"name\":\"\xff\"}}]}", ""},
		{"truncated recipient", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001"`, ""},
		{"placeholder object", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001","placeholders":{"name":{}}}]}`, "recipients[0].placeholders.name"},
		{"placeholders not an object", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001","placeholders":[]}]}`, "recipients[0].placeholders"},
		{"external id a number", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001"},{"phoneNumber":"+447700900002","externalUserId":7}]}`, "recipients[1].externalUserId"},
		{"trailing data", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001"}]} {}`, ""},
		{"recipients a string", `{"templateId":"` + tpl + `","recipients":"+447700900001"}`, "recipients"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, e.doT(t, "POST", "/api/v1/sms/promotional", c.body), http.StatusBadRequest, "Bad Request", c.field)
			require.Equal(t, 0, e.pending(e.id), "a refused request admits nothing")
		})
	}
}
