package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
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
		{"invalid UTF-8 in a phone number", "{\"templateId\":\"" + tpl + "\",\"recipients\":[{\"phoneNumber\":\"+44770090000\xc3\"}]}", ""},
		{"invalid UTF-8 in a placeholder name", "{\"templateId\":\"" + tpl + "\",\"recipients\":[{\"phoneNumber\":\"+447700900001\",\"placeholders\":{\"n\xffme\":\"x\"}}]}", ""},
		{"invalid UTF-8 in a field name", "{\"templateId\":\"" + tpl + "\",\"recipients\":[{\"ph\xffne\":\"x\"}]}", ""},
		{"invalid escape in a value", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001\x"}]}`, ""},
		{"invalid escape in a placeholder name", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001","placeholders":{"n\qame":"x"}}]}`, ""},
		{"lone surrogate escape", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001","placeholders":{"name":"\ud800"}}]}`, ""},
		{"placeholder an array", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001","placeholders":{"ok":1,"name":[1]}}]}`, "recipients[0].placeholders.name"},
		{"placeholders a number", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001","placeholders":12}]}`, "recipients[0].placeholders"},
		{"phone number an object", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":{"a":1}}]}`, "recipients[0].phoneNumber"},
		{"recipient a number", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001"},3]}`, "recipients[1]"},
		{"recipients null", `{"templateId":"` + tpl + `","recipients":null}`, "recipients"},
		{"recipients twice", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001"}],"recipients":[{"phoneNumber":"+447700900002"}]}`, "recipients"},
		{"request placeholders invalid", `{"templateId":"` + tpl + `","placeholders":{"name":{}},"recipients":[{"phoneNumber":"+447700900001"}]}`, "placeholders.name"},
		{"missing colon", `{"templateId":"` + tpl + `","recipients":[{"phoneNumber" "+447700900001"}]}`, ""},
		{"no body", ``, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, e.doT(t, "POST", "/api/v1/sms/promotional", c.body), http.StatusBadRequest, "Bad Request", c.field)
			require.Equal(t, 0, e.pending(e.id), "a refused request admits nothing")
		})
	}
}

// The strings of many recipients are gathered and made strings a batch at
// a time; every recipient still gets its own values, escaped or not.
func TestSendBodyManyRecipients(t *testing.T) {
	e := newEnv(t, func(c *envConfig) { c.noVerify = true })
	tpl := e.smsTemplate("many", "Hi {{name}} {{num}} {{flag}}")
	const n = 3000 // about 150 KB of strings: several batches
	var b strings.Builder
	b.WriteString(`{"templateId":"` + tpl + `","recipients":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%7 == 0 { // escapes in names and values
			fmt.Fprintf(&b, `{"phoneNumber":"\u002b4477009%05d","externalUserId":"us\u0065r-%d","placeholders":{"n\u0061me":"N\u00e9 \"%d\"","num":%d,"flag":%t}}`, i, i, i, i, i%2 == 0)
			continue
		}
		fmt.Fprintf(&b, `{"phoneNumber":"+4477009%05d","externalUserId":"user-%d","placeholders":{"name":"Né \"%d\"","num":%d,"flag":%t}}`, i, i, i, i, i%2 == 0)
	}
	b.WriteString("]}")
	r := e.do("POST", "/api/v1/sms/promotional", b.String())
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	require.EqualValues(t, n, r.obj()["messageCount"])
	e.wait()
	got := map[string]messaging.Message{}
	for page := 1; ; page++ {
		ms, total, err := e.store.ListMessages(context.Background(), e.id, messaging.MessageFilter{PageRequest: messaging.PageRequest{Page: page, PageSize: messaging.MaxPageSize}})
		require.NoError(t, err)
		require.Equal(t, n, total)
		for _, m := range ms {
			got[m.Phone] = m
		}
		if len(ms) < messaging.MaxPageSize {
			break
		}
	}
	require.Len(t, got, n)
	for i := range n {
		p := fmt.Sprintf("4477009%05d", i)
		m, ok := got[p]
		require.True(t, ok, p)
		require.Equal(t, fmt.Sprintf(`Hi Né "%d" %d %t`, i, i, i%2 == 0), m.Content, p)
		require.Equal(t, fmt.Sprintf("user-%d", i), m.ExternalUserID, p)
	}
}

// Names given twice: as encoding/json reads them, the last value counts,
// except that null leaves a recipient's string field as it was; in a
// placeholders object a later null takes the earlier value away, and a
// later placeholders object (or null) replaces the earlier one.
func TestSendBodyRepeatedNames(t *testing.T) {
	e := newEnv(t, func(c *envConfig) { c.noVerify = true })
	tpl := e.smsTemplate("repeats", "Hi {{name}} {{n}}")
	body := `{"templateId":"0190f5c0-0000-7000-8000-000000000000","templateId":"` + tpl + `","recipients":[
		{"phoneNumber":"+447700900001","phoneNumber":null,"externalUserId":"a","externalUserId":"b","placeholders":{"name":"x","name":null,"n":"1","n":"2"}},
		{"phoneNumber":"+447700900002","placeholders":{"name":"gone"},"placeholders":{"name":"kept"}},
		{"phoneNumber":"+447700900003","placeholders":{"name":"gone"},"placeholders":null}]}`
	r := e.do("POST", "/api/v1/sms/promotional", body)
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	require.EqualValues(t, 3, r.obj()["messageCount"])
	e.wait()
	want := map[string][2]string{
		"447700900001": {"Hi {{name}} 2", "b"},
		"447700900002": {"Hi kept {{n}}", ""},
		"447700900003": {"Hi {{name}} {{n}}", ""},
	}
	for p, w := range want {
		ms, _, err := e.store.ListMessages(context.Background(), e.id, messaging.MessageFilter{Phone: p, PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
		require.NoError(t, err)
		require.Len(t, ms, 1, p)
		require.Equal(t, w[0], ms[0].Content, p)
		require.Equal(t, w[1], ms[0].ExternalUserID, p)
	}
}

// Request-level and add-message placeholders follow the recipients' rules:
// a null value is no value, so the placeholder stays in the text.
func TestPlaceholderNullIsNoValue(t *testing.T) {
	e := newEnv(t, func(c *envConfig) { c.noVerify = true })
	tpl := e.smsTemplate("nulls", "Hi {{name}} {{n}}")
	r := e.do("POST", "/api/v1/sms/promotional", `{"templateId":"`+tpl+`","placeholders":{"name":null,"n":"1"},"recipients":[{"phoneNumber":"+447700900001"}]}`)
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	tx := e.transactional("sms", tpl)
	r = e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", `{"phoneNumber":"+447700900002","placeholders":{"name":"Ada","n":null}}`)
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	e.wait()
	for p, content := range map[string]string{"447700900001": "Hi {{name}} 1", "447700900002": "Hi Ada {{n}}"} {
		ms, _, err := e.store.ListMessages(context.Background(), e.id, messaging.MessageFilter{Phone: p, PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
		require.NoError(t, err)
		require.Len(t, ms, 1, p)
		require.Equal(t, content, ms[0].Content, p)
	}
}

// Past the recipient limit, only a further element is "Too many
// recipients"; an array that breaks off or goes wrong there is malformed.
func TestSendBodyAtTheLimit(t *testing.T) {
	e := newEnv(t, withLimits(campaignLimits(0, 2)), func(c *envConfig) { c.noVerify = true })
	tpl := e.smsTemplate("limit", "Hi")
	head := `{"templateId":"` + tpl + `","recipients":[{"phoneNumber":"+447700900001"},{"phoneNumber":"+447700900002"}`
	cases := []struct{ name, body, error string }{
		{"a third recipient", head + `,{"phoneNumber":"+447700900003"}]}`, "Too many recipients"},
		{"a third value of any kind", head + `,7]}`, "Too many recipients"},
		{"a comma and the end", head + `,]}`, "Bad Request"},
		{"the body ends", head, "Bad Request"},
		{"the body ends after a comma", head + `,`, "Bad Request"},
		{"a missing comma", head + ` {"phoneNumber":"+447700900003"}]}`, "Bad Request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, e.doT(t, "POST", "/api/v1/sms/promotional", c.body), http.StatusBadRequest, c.error, "")
			require.Equal(t, 0, e.campaignCount(e.id))
		})
	}
	r := e.do("POST", "/api/v1/sms/promotional", head+`]}`)
	require.Equal(t, http.StatusAccepted, r.Code, "at the limit: body: %s", r.Body)
}
