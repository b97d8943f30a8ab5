package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	templateKeys     = []string{"id", "name", "description", "messageType", "channelType", "templateContent", "validityPeriod", "createdAt", "updatedAt"}
	smsTemplateKeys  = append(append([]string(nil), templateKeys...), "smsSenderId")
	chatTemplateKeys = append(append([]string(nil), templateKeys...), "chatServiceId", "typeSpecificConfig",
		"smsFallbackEnabled", "smsFallbackTemplateContent", "smsFallbackSenderId")
)

// requireTime asserts an RFC 3339 UTC time with milliseconds.
func requireTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "time expected, got %v", v)
	require.Regexp(t, `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3,}Z$`, s)
	tm, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return tm
}

func TestSMSTemplateLifecycle(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/templates/sms", map[string]any{"name": "Welcome", "templateContent": "Hi {{name}}"})
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	m := r.obj()
	requireKeys(t, m, smsTemplateKeys...)
	id := m["id"].(string)
	require.Equal(t, "/api/v1/templates/"+id, r.Header.Get("Location"))
	require.Equal(t, "Welcome", m["name"])
	require.Nil(t, m["description"])
	require.Equal(t, float64(1), m["messageType"])
	require.Equal(t, "Smpp", m["channelType"])
	require.Equal(t, "Hi {{name}}", m["templateContent"])
	require.Nil(t, m["smsSenderId"])
	requireTime(t, m["createdAt"])
	requireTime(t, m["updatedAt"])

	got := e.do("GET", "/api/v1/templates/"+id, nil)
	require.Equal(t, http.StatusOK, got.Code)
	require.Equal(t, m, got.obj())

	r = e.do("PUT", "/api/v1/templates/"+id, map[string]any{"name": "Welcome 2", "description": "greeting",
		"templateContent": "Hello {{name}}", "smsSenderId": e.sender, "messageType": "SimpleText"})
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	u := r.obj()
	requireKeys(t, u, smsTemplateKeys...)
	require.Equal(t, id, u["id"])
	require.Equal(t, "Welcome 2", u["name"])
	require.Equal(t, "greeting", u["description"])
	require.Equal(t, "Hello {{name}}", u["templateContent"])
	require.Equal(t, float64(e.sender), u["smsSenderId"])
	require.Equal(t, m["createdAt"], u["createdAt"])

	list := e.do("GET", "/api/v1/templates", nil)
	require.Equal(t, http.StatusOK, list.Code)
	lm := list.obj()
	requireKeys(t, lm, "templates", "totalCount", "page", "pageSize", "totalPages")
	require.Equal(t, float64(1), lm["totalCount"])
	require.Equal(t, float64(1), lm["page"])
	require.Equal(t, float64(20), lm["pageSize"])
	require.Equal(t, float64(1), lm["totalPages"])
	require.Equal(t, u, lm["templates"].([]any)[0])

	del := e.do("DELETE", "/api/v1/templates/"+id, nil)
	require.Equal(t, http.StatusNoContent, del.Code)
	require.Empty(t, del.Body)
	requireError(t, e.do("GET", "/api/v1/templates/"+id, nil), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("DELETE", "/api/v1/templates/"+id, nil), http.StatusNotFound, "Not Found", "")
}

