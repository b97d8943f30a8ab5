package vonagesim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/vonage"
	"github.com/heraldhq/herald/transport/vonage/vonagesim"
)

// posted is one webhook the simulator posted.
type posted struct {
	body   []byte
	claims vonage.Claims
	err    error
}

// send posts body to the simulator with a valid token.
func send(t *testing.T, sim *vonagesim.Server, creds json.RawMessage, body string) *http.Response {
	t.Helper()
	var c vonage.Credentials
	if err := json.Unmarshal(creds, &c); err != nil {
		t.Fatal(err)
	}
	key, err := vonage.ParsePrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := vonage.SignRS256(key, vonage.Claims{ApplicationID: c.ApplicationID, IssuedAt: time.Now().Unix(), ID: vonage.NewJTI()})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, sim.URL()+vonage.MessagesPath, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestWebhooksSignedAloneAndRetried: each event is posted alone, signed
// with the signature secret over its body; one answered 500 is posted
// again with a fresh token; events keep their order.
func TestWebhooksSignedAloneAndRetried(t *testing.T) {
	creds := vonagesim.DemoCredentials()
	var c vonage.Credentials
	if err := json.Unmarshal(creds, &c); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []posted
	first := true
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		tok, _ := vonage.Bearer(r.Header.Get("Authorization"))
		cl, err := vonage.VerifyHS256([]byte(c.SignatureSecret), tok)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, posted{body: b, claims: cl, err: err})
		if first {
			first = false
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer hook.Close()
	sim, err := vonagesim.Start(context.Background(), "127.0.0.1:0", vonagesim.Config{
		Credentials: creds, Channel: chatprovider.ChannelViber, CallbackURL: hook.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	resp := send(t, sim, creds, `{"message_type":"text","channel":"viber_service","to":"447700900001","from":"Herald",`+
		`"client_ref":"ref-1","text":"hi","viber_service":{"ttl":600}}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("send answered %d", resp.StatusCode)
	}
	var ans struct {
		MessageUUID string `json:"message_uuid"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || ans.MessageUUID == "" {
		t.Fatalf("answer without message_uuid: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var statuses []string
	jtis := map[string]bool{}
	for i, p := range got {
		if p.err != nil {
			t.Fatalf("webhook %d: signature: %v", i, p.err)
		}
		if p.claims.PayloadHash != vonage.PayloadHash(p.body) || p.claims.IssuedAt == 0 || p.claims.ApplicationID != c.ApplicationID {
			t.Errorf("webhook %d: claims %+v do not match its body", i, p.claims)
		}
		if jtis[p.claims.ID] {
			t.Errorf("webhook %d reuses jti %s", i, p.claims.ID)
		}
		jtis[p.claims.ID] = true
		var e map[string]any
		if err := json.Unmarshal(p.body, &e); err != nil {
			t.Fatalf("webhook %d is not one JSON object: %s", i, p.body)
		}
		if e["message_uuid"] != ans.MessageUUID || e["client_ref"] != "ref-1" || e["channel"] != "viber_service" {
			t.Errorf("webhook %d: %s", i, p.body)
		}
		statuses = append(statuses, e["status"].(string))
	}
	want := []string{"submitted", "submitted", "delivered", "read"}
	if len(statuses) != len(want) {
		t.Fatalf("statuses %v, want %v", statuses, want)
	}
	for i := range want {
		if statuses[i] != want[i] {
			t.Fatalf("statuses %v, want %v", statuses, want)
		}
	}
	if sim.Accepted() != 1 || sim.Webhooks() != 3 {
		t.Errorf("accepted %d, webhooks taken %d; want 1 and 3", sim.Accepted(), sim.Webhooks())
	}
}

// TestStrictBodies: what the reference does not allow is answered 400
// naming the field, and nothing is accepted.
func TestStrictBodies(t *testing.T) {
	creds := vonagesim.DemoCredentials()
	sim, err := vonagesim.Start(context.Background(), "127.0.0.1:0", vonagesim.Config{Credentials: creds, Channel: chatprovider.ChannelWhatsApp})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	base := `"channel":"whatsapp","to":"447700900001","from":"447700900002"`
	cases := map[string]struct{ body, field string }{
		"four reply buttons": {`{"message_type":"custom",` + base + `,"custom":{"type":"interactive","interactive":{"type":"button",` +
			`"body":{"text":"q"},"action":{"buttons":[{"type":"reply","reply":{"id":"a","title":"A"}},{"type":"reply","reply":{"id":"b","title":"B"}},` +
			`{"type":"reply","reply":{"id":"c","title":"C"}},{"type":"reply","reply":{"id":"d","title":"D"}}]}}}}`, "custom.interactive.action.buttons"},
		"long list row": {`{"message_type":"custom",` + base + `,"custom":{"type":"interactive","interactive":{"type":"list",` +
			`"body":{"text":"q"},"action":{"button":"Choose","sections":[{"rows":[{"id":"a","title":"A title longer than twenty-four"}]}]}}}}`,
			"custom.interactive.action.sections.rows.title"},
		"viber_service on whatsapp": {`{"message_type":"text",` + base + `,"text":"hi","viber_service":{"ttl":60}}`, "viber_service"},
		"image with text":           {`{"message_type":"image",` + base + `,"text":"hi","image":{"url":"https://x.example.com/a.jpg"}}`, "text"},
		"template without locale":   {`{"message_type":"template",` + base + `,"template":{"name":"t"}}`, "whatsapp.locale"},
		"number with plus":          {`{"message_type":"text","channel":"whatsapp","to":"+447700900001","from":"x","text":"hi"}`, "to"},
	}
	for name, tc := range cases {
		resp := send(t, sim, creds, tc.body)
		var p vonage.Problem
		_ = json.NewDecoder(resp.Body).Decode(&p)
		if resp.StatusCode != http.StatusBadRequest || len(p.InvalidParameters) != 1 || p.InvalidParameters[0].Name != tc.field {
			t.Errorf("%s: HTTP %d %+v, want 400 naming %s", name, resp.StatusCode, p, tc.field)
		}
	}
	if n := sim.Accepted(); n != 0 {
		t.Errorf("%d messages accepted, want none", n)
	}
}
