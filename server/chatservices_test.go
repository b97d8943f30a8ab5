package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// testProviders describes Herald's provider and two others: vonage
// (Viber and WhatsApp, an apiKey and an apiSecret) and meta-whatsapp
// (WhatsApp, an accessToken).
func testProviders(name string) (accounts.ProviderInfo, bool) {
	need := func(fields ...string) func(string, json.RawMessage) error {
		return func(_ string, creds json.RawMessage) error {
			var m map[string]any
			_ = json.Unmarshal(creds, &m)
			for _, f := range fields {
				if v, ok := m[f].(string); !ok || v == "" {
					msg := "credentials." + f + " is required"
					return &messaging.Error{Code: messaging.Invalid, Name: messaging.NameBadRequest, Message: msg,
						Fields: map[string]string{"credentials." + f: msg}}
				}
			}
			return nil
		}
	}
	switch name {
	case "herald":
		return accounts.HeraldProvider(), true
	case "vonage":
		return accounts.ProviderInfo{Name: name, Channels: []string{"viber", "whatsapp"}, CheckCredentials: need("apiKey", "apiSecret")}, true
	case "wa-templates":
		// A WhatsApp provider that carries approved templates only.
		return accounts.ProviderInfo{Name: name, Channels: []string{"whatsapp"}, CheckCredentials: need("accessToken"),
			Carries: func(_ string, _ messaging.MessageType, c messaging.ChatConfig) error {
				if c.ProviderTemplate == nil {
					return messaging.Invalidf("typeSpecificConfig.providerTemplate", "this provider sends approved templates only")
				}
				return nil
			}}, true
	case "meta-whatsapp":
		return accounts.ProviderInfo{Name: name, Channels: []string{"whatsapp"}, CheckCredentials: need("accessToken"),
			Carries: func(_ string, t messaging.MessageType, _ messaging.ChatConfig) error {
				if t == messaging.TypeCarousel {
					return messaging.Invalidf("messageType", "a carousel cannot go over WhatsApp")
				}
				return nil
			}}, true
	}
	return accounts.ProviderInfo{}, false
}

func withProviders(c *envConfig) { c.providers = testProviders }