func TestChatTemplateConfigAsStringOrObject(t *testing.T) {
	e := newEnv(t)
	config := map[string]any{"buttonText": "Open", "buttonUrl": "https://example.com/{{code}}"}
	asString, err := json.Marshal(config)
	require.NoError(t, err)
	for name, cfg := range map[string]any{"object": config, "string": string(asString)} {
		t.Run(name, func(t *testing.T) {
			r := e.doT(t, "POST", "/api/v1/templates/chat", map[string]any{"name": "button " + name, "messageType": 3,
				"templateContent": "Your code", "chatServiceId": e.chat, "typeSpecificConfig": cfg,
				"smsFallbackEnabled": true, "smsFallbackTemplateContent": "Code {{code}}", "smsFallbackSenderId": e.sender})
			require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
			m := r.obj()
			requireKeys(t, m, chatTemplateKeys...)
			require.Equal(t, "Chat", m["channelType"])
			require.Equal(t, float64(3), m["messageType"])
			require.Equal(t, float64(e.chat), m["chatServiceId"])
			require.Equal(t, true, m["smsFallbackEnabled"])
			require.Equal(t, "Code {{code}}", m["smsFallbackTemplateContent"])
			require.Equal(t, float64(e.sender), m["smsFallbackSenderId"])
			s, ok := m["typeSpecificConfig"].(string)
			require.True(t, ok, "typeSpecificConfig is answered as a string")
			var back map[string]any
			require.NoError(t, json.Unmarshal([]byte(s), &back))
			require.Equal(t, config, back)
		})
	}
	r := e.do("POST", "/api/v1/templates/chat", map[string]any{"name": "plain", "messageType": "SimpleText",
		"templateContent": "Hi", "chatServiceId": e.chat, "typeSpecificConfig": nil})
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	m := r.obj()
	require.Nil(t, m["typeSpecificConfig"])
	require.Nil(t, m["smsFallbackTemplateContent"])
	require.Nil(t, m["smsFallbackSenderId"])
	require.Equal(t, false, m["smsFallbackEnabled"])
	require.Equal(t, float64(1), m["messageType"])

	// PUT takes the chat creation fields and validates them the same way.
	id := m["id"].(string)
	r = e.do("PUT", "/api/v1/templates/"+id, map[string]any{"name": "plain", "messageType": 6, "templateContent": "Pick",
		"chatServiceId": e.chat, "typeSpecificConfig": map[string]any{"options": []map[string]string{{"optionText": "A", "optionValue": "a"}}}})
	requireError(t, r, http.StatusBadRequest, "Bad Request", "typeSpecificConfig.options")
	r = e.do("PUT", "/api/v1/templates/"+id, map[string]any{"name": "plain", "messageType": 6, "templateContent": "Pick",
		"chatServiceId": e.chat, "typeSpecificConfig": `{"options":[{"optionText":"A","optionValue":"a"},{"optionText":"B","optionValue":"b"}]}`})
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, float64(6), r.obj()["messageType"])
}

