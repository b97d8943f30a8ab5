package main_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// providerCase is one chat provider the binary is tried with: how its
// simulator is started and how the service and template reaching it are
// set up.
type providerCase struct {
	provider, channel string
	// sender is the service's id at the provider (providerServiceId).
	sender string
	// authHeader carries the callbacks' signature or credentials.
	authHeader string
}

// providerCases are the chat providers built into herald serve, each on
// the channels its simulator serves.
func providerCases() []providerCase {
	return []providerCase{
		{provider: "herald", channel: "viber", sender: "acme-viber", authHeader: "X-Content-Signature"},
		{provider: "vonage", channel: "viber", sender: "16105550100", authHeader: "Authorization"},
		{provider: "vonage", channel: "whatsapp", sender: "16105550100", authHeader: "Authorization"},
		{provider: "infobip", channel: "viber", sender: "HeraldDemo", authHeader: "Authorization"},
		{provider: "meta-whatsapp", channel: "whatsapp", sender: "100000000000002", authHeader: "X-Hub-Signature-256"},
	}
}

// TestProviders runs herald serve, on SQLite and on Postgres, with a chat
// service of each provider whose simulator (herald simulate chat
// -provider) runs as a process of its own: a chat bulk with an SMS
// fallback ends as the simulator's outcomes say, and callbacks forged or
// posted again are refused without changing anything.
func TestProviders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "herald")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	smsc := startProcess(t, bin, heraldEnv(), smscLine, "simulate", "smsc", "-addr", "127.0.0.1:0")

	for _, db := range []struct {
		name string
		url  func(t testing.TB) string
	}{
		{"sqlite", func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "herald.db") }},
		{"postgres", pgtest.SchemaURL},
	} {
		t.Run(db.name, func(t *testing.T) {
			for i, pc := range providerCases() {
				t.Run(pc.provider+"-"+pc.channel, func(t *testing.T) {
					t.Parallel()
					// Receipts go to the binds of the message's system_id:
					// each server has its own (at most 15 characters).
					testProvider(t, bin, db.url(t), smsc.ready[1], fmt.Sprintf("%s%d", db.name, i), pc)
				})
			}
		})
	}
}

// startChatSim starts herald simulate chat for pc, posting its callbacks
// to callbackURL, and returns its base URL and the credentials of the
// service that uses it.
func startChatSim(t *testing.T, bin string, pc providerCase, callbackURL string) (string, string) {
	t.Helper()
	if pc.provider == "herald" {
		sim := startProcess(t, bin, heraldEnv(), chatLine, "simulate", "chat", "-addr", "127.0.0.1:0", "-token", "chat-token",
			"-callback-url", callbackURL, "-callback-secret", "shared-secret", "-delivered-delay", "10ms")
		return sim.ready[1], `{"token":"chat-token","callbackSecret":"shared-secret"}`
	}
	// The lines of herald simulate chat -provider: where the simulator
	// listens, and the demo credentials it made (printed last).
	simLine := regexp.MustCompile(`simulator \(\w+\) at (http://[^;\s]+)`)
	demoCredsLine := regexp.MustCompile(`demo credentials: (\{.*\})`)
	sim := startProcess(t, bin, heraldEnv(), demoCredsLine, "simulate", "chat", "-provider", pc.provider, "-channel", pc.channel,
		"-addr", "127.0.0.1:0", "-callback-url", callbackURL)
	at := simLine.FindStringSubmatch(sim.stdout.String())
	require.NotNil(t, at, sim.stdout.String())
	return at[1], sim.ready[1]
}

