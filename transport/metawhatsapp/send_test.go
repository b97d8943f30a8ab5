package metawhatsapp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

func textMessage(to string) delivery.ChatSend {
	return delivery.ChatSend{MessageID: msgID(testMessageID), ServiceID: 42, Sender: testPhoneID, To: to,
		Type: messaging.TypeSimpleText, Text: "hello"}
}

// sendError asserts err is a *delivery.SendError of reason.
func sendError(t *testing.T, err error, reason delivery.ChatReason) *delivery.SendError {
	t.Helper()
	var se *delivery.SendError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *delivery.SendError", err, err)
	}
	if se.Reason != reason {
		t.Fatalf("reason %q, want %q (%v)", se.Reason, reason, err)
	}
	want := delivery.ChatCodes()[reason]
	if se.Permanent != want.Permanent || se.Details != want.Name {
		t.Errorf("SendError %+v does not carry the code of %q", se, reason)
	}
	return se
}

func TestCarriesRefuses(t *testing.T) {
	long := strings.Repeat("x", 21)
	tests := []struct {
		name  string
		t     messaging.MessageType
		c     messaging.ChatConfig
		field string
	}{
		{"button label over 20", messaging.TypeButtonPlusText, messaging.ChatConfig{ButtonText: long, ButtonURL: "https://a.example"}, "typeSpecificConfig.buttonText"},
		{"image button label over 20", messaging.TypeImagePlusText, messaging.ChatConfig{ImageURL: "https://a.example/i.png", ButtonText: long, ButtonURL: "https://a.example"}, "typeSpecificConfig.buttonText"},
		{"carousel second button", messaging.TypeCarousel, messaging.ChatConfig{Items: []messaging.CarouselItem{
			{Title: "ab", ImageURL: "https://a.example/1.png", ButtonText: "Buy", ButtonURL: "https://a.example/1"},
			{Title: "cd", ImageURL: "https://a.example/2.png", ButtonText: "Buy", ButtonURL: "https://a.example/2", SecondaryButtonText: "More", SecondaryButtonURL: "https://a.example/m"},
		}}, "typeSpecificConfig.items[1].secondaryButtonText"},
		{"button option over 20", messaging.TypeSurvey, messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "yes", OptionValue: "y"}, {OptionText: long, OptionValue: "n"}}}, "typeSpecificConfig.options[1].optionText"},
		{"list option over 24", messaging.TypeSurvey, messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "a", OptionValue: "1"}, {OptionText: "b", OptionValue: "2"}, {OptionText: "c", OptionValue: "3"},
			{OptionText: strings.Repeat("y", 25), OptionValue: "4"}}}, "typeSpecificConfig.options[3].optionText"},
		{"same option twice", messaging.TypeSurvey, messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "yes", OptionValue: "y"}, {OptionText: "yes", OptionValue: "n"}}}, "typeSpecificConfig.options[1].optionText"},
		{"video over 16 MB", messaging.TypeVideo, messaging.ChatConfig{VideoURL: "https://a.example/v.mp4", FileSize: 17 << 20}, "typeSpecificConfig.fileSize"},
		{"zip file", messaging.TypeFile, messaging.ChatConfig{FileURL: "https://a.example/f.zip", FileName: "f.zip", FileType: "ZIP"}, "typeSpecificConfig.fileType"},
		{"template name", messaging.TypeSimpleText, messaging.ChatConfig{ProviderTemplate: &messaging.ProviderTemplate{Name: "Order Shipped", Language: "en"}}, "typeSpecificConfig.providerTemplate.name"},
		{"template language", messaging.TypeSimpleText, messaging.ChatConfig{ProviderTemplate: &messaging.ProviderTemplate{Name: "order", Language: "english"}}, "typeSpecificConfig.providerTemplate.language"},
		{"template carousel", messaging.TypeCarousel, messaging.ChatConfig{ProviderTemplate: &messaging.ProviderTemplate{Name: "order", Language: "en"}}, "messageType"},
		{"template document not PDF", messaging.TypeFile, messaging.ChatConfig{FileType: "DOCX", ProviderTemplate: &messaging.ProviderTemplate{Name: "order", Language: "en"}}, "typeSpecificConfig.fileType"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Provider().Carries(chatprovider.ChannelWhatsApp, tc.t, tc.c)
			var me *messaging.Error
			if !errors.As(err, &me) || me.Code != messaging.Invalid {
				t.Fatalf("Carries = %v, want an Invalid error", err)
			}
			if _, ok := me.Fields[tc.field]; !ok {
				t.Errorf("fields %v do not name %s", me.Fields, tc.field)
			}
			// The adapter refuses it too, without a request.
			g := newFakeGraph(t)
			a := newTestAdapter(t, g.srv.URL+"/v23.0", &fakeReporter{})
			m := textMessage("998901234567")
			m.Type, m.Config = tc.t, tc.c
			_, err = a.SendChat(context.Background(), m)
			sendError(t, err, delivery.ReasonUnsupported)
			if n := len(g.requests()); n != 0 {
				t.Errorf("%d requests for a refused message", n)
			}
		})
	}
	if err := Carries(chatprovider.ChannelViber, messaging.TypeSimpleText, messaging.ChatConfig{}); err == nil {
		t.Error("Carries took the viber channel")
	}
	for _, g := range goldenSends() {
		if err := Carries(chatprovider.ChannelWhatsApp, g.m.Type, g.m.Config); err != nil {
			t.Errorf("%s: Carries refused a golden message: %v", g.file, err)
		}
	}
}

