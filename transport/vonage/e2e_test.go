package vonage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/vonage"
	"github.com/heraldhq/herald/transport/vonage/vonagesim"
)

// e2e is an adapter wired to a simulator over real HTTP.
type e2e struct {
	sim *vonagesim.Server
	a   *vonage.Adapter
	rep *fakeReporter
}

func startE2E(t *testing.T, channel string, creds json.RawMessage, rate int) *e2e {
	t.Helper()
	rep := &fakeReporter{}
	sim, err := vonagesim.Start(context.Background(), "127.0.0.1:0", vonagesim.Config{Credentials: creds, Channel: channel, RatePerSecond: rate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	herald := httptest.NewUnstartedServer(nil)
	url := "http://" + herald.Listener.Addr().String() + "/callbacks/chat/42"
	a := newAdapter(t, channel, sim.URL(), creds, rep, func(s *chatprovider.Settings) { s.CallbackURL = url })
	herald.Config.Handler = a
	herald.Start()
	t.Cleanup(herald.Close)
	sim.SetCallbackURL(url)
	return &e2e{sim: sim, a: a, rep: rep}
}

// statusesOf waits until the reports of id reach want statuses.
func (e *e2e) statusesOf(t *testing.T, id messaging.ID, want int) []delivery.ChatStatus {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var got []delivery.ChatStatus
		e.rep.mu.Lock()
		for _, call := range e.rep.statuses {
			for _, s := range call {
				if s.MessageID == id {
					got = append(got, s)
				}
			}
		}
		e.rep.mu.Unlock()
		if len(got) >= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEndToEndViber(t *testing.T) {
	e := startE2E(t, chatprovider.ChannelViber, vonagesim.DemoCredentials(), 0)
	gen := messaging.NewIDGenerator(time.Now)
	send := func(to string, typ messaging.MessageType, c messaging.ChatConfig) messaging.ID {
		id := gen.New()
		acc, err := e.a.SendChat(context.Background(), delivery.ChatSend{MessageID: id, To: to, Sender: viberSender,
			Type: typ, Text: "Your parcel arrives today.", TTL: time.Hour, Config: c})
		if err != nil {
			t.Fatalf("send to %s: %v", to, err)
		}
		if acc.ProviderID == "" {
			t.Fatalf("send to %s: no message_uuid", to)
		}
		return id
	}
	ok := send("447700900001", messaging.TypeButtonPlusText, messaging.ChatConfig{ButtonText: "Track", ButtonURL: "https://shop.example.com/t"})
	video := send("447700900002", messaging.TypeVideo, messaging.ChatConfig{VideoURL: "https://cdn.example.com/v.mp4",
		ThumbnailURL: "https://cdn.example.com/v.jpg", Duration: 30, FileSize: 3 << 20})
	failures := map[messaging.ID]delivery.ChatReason{
		send("447700900008", messaging.TypeSimpleText, messaging.ChatConfig{}): delivery.ReasonBlocked,
		send("447700900009", messaging.TypeSimpleText, messaging.ChatConfig{}): delivery.ReasonNotOnChannel,
		send("447700900010", messaging.TypeSimpleText, messaging.ChatConfig{}): delivery.ReasonNoSuitableDevice,
	}
	for _, id := range []messaging.ID{ok, video} {
		got := e.statusesOf(t, id, 2)
		if len(got) != 2 || got[0].Status != messaging.StatusDelivered || got[1].Status != messaging.StatusSeen {
			t.Errorf("message %s: statuses %+v, want Delivered then Seen", id, got)
		}
	}
	for id, reason := range failures {
		got := e.statusesOf(t, id, 1)
		if len(got) != 1 || got[0].Status != messaging.StatusFailed || got[0].Reason != reason {
			t.Errorf("message %s: statuses %+v, want Failed %s", id, got, reason)
		}
		if code := delivery.ChatCodes()[reason]; !code.Fallback {
			t.Errorf("reason %s does not fall back to SMS", reason)
		}
	}
}

func TestEndToEndWhatsAppSurvey(t *testing.T) {
	e := startE2E(t, chatprovider.ChannelWhatsApp, vonagesim.DemoCredentials(), 0)
	id := messaging.NewIDGenerator(time.Now).New()
	opts := []messaging.SurveyOption{{OptionText: "Monday", OptionValue: "mon"}, {OptionText: "Tuesday", OptionValue: "tue"},
		{OptionText: "Wednesday", OptionValue: "wed"}, {OptionText: "Thursday", OptionValue: "thu"}}
	if _, err := e.a.SendChat(context.Background(), delivery.ChatSend{MessageID: id, To: "447700900013", Sender: waSender,
		Type: messaging.TypeSurvey, Text: "Which day suits you?", Config: messaging.ChatConfig{Options: opts}}); err != nil {
		t.Fatal(err)
	}
	if got := e.statusesOf(t, id, 2); len(got) != 2 {
		t.Fatalf("statuses %+v, want delivered and read", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.rep.mu.Lock()
		n := len(e.rep.inbound)
		var in delivery.ChatInbound
		if n > 0 {
			in = e.rep.inbound[0]
		}
		e.rep.mu.Unlock()
		if n > 0 {
			// The number ends in 3: option 3 mod 4.
			if in.Kind != delivery.InboundReply || in.MessageID != id || in.OptionIndex != 3 || in.Phone != "447700900013" || in.Text != "Thursday" {
				t.Errorf("inbound %+v, want a reply to %s picking option 3", in, id)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no survey answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEndToEndRefusals(t *testing.T) {
	creds := vonagesim.DemoCredentials()
	m := delivery.ChatSend{MessageID: messaging.NewIDGenerator(time.Now).New(), To: "447700900001", Sender: viberSender,
		Type: messaging.TypeSimpleText, Text: "hi"}
	t.Run("rate limit", func(t *testing.T) {
		e := startE2E(t, chatprovider.ChannelViber, creds, 2)
		var limited *delivery.SendError
		for i := 0; i < 4 && limited == nil; i++ {
			_, err := e.a.SendChat(context.Background(), m)
			if err != nil && !errors.As(err, &limited) {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		if limited == nil || limited.Permanent || limited.RetryAfter != time.Second || !errors.Is(limited, delivery.ErrRateLimited) {
			t.Errorf("beyond the rate: %+v, want transient with RetryAfter 1s", limited)
		}
	})
	t.Run("wrong credentials", func(t *testing.T) {
		e := startE2E(t, chatprovider.ChannelViber, creds, 0)
		other := newAdapter(t, chatprovider.ChannelViber, e.sim.URL(), vonagesim.DemoCredentials(), &fakeReporter{}, nil)
		_, err := other.SendChat(context.Background(), m)
		var se *delivery.SendError
		if !errors.As(err, &se) || se.Reason != delivery.ReasonServiceRefused {
			t.Errorf("other credentials: %v, want service refused", err)
		}
	})
	t.Run("strict validation", func(t *testing.T) {
		e := startE2E(t, chatprovider.ChannelViber, creds, 0)
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
		cases := map[string]struct {
			body, code string
		}{
			"unknown field": {`{"message_type":"text","channel":"viber_service","to":"447700900001","from":"x","text":"hi","colour":"red"}`, "#1020"},
			"missing text":  {`{"message_type":"text","channel":"viber_service","to":"447700900001","from":"x"}`, "#1010"},
			"carousel":      {`{"message_type":"carousel","channel":"viber_service","to":"447700900001","from":"x"}`, "#1020"},
			"ttl too short": {`{"message_type":"text","channel":"viber_service","to":"447700900001","from":"x","text":"hi","viber_service":{"ttl":5}}`, "#1020"},
			"other channel": {`{"message_type":"text","channel":"whatsapp","to":"447700900001","from":"x","text":"hi"}`, "#1020"},
		}
		for name, tc := range cases {
			req, _ := http.NewRequest(http.MethodPost, e.sim.URL()+vonage.MessagesPath, bytes.NewReader([]byte(tc.body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var p vonage.Problem
			_ = json.NewDecoder(resp.Body).Decode(&p)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || len(p.Type) < 5 || p.Type[len(p.Type)-5:] != tc.code || len(p.InvalidParameters) != 1 {
				t.Errorf("%s: HTTP %d %+v, want 400 %s naming the field", name, resp.StatusCode, p, tc.code)
			}
		}
		req, _ := http.NewRequest(http.MethodPost, e.sim.URL()+vonage.MessagesPath, bytes.NewReader([]byte(`{}`)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no token: HTTP %d, want 401", resp.StatusCode)
		}
	})
}