func testProvider(t *testing.T, bin, dbURL, smscAddr, systemID string, pc providerCase) {
	cb := newCallbackTap(t)
	simURL, creds := startChatSim(t, bin, pc, cb.URL())
	h := startHerald(t, bin, heraldEnv("HERALD_DATABASE_URL="+dbURL, "HERALD_ADMIN_TOKEN=admin-secret", "HERALD_WEBHOOK_ALLOW=loopback",
		"HERALD_SMPP_ADDR="+smscAddr, "HERALD_SMPP_SYSTEM_ID="+systemID, "HERALD_SMPP_PASSWORD=pw", "HERALD_SMPP_WINDOW=10",
		"HERALD_SMPP_MAX_RATE=1000"), "serve")
	c := h.client("")
	co := provision(t, c, "admin-secret")
	api := h.client(co.key)

	admin := map[string]string{"Authorization": "Bearer admin-secret"}
	var svc struct {
		ID             int64
		Provider       string
		Channel        string
		CredentialsSet bool
		Credentials    any
	}
	c.call("POST", "/admin/v1/companies/"+co.id+"/chat-services", admin, fmt.Sprintf(
		`{"brandName":"Acme %s","providerServiceId":%q,"provider":%q,"channel":%q,"baseUrl":%q,"credentials":%s}`,
		pc.provider, pc.sender, pc.provider, pc.channel, simURL, creds), http.StatusCreated, &svc)
	require.Equal(t, pc.provider, svc.Provider)
	require.Equal(t, pc.channel, svc.Channel)
	require.True(t, svc.CredentialsSet)
	require.Nil(t, svc.Credentials, "credentials are never shown back")
	callbackPath := fmt.Sprintf("/callbacks/chat/%d", svc.ID)
	cb.forwardTo(h.base + callbackPath)

	config := ""
	if pc.channel == "whatsapp" {
		// A business-initiated WhatsApp message must be an approved template.
		config = `,"typeSpecificConfig":{"providerTemplate":{"name":"order_update","language":"en","parameters":["{{name}}"]}}`
	}
	var tpl struct{ ID string }
	api.api("POST", "/templates/chat", fmt.Sprintf(`{"name":"hello","messageType":1,"templateContent":"Hello {{name}}","chatServiceId":%d,
		"smsFallbackEnabled":true,"smsFallbackTemplateContent":"Hello {{name}} (SMS)","smsFallbackSenderId":%d%s}`, svc.ID, co.senderID, config),
		http.StatusCreated, &tpl)

	phones := []string{"447955500001", "447955500008", "447955500009", "447955500010"}
	sent := api.bulk("/chat/send", tpl.ID, phones, "")
	require.Equal(t, len(phones), sent.MessageCount)
	api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Ready" })
	api.api("POST", "/campaigns/"+sent.CampaignID+"/start", "", http.StatusOK, nil)
	done := api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool {
		return c.SeenCount == 1 && c.FailedCount == 3 && c.SMSFallbackDeliveredCount == 3
	})
	require.Equal(t, 4, done.TotalMessages)
	require.Equal(t, 3, done.SMSFallbackCount)

	seen := api.messages(phones[0])
	require.Len(t, seen, 1)
	require.Equal(t, "Chat Seen", seen[0].ChannelType+" "+seen[0].Status)
	// A refusal of the send and a failure reported by a callback read
	// the same: the reason's name and code.
	for i, code := range []string{"USER_BLOCKED (8)", "NOT_VIBER_USER (9)", "NO_SUITABLE_DEVICE (10)"} {
		p := phones[i+1]
		got := map[string]messageJSON{}
		for _, m := range api.messages(p) {
			got[m.ChannelType] = m
		}
		require.Len(t, got, 2, p)
		require.Equal(t, "Failed", got["Chat"].Status, p)
		require.Equal(t, code, deref(got["Chat"].Details), p)
		require.Equal(t, "Delivered", got["Smpp"].Status, p, "the fallback SMS reached the SMSC")
		require.Equal(t, "Hello friend (SMS)", got["Smpp"].MessageContent, p)
	}

	// Forged and replayed callbacks: posted straight to Herald, they are
	// refused and no message moves.
	before := statuses(api, phones)
	genuine := cb.taken(t)
	forged := genuine.clone()
	forged.header.Set(pc.authHeader, tamper(forged.header.Get(pc.authHeader)))
	require.Equal(t, http.StatusUnauthorized, post(t, h.base+callbackPath, forged), "a callback with a bad signature")
	require.Equal(t, http.StatusUnauthorized, post(t, h.base+callbackPath, genuine.clone()), "a callback taken before, posted again")
	require.Equal(t, before, statuses(api, phones), "refused callbacks change nothing")
	h.stop()
}

// statuses returns the channel and status of every message to phones.
func statuses(api *client, phones []string) map[string][]string {
	out := map[string][]string{}
	for _, p := range phones {
		for _, m := range api.messages(p) {
			out[p] = append(out[p], m.ChannelType+" "+m.Status+" "+deref(m.Details))
		}
	}
	return out
}

// tamper changes one character in the middle of a signature's encoding,
// where every bit counts.
func tamper(v string) string {
	if len(v) < 8 {
		return v + "x"
	}
	b := []byte(v)
	i := len(b) - 6
	if b[i] == 'a' {
		b[i] = 'b'
	} else {
		b[i] = 'a'
	}
	return string(b)
}

// callback is one callback request as a simulator posted it.
type callback struct {
	header http.Header
	body   []byte
	status int // Herald's answer
}

func (c callback) clone() callback {
	return callback{header: c.header.Clone(), body: bytes.Clone(c.body)}
}

// post sends cb to url and returns the answer's status.
func post(t *testing.T, url string, cb callback) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(cb.body))
	require.NoError(t, err)
	req.Header = cb.header
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// callbackTap stands between a simulator and Herald: it passes each
// callback on to Herald's callback URL, byte for byte with its headers,
// and keeps it with Herald's answer.
type callbackTap struct {
	srv *httptest.Server

	mu     sync.Mutex
	target string
	seen   []callback
}

func newCallbackTap(t *testing.T) *callbackTap {
	tap := &callbackTap{}
	tap.srv = httptest.NewServer(http.HandlerFunc(tap.serve))
	t.Cleanup(tap.srv.Close)
	return tap
}

// URL is where the simulator posts.
func (c *callbackTap) URL() string { return c.srv.URL + "/callbacks" }

// forwardTo sets Herald's callback URL; before, callbacks are answered
// 503 (the simulators post them again).
func (c *callbackTap) forwardTo(url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.target = url
}

func (c *callbackTap) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	c.mu.Lock()
	target := c.target
	c.mu.Unlock()
	if err != nil || target == "" {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	c.mu.Lock()
	c.seen = append(c.seen, callback{header: r.Header.Clone(), body: body, status: resp.StatusCode})
	c.mu.Unlock()
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// taken returns a callback Herald took (answered 2xx).
func (c *callbackTap) taken(t *testing.T) callback {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cb := range c.seen {
		if cb.status/100 == 2 {
			return cb
		}
	}
	t.Fatalf("no callback was taken among %d", len(c.seen))
	return callback{}
}
