package metawhatsappsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/metawhatsapp"
	"github.com/heraldhq/herald/transport/metawhatsapp/metawhatsappsim"
)

const phoneID = "106540352242922"

// recorder is a delivery.Reporter keeping every report; failFirst
// webhooks are refused first.
type recorder struct {
	mu        sync.Mutex
	failFirst int
	calls     [][]delivery.ChatStatus
	inbound   []delivery.ChatInbound
}

func (r *recorder) Receipt(context.Context, delivery.Receipt) error { return errors.New("unexpected") }

func (r *recorder) InboundSMS(context.Context, delivery.InboundPart) error {
	return errors.New("unexpected")
}

func (r *recorder) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failFirst > 0 {
		r.failFirst--
		return nil, errors.New("store down")
	}
	r.calls = append(r.calls, ss)
	outs := make([]delivery.ChatEventOutcome, len(ss))
	for i := range outs {
		outs[i] = delivery.ChatEventStored
	}
	return outs, nil
}

func (r *recorder) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inbound = append(r.inbound, in)
	return delivery.ChatEventStored, nil
}

// statuses returns the reports of message id, in order.
func (r *recorder) statuses(id messaging.ID) []delivery.ChatStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []delivery.ChatStatus
	for _, c := range r.calls {
		for _, s := range c {
			if s.MessageID == id {
				out = append(out, s)
			}
		}
	}
	return out
}

type openWindow struct{}

func (openWindow) LastInbound(context.Context, int64, string) (time.Time, bool, error) {
	return time.Now().Add(-time.Minute), true, nil
}

// setup starts the simulator and an adapter whose webhook endpoint the
// simulator posts to.
func setup(t *testing.T, cfg metawhatsappsim.Config, rep delivery.Reporter, creds json.RawMessage) (*metawhatsappsim.Server, chatprovider.Adapter) {
	t.Helper()
	if cfg.Credentials == nil {
		cfg.Credentials = metawhatsappsim.DemoCredentials()
	}
	sim, err := metawhatsappsim.Start(context.Background(), "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	if creds == nil {
		creds = metawhatsappsim.DemoCredentials()
	}
	a, err := metawhatsapp.Provider().New(context.Background(), chatprovider.Settings{
		ServiceID: 42, Channel: chatprovider.ChannelWhatsApp, Sender: phoneID,
		BaseURL: sim.URL(), Credentials: creds,
		Client: &http.Client{Timeout: 5 * time.Second}, Reporter: rep, Contacts: openWindow{},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	hook := httptest.NewServer(a)
	t.Cleanup(hook.Close)
	sim.SetCallbackURL(hook.URL + "/callbacks/chat/42")
	return sim, a
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEndToEnd(t *testing.T) {
	rep := &recorder{}
	sim, a := setup(t, metawhatsappsim.Config{}, rep, nil)
	if err := sim.VerifyCallback(context.Background()); err != nil {
		t.Fatalf("webhook verification: %v", err)
	}
	ids := messaging.NewIDGenerator(nil)
	type sent struct {
		id     messaging.ID
		to     string
		reason delivery.ChatReason
	}
	cases := []sent{
		{ids.New(), "998901234561", ""},
		{ids.New(), "998901230008", delivery.ReasonBlocked},
		{ids.New(), "998901230009", delivery.ReasonNotOnChannel},
		{ids.New(), "998901230010", delivery.ReasonNoSuitableDevice},
		{ids.New(), "998901230047", delivery.ReasonNotPermitted},
	}
	survey := sent{ids.New(), "998901234567", ""}
	var wg sync.WaitGroup
	send := func(m delivery.ChatSend) {
		defer wg.Done()
		acc, err := a.SendChat(context.Background(), m)
		if err != nil || !strings.HasPrefix(acc.ProviderID, "wamid.") {
			t.Errorf("send to %s: %+v %v", m.To, acc, err)
		}
	}
	for _, c := range cases {
		wg.Add(1)
		go send(delivery.ChatSend{MessageID: c.id, To: c.to, Type: messaging.TypeSimpleText, Text: "Hello"})
	}
	wg.Add(1)
	go send(delivery.ChatSend{MessageID: survey.id, To: survey.to, Type: messaging.TypeSurvey, Text: "How was it?",
		Config: messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "Great", OptionValue: "5"}, {OptionText: "Fine", OptionValue: "3"}, {OptionText: "Bad", OptionValue: "1"}}}})
	wg.Wait()

	for _, c := range append(cases, survey) {
		c := c
		if c.reason != "" {
			eventually(t, "the failure of "+c.to, func() bool { return len(rep.statuses(c.id)) == 1 })
			s := rep.statuses(c.id)[0]
			if s.Status != messaging.StatusFailed || s.Reason != c.reason {
				t.Errorf("%s: %+v, want failed %s", c.to, s, c.reason)
			}
			continue
		}
		eventually(t, "delivered and read of "+c.to, func() bool { return len(rep.statuses(c.id)) == 2 })
		ss := rep.statuses(c.id)
		if ss[0].Status != messaging.StatusDelivered || ss[1].Status != messaging.StatusSeen || ss[0].ProviderID == "" {
			t.Errorf("%s: %+v, want delivered then seen", c.to, ss)
		}
	}
	eventually(t, "the survey answer", func() bool {
		rep.mu.Lock()
		defer rep.mu.Unlock()
		return len(rep.inbound) == 1
	})
	in := rep.inbound[0]
	if in.Kind != delivery.InboundReply || in.MessageID != survey.id || in.OptionIndex != 7%3 || in.Text != "Fine" || in.Phone != survey.to {
		t.Errorf("answer %+v, want option 1 of the survey", in)
	}
	// The statuses due together came batched.
	rep.mu.Lock()
	n, total := len(rep.calls), 0
	for _, c := range rep.calls {
		total += len(c)
	}
	rep.mu.Unlock()
	if n >= total {
		t.Errorf("%d ChatStatuses calls for %d statuses: no batch", n, total)
	}
}