func TestCheckCredentials(t *testing.T) {
	if err := CheckCredentials(chatprovider.ChannelWhatsApp, testCredentials()); err != nil {
		t.Fatalf("valid credentials refused: %v", err)
	}
	tests := []struct {
		creds  string
		fields []string
	}{
		{`{"accessToken":"t","appSecret":"s"}`, []string{"credentials.verifyToken"}},
		{`{"appSecret":" ","verifyToken":"v"}`, []string{"credentials.accessToken", "credentials.appSecret"}},
		{`"token"`, []string{"credentials"}},
		{`{"accessToken":1}`, []string{"credentials"}},
	}
	for _, tc := range tests {
		err := CheckCredentials(chatprovider.ChannelWhatsApp, json.RawMessage(tc.creds))
		var me *messaging.Error
		if !errors.As(err, &me) || me.Code != messaging.Invalid {
			t.Errorf("%s: %v, want Invalid", tc.creds, err)
			continue
		}
		for _, f := range tc.fields {
			if _, ok := me.Fields[f]; !ok {
				t.Errorf("%s: fields %v do not name %s", tc.creds, me.Fields, f)
			}
		}
		if len(me.Fields) != len(tc.fields) {
			t.Errorf("%s: fields %v, want %v", tc.creds, me.Fields, tc.fields)
		}
	}
}

func TestCustomerWindow(t *testing.T) {
	g := newFakeGraph(t)
	a := newTestAdapter(t, g.srv.URL+"/v23.0", &fakeReporter{})
	a.s.Contacts = lastAt{testNow().Add(-CustomerWindow - time.Second)}
	_, err := a.SendChat(context.Background(), textMessage("998901234567"))
	sendError(t, err, delivery.ReasonNotPermitted)

	a.s.Contacts = nil
	_, err = a.SendChat(context.Background(), textMessage("998901234567"))
	sendError(t, err, delivery.ReasonNotPermitted)
	if n := len(g.requests()); n != 0 {
		t.Fatalf("%d requests outside the window", n)
	}

	// A template goes at any time.
	m := textMessage("998901234567")
	m.Config.ProviderTemplate = &messaging.ProviderTemplate{Name: "hello_world", Language: "en_US"}
	if _, err := a.SendChat(context.Background(), m); err != nil {
		t.Fatalf("template outside the window: %v", err)
	}
	a.s.Contacts = lastAt{testNow().Add(-CustomerWindow + time.Minute)}
	if _, err := a.SendChat(context.Background(), textMessage("998901234567")); err != nil {
		t.Fatalf("inside the window: %v", err)
	}
	if n := len(g.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

type lastAt struct{ t time.Time }

func (l lastAt) LastInbound(context.Context, int64, string) (time.Time, bool, error) {
	return l.t, true, nil
}

func TestInvalidNumber(t *testing.T) {
	g := newFakeGraph(t)
	a := newTestAdapter(t, g.srv.URL+"/v23.0", &fakeReporter{})
	for _, to := range []string{"", "12345", "+998901234567", "9989012345678901"} {
		_, err := a.SendChat(context.Background(), textMessage(to))
		sendError(t, err, delivery.ReasonInvalidNumber)
	}
	if n := len(g.requests()); n != 0 {
		t.Fatalf("%d requests for invalid numbers", n)
	}
}

func TestErrorAnswers(t *testing.T) {
	graphErr := func(code int, details string) string {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": "(#x) title", "type": "OAuthException", "code": code,
			"error_data": map[string]any{"messaging_product": "whatsapp", "details": details}, "fbtrace_id": "A1"}})
		return string(b)
	}
	tests := []struct {
		name      string
		status    int
		body      string
		header    http.Header
		reason    delivery.ChatReason
		rateLimit bool
		retry     time.Duration
	}{
		{"re-engagement", 400, readFile(t, "answer/error_131047.json"), nil, delivery.ReasonNotPermitted, false, 0},
		{"expired token", 401, readFile(t, "answer/error_190.json"), nil, delivery.ReasonServiceRefused, false, 0},
		{"throughput with Retry-After", 429, readFile(t, "answer/error_130429.json"), http.Header{"Retry-After": {"7"}}, delivery.ReasonTransient, true, 7 * time.Second},
		{"throughput code on a 400", 400, graphErr(130429, ""), nil, delivery.ReasonTransient, true, 0},
		{"pair rate limit", 400, graphErr(131056, ""), http.Header{"Retry-After": {"2"}}, delivery.ReasonTransient, true, 2 * time.Second},
		{"429 without a body", 429, "", http.Header{"Retry-After": {testNow().Add(30 * time.Second).Format(http.TimeFormat)}}, delivery.ReasonTransient, true, 30 * time.Second},
		{"server error", 500, graphErr(131000, "Something went wrong"), nil, delivery.ReasonTransient, false, 0},
		{"bare 503", 503, "<html>busy</html>", nil, delivery.ReasonTransient, false, 0},
		{"service unavailable", 503, graphErr(131016, ""), nil, delivery.ReasonTransient, false, 0},
		{"undeliverable", 400, graphErr(131026, "Message Undeliverable."), nil, delivery.ReasonNotOnChannel, false, 0},
		{"old app", 400, graphErr(131026, "The recipient's WhatsApp version cannot show this message."), nil, delivery.ReasonNoSuitableDevice, false, 0},
		{"opted out of marketing", 400, graphErr(131050, ""), nil, delivery.ReasonBlocked, false, 0},
		{"unsupported type", 400, graphErr(131051, ""), nil, delivery.ReasonUnsupported, false, 0},
		{"invalid parameter", 400, graphErr(100, "Invalid parameter"), nil, delivery.ReasonRejected, false, 0},
		{"template missing", 404, graphErr(132001, ""), nil, delivery.ReasonRejected, false, 0},
		{"permission range", 403, graphErr(230, ""), nil, delivery.ReasonServiceRefused, false, 0},
		{"unknown code on a 403", 403, graphErr(999999, ""), nil, delivery.ReasonServiceRefused, false, 0},
		{"unknown code on a 400", 400, graphErr(999999, ""), nil, delivery.ReasonRejected, false, 0},
		{"200 without an id", 200, `{"messaging_product":"whatsapp"}`, nil, delivery.ReasonTransient, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newFakeGraph(t)
			g.answer(tc.status, tc.body, tc.header)
			a := newTestAdapter(t, g.srv.URL+"/v23.0", &fakeReporter{})
			_, err := a.SendChat(context.Background(), textMessage("998901234567"))
			se := sendError(t, err, tc.reason)
			if got := errors.Is(err, delivery.ErrRateLimited); got != tc.rateLimit {
				t.Errorf("rate limited = %v, want %v", got, tc.rateLimit)
			}
			if se.RetryAfter != tc.retry {
				t.Errorf("RetryAfter = %v, want %v", se.RetryAfter, tc.retry)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Error("the error shows the access token")
			}
		})
	}
}