func TestTemplateErrors(t *testing.T) {
	e := newEnv(t)
	other := e.newCompany(t, "Other")
	theirs := e.smsTemplate("theirs", "x", withKey(other.key))
	mine := e.smsTemplate("mine", "x")
	chat := e.chatTemplate("chat", "x", nil)
	unapproved, err := e.acc.RegisterSMSSender(t.Context(), e.id, "WAITING")
	require.NoError(t, err)

	chatBody := func(kv ...any) map[string]any {
		b := map[string]any{"name": "c", "messageType": 1, "templateContent": "x", "chatServiceId": e.chat}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	cases := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		error  string
		field  string
	}{
		{"duplicate name", "POST", "/api/v1/templates/sms", map[string]any{"name": "mine", "templateContent": "y"}, 400, "Bad Request", "name"},
		{"name unique across channels", "POST", "/api/v1/templates/chat", chatBody("name", "mine"), 400, "Bad Request", "name"},
		{"missing content", "POST", "/api/v1/templates/sms", map[string]any{"name": "n"}, 400, "Bad Request", "templateContent"},
		{"content too long", "POST", "/api/v1/templates/sms", map[string]any{"name": "n", "templateContent": strings.Repeat("c", 1601)}, 400, "Bad Request", "templateContent"},
		{"description too long", "POST", "/api/v1/templates/sms", map[string]any{"name": "n", "templateContent": "x", "description": strings.Repeat("d", 501)}, 400, "Bad Request", "description"},
		{"sms with a chat type", "POST", "/api/v1/templates/sms", map[string]any{"name": "n", "templateContent": "x", "messageType": 3}, 400, "Bad Request", "messageType"},
		{"unknown sms sender", "POST", "/api/v1/templates/sms", map[string]any{"name": "n", "templateContent": "x", "smsSenderId": 9999}, 400, "Bad Request", "smsSenderId"},
		{"unapproved sms sender", "POST", "/api/v1/templates/sms", map[string]any{"name": "n", "templateContent": "x", "smsSenderId": unapproved.ID}, 400, "Bad Request", "smsSenderId"},
		{"another company's sender", "POST", "/api/v1/templates/sms", map[string]any{"name": "n", "templateContent": "x", "smsSenderId": other.sender}, 400, "Bad Request", "smsSenderId"},
		{"unknown message type name", "POST", "/api/v1/templates/chat", chatBody("messageType", "Hologram"), 400, "Bad Request", "messageType"},
		{"message type out of range", "POST", "/api/v1/templates/chat", chatBody("messageType", 9), 400, "Bad Request", "messageType"},
		{"message type not an integer", "POST", "/api/v1/templates/chat", chatBody("messageType", 1.5), 400, "Bad Request", "messageType"},
		{"message type missing", "POST", "/api/v1/templates/chat", map[string]any{"name": "c", "templateContent": "x", "chatServiceId": e.chat}, 400, "Bad Request", "messageType"},
		{"another company's chat service", "POST", "/api/v1/templates/chat", chatBody("chatServiceId", other.chat), 400, "Bad Request", "chatServiceId"},
		{"chat service missing", "POST", "/api/v1/templates/chat", chatBody("chatServiceId", nil), 400, "Bad Request", "chatServiceId"},
		{"config not JSON", "POST", "/api/v1/templates/chat", chatBody("messageType", 2, "typeSpecificConfig", "{nope"), 400, "Bad Request", "typeSpecificConfig"},
		{"config an array", "POST", "/api/v1/templates/chat", chatBody("messageType", 2, "typeSpecificConfig", []int{1}), 400, "Bad Request", "typeSpecificConfig"},
		{"config field of the wrong type", "POST", "/api/v1/templates/chat", chatBody("messageType", 2, "typeSpecificConfig", map[string]any{"imageUrl": 5}), 400, "Bad Request", "typeSpecificConfig.imageUrl"},
		{"image url not https", "POST", "/api/v1/templates/chat", chatBody("messageType", 2, "typeSpecificConfig", map[string]any{"imageUrl": "http://example.com/a.png"}), 400, "Bad Request", "typeSpecificConfig.imageUrl"},
		{"fallback sender missing", "POST", "/api/v1/templates/chat", chatBody("smsFallbackEnabled", true, "smsFallbackTemplateContent", "x"), 400, "Bad Request", "smsFallbackSenderId"},
		{"fallback sender unapproved", "POST", "/api/v1/templates/chat", chatBody("smsFallbackEnabled", true, "smsFallbackTemplateContent", "x", "smsFallbackSenderId", unapproved.ID), 400, "Bad Request", "smsFallbackSenderId"},
		{"fallback sender unknown", "POST", "/api/v1/templates/chat", chatBody("smsFallbackEnabled", true, "smsFallbackTemplateContent", "x", "smsFallbackSenderId", 9999), 400, "Bad Request", "smsFallbackSenderId"},
		{"fallback sender of another company", "POST", "/api/v1/templates/chat", chatBody("smsFallbackEnabled", true, "smsFallbackTemplateContent", "x", "smsFallbackSenderId", other.sender), 400, "Bad Request", "smsFallbackSenderId"},
		{"fallback content missing", "POST", "/api/v1/templates/chat", chatBody("smsFallbackEnabled", true, "smsFallbackSenderId", e.sender), 400, "Bad Request", "smsFallbackTemplateContent"},
		{"fallback content blank", "POST", "/api/v1/templates/chat", chatBody("smsFallbackEnabled", true, "smsFallbackTemplateContent", "  ", "smsFallbackSenderId", e.sender), 400, "Bad Request", "smsFallbackTemplateContent"},
		{"fallback content too long", "POST", "/api/v1/templates/chat", chatBody("smsFallbackEnabled", true, "smsFallbackTemplateContent", strings.Repeat("f", 1601), "smsFallbackSenderId", e.sender), 400, "Bad Request", "smsFallbackTemplateContent"},
		{"name of the wrong type", "POST", "/api/v1/templates/sms", map[string]any{"name": 5, "templateContent": "x"}, 400, "Bad Request", "name"},
		{"fallback flag of the wrong type", "POST", "/api/v1/templates/chat", chatBody("smsFallbackEnabled", "yes"), 400, "Bad Request", "smsFallbackEnabled"},
		{"malformed JSON", "POST", "/api/v1/templates/sms", `{"name": "n",`, 400, "Bad Request", ""},
		{"not an object", "POST", "/api/v1/templates/sms", `["n"]`, 400, "Bad Request", ""},
		{"empty body", "POST", "/api/v1/templates/sms", "", 400, "Bad Request", ""},
		{"trailing data", "POST", "/api/v1/templates/sms", `{"name":"n","templateContent":"x"} {}`, 400, "Bad Request", ""},
		{"bad uuid", "GET", "/api/v1/templates/123", nil, 400, "Bad Request", "id"},
		{"bad uuid on put", "PUT", "/api/v1/templates/zzz", map[string]any{"name": "x"}, 400, "Bad Request", "id"},
		{"bad uuid on delete", "DELETE", "/api/v1/templates/zzz", nil, 400, "Bad Request", "id"},
		{"unknown template", "GET", "/api/v1/templates/0190f5c0-0000-7000-8000-000000000000", nil, 404, "Not Found", ""},
		{"another company's template", "GET", "/api/v1/templates/" + theirs, nil, 404, "Not Found", ""},
		{"update another company's template", "PUT", "/api/v1/templates/" + theirs, map[string]any{"name": "x", "templateContent": "y"}, 404, "Not Found", ""},
		{"delete another company's template", "DELETE", "/api/v1/templates/" + theirs, nil, 404, "Not Found", ""},
		{"channel cannot change", "PUT", "/api/v1/templates/" + mine, map[string]any{"name": "mine", "templateContent": "y", "channelType": "Chat"}, 400, "Bad Request", "channelType"},
		{"update validates like create", "PUT", "/api/v1/templates/" + chat, chatBody("name", "chat", "messageType", 3), 400, "Bad Request", "typeSpecificConfig.buttonText"},
		{"malformed JSON on update", "PUT", "/api/v1/templates/" + chat, `{"name": "renamed", "messageType": 1,`, 400, "Bad Request", ""},
		{"update to a taken name", "PUT", "/api/v1/templates/" + chat, chatBody("name", "mine"), 400, "Bad Request", "name"},
		{"page size over 100", "GET", "/api/v1/templates?pageSize=101", nil, 400, "Bad Request", "pageSize"},
		{"page not an integer", "GET", "/api/v1/templates?page=two", nil, 400, "Bad Request", "page"},
		{"page zero", "GET", "/api/v1/templates?page=0", nil, 400, "Bad Request", "page"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.do("GET", "/api/v1/templates?pageSize=100", nil).obj()["totalCount"]
			r := e.doT(t, c.method, c.path, c.body)
			requireError(t, r, c.status, c.error, c.field)
			after := e.do("GET", "/api/v1/templates?pageSize=100", nil).obj()["totalCount"]
			require.Equal(t, before, after, "a failed request creates nothing")
		})
	}
	// A failed update changes nothing.
	got := e.do("GET", "/api/v1/templates/"+chat, nil).obj()
	require.Equal(t, "chat", got["name"])
	require.Equal(t, float64(1), got["messageType"])
}