func TestWebhookResentAfterFailure(t *testing.T) {
	rep := &recorder{failFirst: 2}
	_, a := setup(t, metawhatsappsim.Config{}, rep, nil)
	id := messaging.NewIDGenerator(nil).New()
	if _, err := a.SendChat(context.Background(), delivery.ChatSend{MessageID: id, To: "998901234561", Type: messaging.TypeSimpleText, Text: "Hi"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "delivered and read after two refusals", func() bool { return len(rep.statuses(id)) == 2 })
}

func TestWrongToken(t *testing.T) {
	creds := json.RawMessage(`{"accessToken":"not-the-token","appSecret":"demo-app-secret","verifyToken":"demo-verify-token"}`)
	_, a := setup(t, metawhatsappsim.Config{}, &recorder{}, creds)
	_, err := a.SendChat(context.Background(), delivery.ChatSend{MessageID: messaging.NewIDGenerator(nil).New(), To: "998901234561", Type: messaging.TypeSimpleText, Text: "Hi"})
	var se *delivery.SendError
	if !errors.As(err, &se) || se.Reason != delivery.ReasonServiceRefused {
		t.Fatalf("error %v, want service refused", err)
	}
}

func TestWrongAppSecretIsRefused(t *testing.T) {
	// The adapter knows another app secret: the simulator's webhooks do
	// not verify and nothing is reported.
	creds := json.RawMessage(`{"accessToken":"demo-access-token","appSecret":"another-secret","verifyToken":"demo-verify-token"}`)
	rep := &recorder{}
	_, a := setup(t, metawhatsappsim.Config{}, rep, creds)
	id := messaging.NewIDGenerator(nil).New()
	if _, err := a.SendChat(context.Background(), delivery.ChatSend{MessageID: id, To: "998901234561", Type: messaging.TypeSimpleText, Text: "Hi"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(rep.statuses(id)); n != 0 {
		t.Fatalf("%d statuses reported from webhooks signed with another secret", n)
	}
}

func TestRateLimit(t *testing.T) {
	_, a := setup(t, metawhatsappsim.Config{RatePerSecond: 2}, &recorder{}, nil)
	var err error
	for i := 0; i < 5 && err == nil; i++ {
		_, err = a.SendChat(context.Background(), delivery.ChatSend{MessageID: messaging.NewIDGenerator(nil).New(), To: "998901234561", Type: messaging.TypeSimpleText, Text: "Hi"})
	}
	var se *delivery.SendError
	if !errors.As(err, &se) || se.Reason != delivery.ReasonTransient || se.RetryAfter != time.Second || !errors.Is(err, delivery.ErrRateLimited) {
		t.Fatalf("error %v (%+v), want a rate limit with Retry-After 1s", err, se)
	}
}

func TestStrictValidation(t *testing.T) {
	sim, err := metawhatsappsim.Start(context.Background(), "127.0.0.1:0", metawhatsappsim.Config{Credentials: metawhatsappsim.DemoCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	endpoint := sim.URL() + "/" + phoneID + "/messages"
	base := `"messaging_product":"whatsapp","recipient_type":"individual","to":"998901234567"`
	tests := []struct {
		name, body string
		code       int
	}{
		{"good text", `{` + base + `,"type":"text","text":{"body":"hi"}}`, 0},
		{"unknown field", `{` + base + `,"type":"text","text":{"body":"hi"},"colour":"red"}`, 100},
		{"malformed", `{` + base, 100},
		{"no product", `{"to":"998901234567","type":"text","text":{"body":"hi"}}`, 131008},
		{"short number", `{"messaging_product":"whatsapp","to":"12345","type":"text","text":{"body":"hi"}}`, 131009},
		{"no text object", `{` + base + `,"type":"text"}`, 131008},
		{"two objects", `{` + base + `,"type":"text","text":{"body":"hi"},"image":{"link":"https://a.example/i.png"}}`, 100},
		{"four buttons", `{` + base + `,"type":"interactive","interactive":{"type":"button","body":{"text":"q"},"action":{"buttons":[` +
			`{"type":"reply","reply":{"id":"1","title":"a"}},{"type":"reply","reply":{"id":"2","title":"b"}},` +
			`{"type":"reply","reply":{"id":"3","title":"c"}},{"type":"reply","reply":{"id":"4","title":"d"}}]}}}`, 131009},
		{"label too long", `{` + base + `,"type":"interactive","interactive":{"type":"cta_url","body":{"text":"q"},` +
			`"action":{"name":"cta_url","parameters":{"display_text":"a label much longer than twenty","url":"https://a.example"}}}}`, 131009},
		{"one card", `{` + base + `,"type":"interactive","interactive":{"type":"carousel","body":{"text":"q"},"action":{"cards":[` +
			`{"card_index":0,"type":"cta_url","header":{"type":"image","image":{"link":"https://a.example/1.png"}},` +
			`"action":{"name":"cta_url","parameters":{"display_text":"Buy","url":"https://a.example/1"}}}]}}}`, 131009},
		{"media id", `{` + base + `,"type":"image","image":{"id":"1234"}}`, 131009},
		{"location", `{` + base + `,"type":"location","location":{}}`, 100},
		{"template without language", `{` + base + `,"type":"template","template":{"name":"hello_world"}}`, 131008},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader([]byte(tc.body)))
		req.Header.Set("Authorization", "Bearer demo-access-token")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if tc.code == 0 {
			if res.StatusCode != 200 || !bytes.Contains(b, []byte(`"wamid.`)) {
				t.Errorf("%s: %d %s", tc.name, res.StatusCode, b)
			}
			continue
		}
		var e struct {
			Error struct {
				Message   string `json:"message"`
				Type      string `json:"type"`
				Code      int    `json:"code"`
				ErrorData struct {
					Details string `json:"details"`
				} `json:"error_data"`
				FBTraceID string `json:"fbtrace_id"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || res.StatusCode != 400 {
			t.Errorf("%s: %d %s", tc.name, res.StatusCode, b)
			continue
		}
		if e.Error.Code != tc.code || e.Error.Type != "OAuthException" || e.Error.ErrorData.Details == "" || e.Error.FBTraceID == "" {
			t.Errorf("%s: error %+v, want code %d", tc.name, e.Error, tc.code)
		}
	}
	// Without the token: 401, error 190.
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{`+base+`,"type":"text","text":{"body":"hi"}}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 401 || !bytes.Contains(b, []byte(`"code":190`)) {
		t.Errorf("no token: %d %s", res.StatusCode, b)
	}
}

func TestStartChecksConfig(t *testing.T) {
	if _, err := metawhatsappsim.Start(context.Background(), "127.0.0.1:0", metawhatsappsim.Config{Credentials: json.RawMessage(`{}`)}); err == nil {
		t.Error("started without credentials")
	}
	if _, err := metawhatsappsim.Start(context.Background(), "127.0.0.1:0", metawhatsappsim.Config{
		Credentials: metawhatsappsim.DemoCredentials(), Channel: chatprovider.ChannelViber}); err == nil {
		t.Error("started for viber")
	}
}

func TestVerifyCallbackWrongToken(t *testing.T) {
	creds := json.RawMessage(`{"accessToken":"demo-access-token","appSecret":"demo-app-secret","verifyToken":"another-token"}`)
	sim, _ := setup(t, metawhatsappsim.Config{}, &recorder{}, creds)
	if err := sim.VerifyCallback(context.Background()); err == nil {
		t.Fatal("verification passed with another verify token")
	}
}

func TestUnknownPath(t *testing.T) {
	sim, err := metawhatsappsim.Start(context.Background(), "127.0.0.1:0", metawhatsappsim.Config{Credentials: metawhatsappsim.DemoCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	for _, p := range []string{"/v23.0/abc/messages", "/23.0/106540352242922/messages", "/v23.0/106540352242922/media", "/messages"} {
		req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(sim.URL(), "/"+metawhatsappsim.APIVersion)+p, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer demo-access-token")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 400 {
			t.Errorf("%s: status %d, want 400", p, res.StatusCode)
		}
	}
}