func TestTimeoutIsTransient(t *testing.T) {
	g := newFakeGraph(t)
	g.delay = time.Second
	a := newTestAdapter(t, g.srv.URL+"/v23.0", &fakeReporter{})
	a.s.Client = &http.Client{Timeout: 50 * time.Millisecond}
	_, err := a.SendChat(context.Background(), textMessage("998901234567"))
	se := sendError(t, err, delivery.ReasonTransient)
	if se.Provider != "timeout" {
		t.Errorf("provider word %q, want timeout", se.Provider)
	}

	// The caller's own end is a context error, not a provider failure.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	a.s.Client = &http.Client{}
	_, err = a.SendChat(ctx, textMessage("998901234567"))
	var se2 *delivery.SendError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &se2) {
		t.Fatalf("error %v, want a wrapped context error", err)
	}
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	g := newFakeGraph(t)
	url := g.srv.URL
	g.srv.Close()
	a := newTestAdapter(t, url+"/v23.0", &fakeReporter{})
	_, err := a.SendChat(context.Background(), textMessage("998901234567"))
	sendError(t, err, delivery.ReasonTransient)
}

func TestNewChecksSettings(t *testing.T) {
	good := chatprovider.Settings{ServiceID: 1, Channel: chatprovider.ChannelWhatsApp, Sender: testPhoneID,
		Credentials: testCredentials(), Client: http.DefaultClient, Reporter: &fakeReporter{}}
	if _, err := Provider().New(context.Background(), good); err != nil {
		t.Fatalf("New: %v", err)
	}
	for name, mod := range map[string]func(*chatprovider.Settings){
		"viber":       func(s *chatprovider.Settings) { s.Channel = chatprovider.ChannelViber },
		"sender":      func(s *chatprovider.Settings) { s.Sender = "+15550783881" },
		"credentials": func(s *chatprovider.Settings) { s.Credentials = json.RawMessage(`{}`) },
		"client":      func(s *chatprovider.Settings) { s.Client = nil },
		"reporter":    func(s *chatprovider.Settings) { s.Reporter = nil },
		"base URL":    func(s *chatprovider.Settings) { s.BaseURL = "ftp://graph.example.com" },
	} {
		s := good
		mod(&s)
		a, err := Provider().New(context.Background(), s)
		if err == nil || a != nil {
			t.Errorf("%s: New = %v, %v; want an error and no adapter", name, a, err)
		}
		if err != nil && strings.Contains(err.Error(), testAppSecret) {
			t.Errorf("%s: the error shows a secret", name)
		}
	}
}