func TestTemplatePaging(t *testing.T) {
	e := newEnv(t)
	for i := range 5 {
		e.smsTemplate(fmt.Sprintf("t%d", i), "x")
	}
	r := e.do("GET", "/api/v1/templates?page=2&pageSize=2", nil)
	require.Equal(t, http.StatusOK, r.Code)
	m := r.obj()
	require.Equal(t, float64(5), m["totalCount"])
	require.Equal(t, float64(2), m["page"])
	require.Equal(t, float64(2), m["pageSize"])
	require.Equal(t, float64(3), m["totalPages"])
	ts := m["templates"].([]any)
	require.Len(t, ts, 2)
	// newest first: page 2 of 2 holds t2 and t1
	require.Equal(t, "t2", ts[0].(map[string]any)["name"])
	require.Equal(t, "t1", ts[1].(map[string]any)["name"])
	empty := e.do("GET", "/api/v1/templates?page=9", nil).obj()
	require.Empty(t, empty["templates"])
	require.Equal(t, float64(5), empty["totalCount"])
}

// TestMediaURLsAreProbed creates and updates chat templates whose media
// URLs a server answers: a URL must answer a HEAD request with 2xx and a
// size within its kind's limit, and a video's size is filled in.
func TestMediaURLsAreProbed(t *testing.T) {
	var heads atomic.Int64
	withMedia, base := withMediaServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			heads.Add(1)
		}
		size := map[string]string{"/logo.png": "2048", "/huge.png": strconv.Itoa(2 << 20), "/clip.mp4": "7340032", "/thumb.jpg": "1024"}[r.URL.Path]
		if size == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", size)
	}))
	e := newEnv(t, withMedia)
	image := func(name, url string) map[string]any {
		return map[string]any{"name": name, "messageType": 2, "chatServiceId": e.chat,
			"typeSpecificConfig": map[string]any{"imageUrl": url}}
	}
	templates := func() any { return e.do("GET", "/api/v1/templates", nil).obj()["totalCount"] }

	cases := []struct {
		name, url, message string
	}{
		{"not found", base + "/missing.png", "404"},
		{"over 1 MB", base + "/huge.png", "larger than 1 MB"},
		{"another service on this machine", "https://127.0.0.1:1/logo.png", "must point at a public internet address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := requireError(t, e.doT(t, "POST", "/api/v1/templates/chat", image("img "+c.name, c.url)), http.StatusBadRequest, "Bad Request", "typeSpecificConfig.imageUrl")
			require.Contains(t, m["validationErrors"].(map[string]any)["typeSpecificConfig.imageUrl"], c.message)
			require.Equal(t, float64(0), templates(), "nothing is created")
		})
	}

	r := e.do("POST", "/api/v1/templates/chat", image("logo", base+"/logo.png"))
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	id := r.obj()["id"].(string)

	// An update is probed like a creation and leaves the template as it was.
	requireError(t, e.do("PUT", "/api/v1/templates/"+id, image("logo", base+"/gone.png")), http.StatusBadRequest, "Bad Request", "typeSpecificConfig.imageUrl")
	got := e.do("GET", "/api/v1/templates/"+id, nil).obj()
	require.JSONEq(t, `{"imageUrl":"`+base+`/logo.png"}`, got["typeSpecificConfig"].(string))

	// A video's fileSize is what the HEAD answer gave, whatever was sent;
	// its duration is kept.
	r = e.do("POST", "/api/v1/templates/chat", map[string]any{"name": "clip", "messageType": 7, "chatServiceId": e.chat,
		"typeSpecificConfig": map[string]any{"videoUrl": base + "/clip.mp4", "thumbnailUrl": base + "/thumb.jpg", "fileSize": 1, "duration": 42}})
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.obj()["typeSpecificConfig"].(string)), &cfg))
	require.Equal(t, float64(7340032), cfg["fileSize"])
	require.Equal(t, float64(42), cfg["duration"])
	requireError(t, e.do("POST", "/api/v1/templates/chat", map[string]any{"name": "no thumb", "messageType": 7, "chatServiceId": e.chat,
		"typeSpecificConfig": map[string]any{"videoUrl": base + "/clip.mp4", "thumbnailUrl": base + "/none.jpg"}}),
		http.StatusBadRequest, "Bad Request", "typeSpecificConfig.thumbnailUrl")
	require.Equal(t, float64(2), templates())
	require.Positive(t, heads.Load(), "the URLs were asked with HEAD")
}