// TestAdminChatServiceProviders: a chat service names its provider,
// channel, endpoint and credentials; every answer tells whether it has
// credentials and never shows them; a replacement keeps, replaces or
// removes them.
func TestAdminChatServiceProviders(t *testing.T) {
	e := newEnv(t, withProviders)
	base := "/admin/v1/companies/" + e.id.String() + "/chat-services"
	const secret = "Vs3cr3t-value-9"
	r := e.do("POST", base, map[string]any{"brandName": "Acme WA", "providerServiceId": "447700900000",
		"provider": "vonage", "channel": "whatsapp", "baseUrl": "https://api.example.test",
		"credentials": map[string]any{"apiKey": "key-1", "apiSecret": secret}}, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	created := r.obj()
	require.Equal(t, map[string]any{"id": created["id"], "brandName": "Acme WA", "providerServiceId": "447700900000",
		"provider": "vonage", "channel": "whatsapp", "baseUrl": "https://api.example.test", "credentialsSet": true,
		"createdAt": created["createdAt"]}, created)
	one := base + "/" + ftoa(created["id"].(float64))

	got := e.do("GET", one, nil, admin())
	require.Equal(t, http.StatusOK, got.Code, "body: %s", got.Body)
	require.Equal(t, created, got.obj())
	list := e.do("GET", base, nil, admin())
	require.Len(t, list.arr(), 2, "the env's service and this one")
	for _, body := range []string{string(r.Body), string(got.Body), string(list.Body)} {
		require.NotContains(t, body, secret)
		require.NotContains(t, body, "apiSecret")
	}

	// A replacement without credentials keeps them.
	r = e.do("PUT", one, map[string]any{"brandName": "Acme", "providerServiceId": "447700900001", "provider": "vonage", "channel": "whatsapp"}, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	upd := r.obj()
	require.Equal(t, true, upd["credentialsSet"])
	require.Nil(t, upd["baseUrl"], "no baseUrl: the provider's public one")
	require.Equal(t, "Acme", upd["brandName"])
	require.Equal(t, created["createdAt"], upd["createdAt"])

	// Another provider needs its own credentials.
	r = e.do("PUT", one, map[string]any{"brandName": "Acme", "providerServiceId": "1055", "provider": "meta-whatsapp", "channel": "whatsapp"}, admin())
	requireError(t, r, 400, "Bad Request", "credentials")
	r = e.do("PUT", one, map[string]any{"brandName": "Acme", "providerServiceId": "1055", "provider": "meta-whatsapp",
		"credentials": map[string]any{"accessToken": "tok"}}, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, "whatsapp", r.obj()["channel"], "the provider's only channel")

	// Back to Herald's own, credentials removed.
	r = e.do("PUT", one, map[string]any{"brandName": "Acme", "providerServiceId": "acme", "credentials": nil}, admin())
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, false, r.obj()["credentialsSet"])
	require.Equal(t, "herald", r.obj()["provider"])
	require.Equal(t, "viber", r.obj()["channel"])

	require.NotContains(t, e.logs.String(), secret)
}

// TestAdminChatServiceErrors: each bad field is a 400 naming it; an
// unknown or another company's service is a 404.
func TestAdminChatServiceErrors(t *testing.T) {
	e := newEnv(t, withProviders)
	other := e.newCompany(t, "Other")
	base := "/admin/v1/companies/" + e.id.String() + "/chat-services"
	ok := map[string]any{"brandName": "B", "providerServiceId": "p"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{"brandName": "B", "providerServiceId": "p", "provider": "vonage",
			"credentials": map[string]any{"apiKey": "k", "apiSecret": "s"}}
		m[k] = v
		return m
	}
	cases := []struct {
		name, method, path string
		body               any
		status             int
		field              string
	}{
		{"unknown provider", "POST", base, with("provider", "acme-chat"), 400, "provider"},
		{"channel the provider does not reach", "POST", base, map[string]any{"brandName": "B", "providerServiceId": "p",
			"provider": "meta-whatsapp", "channel": "viber", "credentials": map[string]any{"accessToken": "t"}}, 400, "channel"},
		{"unknown channel", "POST", base, with("channel", "sms"), 400, "channel"},
		{"credentials missing a field", "POST", base, with("credentials", map[string]any{"apiKey": "k"}), 400, "credentials.apiSecret"},
		{"credentials not an object", "POST", base, with("credentials", "k:s"), 400, "credentials"},
		{"no credentials where the provider needs them", "POST", base, map[string]any{"brandName": "B", "providerServiceId": "p",
			"provider": "vonage"}, 400, "credentials.apiKey"},
		{"baseUrl not a URL", "POST", base, with("baseUrl", "api.example.test"), 400, "baseUrl"},
		{"baseUrl with user information", "POST", base, with("baseUrl", "https://u:p@api.example.test"), 400, "baseUrl"},
		{"get unknown service", "GET", base + "/9999", nil, 404, ""},
		{"get bad service id", "GET", base + "/x", nil, 400, "chatServiceId"},
		{"get another company's service", "GET", base + "/" + fmt.Sprint(other.chat), nil, 404, ""},
		{"replace another company's service", "PUT", base + "/" + fmt.Sprint(other.chat), ok, 404, ""},
		{"replace with a bad provider", "PUT", base + "/" + fmt.Sprint(e.chat), with("provider", "nope"), 400, "provider"},
	}
	before := e.do("GET", base+"/"+fmt.Sprint(e.chat), nil, admin()).obj()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := map[int]string{400: "Bad Request", 404: "Not Found"}[c.status]
			requireError(t, e.doT(t, c.method, c.path, c.body, admin()), c.status, name, c.field)
		})
	}
	require.Equal(t, before, e.do("GET", base+"/"+fmt.Sprint(e.chat), nil, admin()).obj(), "a refused replacement changes nothing")
	list := e.do("GET", base, nil, admin()).arr()
	require.Len(t, list, 1, "no refused creation stored anything")
	otherList := e.do("GET", "/admin/v1/companies/"+other.id.String()+"/chat-services", nil, admin()).arr()
	require.Equal(t, "Other Brand", otherList[0].(map[string]any)["brandName"], "another company's service unchanged")
}

// noKeyStore refuses credentials like a store without a secret key.
type noKeyStore struct{ *memstore.Store }

func (s noKeyStore) CreateChatService(ctx context.Context, cs *messaging.ChatService) error {
	if len(cs.Credentials) > 0 {
		return messaging.SecretKeyMissing()
	}
	return s.Store.CreateChatService(ctx, cs)
}

// TestAdminChatServiceWithoutSecretKey: credentials on a server without a
// secret key are a 503 Secret key not configured; a service without them
// is created.
func TestAdminChatServiceWithoutSecretKey(t *testing.T) {
	e := newEnv(t, withProviders, func(c *envConfig) { c.wrap = func(s *memstore.Store) appStore { return noKeyStore{s} } })
	base := "/admin/v1/companies/" + e.id.String() + "/chat-services"
	r := e.do("POST", base, map[string]any{"brandName": "B", "providerServiceId": "p", "provider": "vonage",
		"credentials": map[string]any{"apiKey": "k", "apiSecret": "s"}}, admin())
	requireError(t, r, 503, messaging.NameSecretKeyMissing, "")
	r = e.do("POST", base, map[string]any{"brandName": "B", "providerServiceId": "p"}, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
}

// TestChatTemplateCarriedByProvider: a chat template its service's
// provider cannot carry, or with a malformed providerTemplate, is a 400
// naming the field; a WhatsApp template with a providerTemplate is kept
// and shown with it.
func TestChatTemplateCarriedByProvider(t *testing.T) {
	e := newEnv(t, withProviders)
	r := e.do("POST", "/admin/v1/companies/"+e.id.String()+"/chat-services", map[string]any{"brandName": "WA", "providerServiceId": "1055",
		"provider": "meta-whatsapp", "credentials": map[string]any{"accessToken": "tok"}}, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	wa := r.obj()["id"]
	item := map[string]any{"title": "Tea", "imageUrl": "https://cdn.example.com/a.png", "buttonText": "Go", "buttonUrl": "https://example.com/a"}
	r = e.do("POST", "/api/v1/templates/chat", map[string]any{"name": "cards", "messageType": 5, "chatServiceId": wa,
		"templateContent": "Pick", "typeSpecificConfig": map[string]any{"items": []any{item, item}}})
	requireError(t, r, 400, "Bad Request", "messageType")

	pt := func(lang string) map[string]any {
		return map[string]any{"name": "order", "messageType": 1, "chatServiceId": wa, "templateContent": "Order {{order}}",
			"typeSpecificConfig": map[string]any{"providerTemplate": map[string]any{"name": "order_shipped", "language": lang,
				"parameters": []any{"{{name}}", "{{order}}"}}}}
	}
	requireError(t, e.do("POST", "/api/v1/templates/chat", pt("English")), 400, "Bad Request", "typeSpecificConfig.providerTemplate.language")
	viber := pt("en")
	viber["chatServiceId"] = e.chat
	requireError(t, e.do("POST", "/api/v1/templates/chat", viber), 400, "Bad Request", "typeSpecificConfig.providerTemplate")

	r = e.do("POST", "/api/v1/templates/chat", pt("en_US"))
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.obj()["typeSpecificConfig"].(string)), &cfg), "the config is a JSON string")
	require.Equal(t, map[string]any{"name": "order_shipped", "language": "en_US", "parameters": []any{"{{name}}", "{{order}}"}}, cfg["providerTemplate"])
}

// TestDirectChatCarriedByProvider: a direct chat send, a text message,
// through a service whose provider cannot carry one is a 400 naming
// chatServiceId, and nothing is stored; through a service that can, it
// is accepted.
func TestDirectChatCarriedByProvider(t *testing.T) {
	e := newEnv(t, withProviders)
	r := e.do("POST", "/admin/v1/companies/"+e.id.String()+"/chat-services", map[string]any{"brandName": "WA", "providerServiceId": "1055",
		"provider": "wa-templates", "credentials": map[string]any{"accessToken": "tok"}}, admin())
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	wa := r.obj()["id"]
	before := e.written(e.id)

	body := map[string]any{"messageContent": "Your code is 1234", "chatServiceId": wa, "recipients": recipients(2),
		"smsFallbackText": "Your code is 1234", "smsFallbackSenderId": e.sender}
	m := requireError(t, e.do("POST", "/api/v1/chat/send-text", body), 400, "Bad Request", "chatServiceId")
	msg := m["validationErrors"].(map[string]any)["chatServiceId"].(string)
	require.Contains(t, msg, "cannot carry a direct text message")
	require.Contains(t, msg, "approved templates only", "the provider's reason")
	require.Equal(t, before, e.written(e.id), "nothing stored")
	require.Zero(t, e.pending(e.id))

	body["chatServiceId"] = e.chat
	r = e.do("POST", "/api/v1/chat/send-text", body)
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
}