// TestTemplatePreview: a text rendered with sample values, measured as the
// SMPP transport sends it: GSM-7 or UCS-2, septets (an extension character
// counts two) or UTF-16 units, segments of 160/153 or 70/67, the room left
// in the last one; a placeholder without a value stays and is listed.
func TestTemplatePreview(t *testing.T) {
	e := newEnv(t)
	preview := func(body any) map[string]any {
		t.Helper()
		r := e.do("POST", "/api/v1/templates/preview", body)
		require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
		return r.obj()
	}
	got := preview(map[string]any{"templateContent": "Hi {{name}}, 20% off {{item}} until {{day}}", "placeholders": map[string]any{"name": "Ada", "day": "Sunday"}})
	require.Equal(t, "Hi Ada, 20% off {{item}} until Sunday", got["renderedText"])
	require.Equal(t, []any{"name", "item", "day"}, got["placeholders"])
	require.Equal(t, []any{"item"}, got["missingPlaceholders"])
	require.Equal(t, "GSM-7", got["encoding"])
	require.Equal(t, 41.0, got["characters"], "the braces left are GSM-7 extension characters, two septets each")
	require.Equal(t, 1.0, got["segments"])
	require.Equal(t, 160.0, got["charactersPerSegment"])
	require.Equal(t, 119.0, got["charactersLeft"])

	for _, c := range []struct {
		text                           string
		enc                            string
		chars, segs, perSeg, charsLeft float64
	}{
		{strings.Repeat("a", 160), "GSM-7", 160, 1, 160, 0},
		{strings.Repeat("a", 161), "GSM-7", 161, 2, 153, 145},
		{strings.Repeat("€", 80), "GSM-7", 160, 1, 160, 0},   // an extension character is two septets
		{strings.Repeat("€", 81), "GSM-7", 162, 2, 153, 143}, // 76 in the first part (152 septets: a pair is never split), 5 in the last
		{"Привет", "UCS-2", 6, 1, 70, 64},
		{strings.Repeat("é", 10) + strings.Repeat("ж", 61), "UCS-2", 71, 2, 67, 63},
		{"", "GSM-7", 0, 1, 160, 160},
	} {
		got := preview(map[string]any{"templateContent": c.text})
		require.Equal(t, c.enc, got["encoding"], "%q", c.text)
		require.Equal(t, c.chars, got["characters"], "%q", c.text)
		require.Equal(t, c.segs, got["segments"], "%q", c.text)
		require.Equal(t, c.perSeg, got["charactersPerSegment"], "%q", c.text)
		require.Equal(t, c.charsLeft, got["charactersLeft"], "%q", c.text)
		require.Equal(t, []any{}, got["placeholders"])
	}

	requireError(t, e.do("POST", "/api/v1/templates/preview", map[string]any{}), http.StatusBadRequest, "Bad Request", "templateContent")
	requireError(t, e.do("POST", "/api/v1/templates/preview", map[string]any{"templateContent": strings.Repeat("a", 1601)}),
		http.StatusBadRequest, "Bad Request", "templateContent")
	requireError(t, e.do("POST", "/api/v1/templates/preview", map[string]any{"templateContent": "Hi\x01"}), http.StatusBadRequest, "Bad Request", "templateContent")
	require.Equal(t, http.StatusUnauthorized, e.do("POST", "/api/v1/templates/preview", map[string]any{"templateContent": "Hi"}, noKey()).Code)
}
