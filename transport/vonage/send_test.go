package vonage_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/vonage"
)

// captured is what a fake provider received.
type captured struct {
	body []byte
	auth string
	ct   string
}

// fakeAPI answers every request with status and body and hands what it
// received to got.
func fakeAPI(t *testing.T, status int, body string, hdr map[string]string, got chan<- captured, count *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if count != nil {
			count.Add(1)
		}
		if r.URL.Path != vonage.MessagesPath || r.Method != http.MethodPost {
			t.Errorf("request %s %s, want POST %s", r.Method, r.URL.Path, vonage.MessagesPath)
		}
		b, _ := io.ReadAll(r.Body)
		if got != nil {
			got <- captured{body: b, auth: r.Header.Get("Authorization"), ct: r.Header.Get("Content-Type")}
		}
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const accepted = `{"message_uuid":"aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab"}`

func TestGoldenRequests(t *testing.T) {
	key, creds := testKey(t)
	id := messaging.MustParseID(testMsgID)
	viber, wa := chatprovider.ChannelViber, chatprovider.ChannelWhatsApp
	cases := []struct {
		file    string
		channel string
		m       delivery.ChatSend
	}{
		{"send_viber_1_text.json", viber, delivery.ChatSend{Type: messaging.TypeSimpleText, Text: "Your parcel arrives today.", TTL: time.Hour}},
		{"send_viber_2_image.json", viber, delivery.ChatSend{Type: messaging.TypeImageOnly,
			Config: messaging.ChatConfig{ImageURL: "https://cdn.example.com/offer.jpg"}}},
		{"send_viber_3_button_text.json", viber, delivery.ChatSend{Type: messaging.TypeButtonPlusText, Text: "Track your parcel.",
			Config: messaging.ChatConfig{ButtonText: "Track", ButtonURL: "https://shop.example.com/track/1"}}},
		{"send_viber_4_image_text.json", viber, delivery.ChatSend{Type: messaging.TypeImagePlusText, Text: "Half price this week.",
			Config: messaging.ChatConfig{ImageURL: "https://cdn.example.com/offer.jpg", ButtonText: "Shop now", ButtonURL: "https://shop.example.com/offer"}}},
		{"send_viber_7_video.json", viber, delivery.ChatSend{Type: messaging.TypeVideo, Text: "How to assemble your desk.",
			Config: messaging.ChatConfig{VideoURL: "https://cdn.example.com/howto.mp4", ThumbnailURL: "https://cdn.example.com/howto.jpg",
				FileSize: 11*(1<<20) + 5, Duration: 95, ButtonText: "Open the guide", ButtonURL: "https://shop.example.com/desk"}}},
		{"send_viber_8_file.json", viber, delivery.ChatSend{Type: messaging.TypeFile,
			Config: messaging.ChatConfig{FileURL: "https://cdn.example.com/invoice-1.pdf", FileName: "invoice-1.pdf", FileType: "pdf"}}},
		{"send_whatsapp_1_text.json", wa, delivery.ChatSend{Type: messaging.TypeSimpleText, Text: "Your parcel arrives today.", TTL: time.Hour}},
		{"send_whatsapp_2_image.json", wa, delivery.ChatSend{Type: messaging.TypeImageOnly,
			Config: messaging.ChatConfig{ImageURL: "https://cdn.example.com/offer.jpg"}}},
		{"send_whatsapp_3_button_text.json", wa, delivery.ChatSend{Type: messaging.TypeButtonPlusText, Text: "Track your parcel.",
			Config: messaging.ChatConfig{ButtonText: "Track", ButtonURL: "https://shop.example.com/track/1"}}},
		{"send_whatsapp_4_image_text.json", wa, delivery.ChatSend{Type: messaging.TypeImagePlusText, Text: "Half price this week.",
			Config: messaging.ChatConfig{ImageURL: "https://cdn.example.com/offer.jpg", ButtonText: "Shop now", ButtonURL: "https://shop.example.com/offer"}}},
		{"send_whatsapp_6_survey_buttons.json", wa, delivery.ChatSend{Type: messaging.TypeSurvey, Text: "How was your delivery?",
			Config: messaging.ChatConfig{Options: []messaging.SurveyOption{{OptionText: "Good", OptionValue: "good"},
				{OptionText: "Late", OptionValue: "late"}, {OptionText: "Damaged", OptionValue: "damaged"}}}}},
		{"send_whatsapp_6_survey_list.json", wa, delivery.ChatSend{Type: messaging.TypeSurvey, Text: "Which day suits you?",
			Config: messaging.ChatConfig{Options: []messaging.SurveyOption{{OptionText: "Monday", OptionValue: "mon"},
				{OptionText: "Tuesday", OptionValue: "tue"}, {OptionText: "Wednesday", OptionValue: "wed"}, {OptionText: "Thursday", OptionValue: "thu"}}}}},
		{"send_whatsapp_7_video.json", wa, delivery.ChatSend{Type: messaging.TypeVideo, Text: "How to assemble your desk.",
			Config: messaging.ChatConfig{VideoURL: "https://cdn.example.com/howto.mp4", ThumbnailURL: "https://cdn.example.com/howto.jpg", Duration: 95}}},
		{"send_whatsapp_8_file.json", wa, delivery.ChatSend{Type: messaging.TypeFile, Text: "Your invoice.",
			Config: messaging.ChatConfig{FileURL: "https://cdn.example.com/invoice-1.pdf", FileName: "invoice-1.pdf", FileType: "pdf"}}},
		{"send_whatsapp_template.json", wa, delivery.ChatSend{Type: messaging.TypeSimpleText, Text: "Hello Ada, your parcel arrives today.",
			Config: messaging.ChatConfig{ProviderTemplate: &messaging.ProviderTemplate{
				Name: "9b6b4fcb_da19_4a26_8fe8_78074a91b584:parcel_update", Language: "en_GB", Parameters: []string{"Ada", "today"}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan captured, 1)
			srv := fakeAPI(t, http.StatusAccepted, accepted, nil, got, nil)
			a := newAdapter(t, tc.channel, srv.URL, creds, &fakeReporter{}, nil)
			m := tc.m
			m.MessageID, m.To, m.ServiceID = id, "447700900000", 42
			if tc.channel == chatprovider.ChannelWhatsApp {
				m.Sender = waSender
			} // a Viber send without one goes from the service's Sender
			acc, err := a.SendChat(context.Background(), m)
			if err != nil {
				t.Fatalf("SendChat: %v", err)
			}
			if acc.ProviderID != "aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab" || acc.AlreadySent {
				t.Errorf("accepted %+v", acc)
			}
			c := <-got
			if !jsonEqual(t, c.body, want) {
				t.Errorf("request body\n%s\nwant (JSON-equal)\n%s", c.body, want)
			}
			if c.ct != "application/json" {
				t.Errorf("Content-Type %q", c.ct)
			}
			tok, ok := vonage.Bearer(c.auth)
			if !ok {
				t.Fatalf("Authorization %q is not a bearer token", c.auth)
			}
			claims, err := vonage.VerifyRS256(&key.PublicKey, tok)
			if err != nil {
				t.Fatalf("request token: %v", err)
			}
			if claims.ApplicationID != testAppID || claims.ID == "" || claims.IssuedAt == 0 || claims.Expires <= claims.IssuedAt {
				t.Errorf("request token claims %+v", claims)
			}
		})
	}
}

func TestRefusedTypes(t *testing.T) {
	_, creds := testKey(t)
	viber, wa := chatprovider.ChannelViber, chatprovider.ChannelWhatsApp
	opts := []messaging.SurveyOption{{OptionText: "Yes", OptionValue: "y"}, {OptionText: "No", OptionValue: "n"}}
	cases := []struct {
		name, channel string
		t             messaging.MessageType
		c             messaging.ChatConfig
		field         string
	}{
		{"viber carousel", viber, messaging.TypeCarousel, messaging.ChatConfig{}, "messageType"},
		{"viber survey", viber, messaging.TypeSurvey, messaging.ChatConfig{Options: opts}, "messageType"},
		{"whatsapp carousel", wa, messaging.TypeCarousel, messaging.ChatConfig{}, "messageType"},
		{"viber video without thumbnail", viber, messaging.TypeVideo,
			messaging.ChatConfig{VideoURL: "https://v.example.com/a.mp4", Duration: 10, FileSize: 1 << 20}, "typeSpecificConfig.thumbnailUrl"},
		{"viber video without duration", viber, messaging.TypeVideo,
			messaging.ChatConfig{VideoURL: "https://v.example.com/a.mp4", ThumbnailURL: "https://v.example.com/a.jpg", FileSize: 1 << 20}, "typeSpecificConfig.duration"},
		{"viber long file name", viber, messaging.TypeFile,
			messaging.ChatConfig{FileURL: "https://f.example.com/a.pdf", FileName: "a-very-long-file-name-of-the-invoice.pdf", FileType: "pdf"}, "typeSpecificConfig.fileName"},
		{"whatsapp video with a button", wa, messaging.TypeVideo,
			messaging.ChatConfig{VideoURL: "https://v.example.com/a.mp4", ButtonText: "Open", ButtonURL: "https://x.example.com"}, "typeSpecificConfig.buttonText"},
		{"whatsapp long button", wa, messaging.TypeButtonPlusText,
			messaging.ChatConfig{ButtonText: "Open the complete guide now", ButtonURL: "https://x.example.com"}, "typeSpecificConfig.buttonText"},
		{"whatsapp long option", wa, messaging.TypeSurvey,
			messaging.ChatConfig{Options: []messaging.SurveyOption{{OptionText: "Yes", OptionValue: "y"}, {OptionText: "Only on the weekend, please", OptionValue: "w"}}},
			"typeSpecificConfig.options[1].optionText"},
		{"template without language", wa, messaging.TypeSimpleText,
			messaging.ChatConfig{ProviderTemplate: &messaging.ProviderTemplate{Name: "x"}}, "typeSpecificConfig.providerTemplate.language"},
	}
	var count atomic.Int32
	srv := fakeAPI(t, http.StatusAccepted, accepted, nil, nil, &count)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := vonage.Provider().Carries(tc.channel, tc.t, tc.c)
			var me *messaging.Error
			if !errors.As(err, &me) || me.Code != messaging.Invalid {
				t.Fatalf("Carries = %v, want an Invalid error", err)
			}
			if _, ok := me.Fields[tc.field]; !ok {
				t.Errorf("Carries fields %v, want %s", me.Fields, tc.field)
			}
			a := newAdapter(t, tc.channel, srv.URL, creds, &fakeReporter{}, nil)
			_, err = a.SendChat(context.Background(), delivery.ChatSend{MessageID: messaging.MustParseID(testMsgID), To: "447700900000", Type: tc.t, Text: "x", Config: tc.c})
			var se *delivery.SendError
			if !errors.As(err, &se) || se.Reason != delivery.ReasonUnsupported || !se.Permanent {
				t.Errorf("SendChat = %v, want a permanent unsupported failure", err)
			}
		})
	}
	if n := count.Load(); n != 0 {
		t.Errorf("%d requests reached the provider, want none", n)
	}
	// What a channel carries is accepted.
	for _, ok := range []struct {
		channel string
		t       messaging.MessageType
		c       messaging.ChatConfig
	}{
		{viber, messaging.TypeSimpleText, messaging.ChatConfig{}},
		{wa, messaging.TypeSurvey, messaging.ChatConfig{Options: opts}},
		{wa, messaging.TypeCarousel, messaging.ChatConfig{ProviderTemplate: &messaging.ProviderTemplate{Name: "promo", Language: "en"}}},
	} {
		if err := vonage.Carries(ok.channel, ok.t, ok.c); err != nil {
			t.Errorf("Carries(%s, %d) = %v, want nil", ok.channel, ok.t, err)
		}
	}
}

func TestCheckCredentials(t *testing.T) {
	_, creds := testKey(t)
	check := vonage.Provider().CheckCredentials
	if err := check(chatprovider.ChannelWhatsApp, creds); err != nil {
		t.Fatalf("valid credentials: %v", err)
	}
	cases := []struct{ creds, field string }{
		{``, "credentials"},
		{`[1]`, "credentials"},
		{`{"privateKey":"x","signatureSecret":"s"}`, "credentials.applicationId"},
		{`{"applicationId":"a","signatureSecret":"s"}`, "credentials.privateKey"},
		{`{"applicationId":"a","privateKey":"not a key","signatureSecret":"s"}`, "credentials.privateKey"},
	}
	for _, tc := range cases {
		err := check(chatprovider.ChannelViber, []byte(tc.creds))
		var me *messaging.Error
		if !errors.As(err, &me) || me.Code != messaging.Invalid {
			t.Errorf("%s: %v, want Invalid", tc.creds, err)
			continue
		}
		if _, ok := me.Fields[tc.field]; !ok {
			t.Errorf("%s: fields %v, want %s", tc.creds, me.Fields, tc.field)
		}
	}
	noSecret := strings.Replace(string(creds), testSecret, "", 1)
	var me *messaging.Error
	if err := check(chatprovider.ChannelViber, []byte(noSecret)); !errors.As(err, &me) || me.Fields["credentials.signatureSecret"] == "" {
		t.Errorf("no secret: %v, want credentials.signatureSecret", err)
	}
	if err := check("telegram", creds); err == nil {
		t.Error("an unknown channel was accepted")
	}
}

func TestWhatsAppCustomerWindow(t *testing.T) {
	_, creds := testKey(t)
	var count atomic.Int32
	srv := fakeAPI(t, http.StatusAccepted, accepted, nil, nil, &count)
	m := delivery.ChatSend{MessageID: messaging.MustParseID(testMsgID), To: "447700900000", Type: messaging.TypeSimpleText, Text: "hi"}
	for name, mod := range map[string]func(*chatprovider.Settings){
		"no contacts":   func(s *chatprovider.Settings) { s.Contacts = nil },
		"never wrote":   func(s *chatprovider.Settings) { s.Contacts = contacts{} },
		"wrote 25h ago": func(s *chatprovider.Settings) { s.Contacts = contacts{last: time.Now().Add(-25 * time.Hour)} },
	} {
		a := newAdapter(t, chatprovider.ChannelWhatsApp, srv.URL, creds, &fakeReporter{}, mod)
		_, err := a.SendChat(context.Background(), m)
		var se *delivery.SendError
		if !errors.As(err, &se) || se.Reason != delivery.ReasonNotPermitted {
			t.Errorf("%s: %v, want not permitted", name, err)
		}
	}
	if n := count.Load(); n != 0 {
		t.Fatalf("%d requests outside the window, want none", n)
	}
	a := newAdapter(t, chatprovider.ChannelWhatsApp, srv.URL, creds, &fakeReporter{}, func(s *chatprovider.Settings) { s.Contacts = nil })
	m.Config.ProviderTemplate = &messaging.ProviderTemplate{Name: "hello", Language: "en"}
	if _, err := a.SendChat(context.Background(), m); err != nil {
		t.Fatalf("template outside the window: %v", err)
	}
	if n := count.Load(); n != 1 {
		t.Errorf("%d requests for a template message, want 1", n)
	}
}

func TestSendAnswers(t *testing.T) {
	_, creds := testKey(t)
	cases := []struct {
		name      string
		status    int
		body      string
		hdr       map[string]string
		reason    delivery.ChatReason
		permanent bool
		retry     time.Duration
	}{
		{"rate limited", 429, `{"type":"https://developer.vonage.com/api-errors#throttled","title":"Rate Limit Hit"}`,
			map[string]string{"Retry-After": "7"}, delivery.ReasonTransient, false, 7 * time.Second},
		{"throttled code", 422, `{"type":"https://developer.vonage.com/api-errors/messages#1000","title":"Throttled"}`,
			map[string]string{"Retry-After": "2"}, delivery.ReasonTransient, false, 2 * time.Second},
		{"server error", 500, `{"type":"https://developer.vonage.com/api-errors#internal","title":"Internal Error"}`, nil, delivery.ReasonTransient, false, 0},
		{"bad gateway without body", 502, ``, nil, delivery.ReasonTransient, false, 0},
		{"wrong credentials", 401, `{"type":"https://developer.vonage.com/api-errors#unauthorized","title":"Unauthorized"}`, nil, delivery.ReasonServiceRefused, true, 0},
		{"invalid params", 422, `{"type":"https://developer.vonage.com/api-errors/messages#1020","title":"Invalid params","detail":"The value of one or more parameters is invalid.","invalid_parameters":[{"name":"text","reason":"too long"}]}`,
			nil, delivery.ReasonRejected, true, 0},
		{"invalid number", 400, `{"type":"https://developer.vonage.com/api-errors/messages#1170","title":"Invalid or Missing Msisdn Param"}`, nil, delivery.ReasonInvalidNumber, true, 0},
		{"account barred", 403, `{"type":"https://developer.vonage.com/api-errors/messages#1060","title":"Partner account barred"}`, nil, delivery.ReasonServiceRefused, true, 0},
		{"outside the window", 422, `{"type":"https://developer.vonage.com/api-errors/messages#1340","title":"Outside of the allowed window"}`, nil, delivery.ReasonNotPermitted, true, 0},
		{"unknown code", 422, `{"type":"https://developer.vonage.com/api-errors/messages#1999","title":"Something new"}`, nil, delivery.ReasonRejected, true, 0},
		{"accepted without uuid", 202, `{}`, nil, delivery.ReasonTransient, false, 0},
	}
	m := delivery.ChatSend{MessageID: messaging.MustParseID(testMsgID), To: "447700900000", Type: messaging.TypeSimpleText, Text: "hi"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeAPI(t, tc.status, tc.body, tc.hdr, nil, nil)
			a := newAdapter(t, chatprovider.ChannelViber, srv.URL, creds, &fakeReporter{}, nil)
			_, err := a.SendChat(context.Background(), m)
			var se *delivery.SendError
			if !errors.As(err, &se) {
				t.Fatalf("SendChat = %v, want a *delivery.SendError", err)
			}
			if se.Reason != tc.reason || se.Permanent != tc.permanent || se.RetryAfter != tc.retry {
				t.Errorf("got reason %s permanent %v retry %s, want %s %v %s", se.Reason, se.Permanent, se.RetryAfter, tc.reason, tc.permanent, tc.retry)
			}
			if tc.retry > 0 && !errors.Is(err, delivery.ErrRateLimited) {
				t.Errorf("a 429 does not wrap ErrRateLimited: %v", err)
			}
			if want := delivery.ChatCodes()[tc.reason]; se.Details != want.Name {
				t.Errorf("details %q, want %q", se.Details, want.Name)
			}
		})
	}
	t.Run("already sent", func(t *testing.T) {
		srv := fakeAPI(t, 422, `{"type":"https://developer.vonage.com/api-errors/messages#1320","title":"Message already sent"}`, nil, nil, nil)
		a := newAdapter(t, chatprovider.ChannelViber, srv.URL, creds, &fakeReporter{}, nil)
		acc, err := a.SendChat(context.Background(), m)
		if err != nil || !acc.AlreadySent {
			t.Errorf("got %+v, %v; want AlreadySent", acc, err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
		defer srv.Close()
		defer close(release)
		a := newAdapter(t, chatprovider.ChannelViber, srv.URL, creds, &fakeReporter{}, func(s *chatprovider.Settings) {
			s.Client = &http.Client{Timeout: 100 * time.Millisecond}
		})
		_, err := a.SendChat(context.Background(), m)
		var se *delivery.SendError
		if !errors.As(err, &se) || se.Permanent || se.Reason != delivery.ReasonTransient {
			t.Errorf("timeout: %v, want a transient failure", err)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		srv := fakeAPI(t, 202, accepted, nil, nil, nil)
		a := newAdapter(t, chatprovider.ChannelViber, srv.URL, creds, &fakeReporter{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := a.SendChat(ctx, m); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v, want context.Canceled", err)
		}
	})
}

// TestTokenReused: one RS256 token serves the sends of most of its
// lifetime (signing is the costliest part of a send), and a new one is
// signed before it would reach Vonage expired.
func TestTokenReused(t *testing.T) {
	_, creds := testKey(t)
	got := make(chan captured, 3)
	srv := fakeAPI(t, http.StatusAccepted, accepted, nil, got, nil)
	var offset atomic.Int64
	a := newAdapter(t, chatprovider.ChannelViber, srv.URL, creds, nil, func(s *chatprovider.Settings) {
		s.Reporter = &fakeReporter{}
		s.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	})
	send := func() string {
		t.Helper()
		_, err := a.SendChat(context.Background(), delivery.ChatSend{MessageID: messaging.MustParseID(testMsgID), To: "447700900001",
			Type: messaging.TypeSimpleText, Text: "hi"})
		if err != nil {
			t.Fatalf("SendChat: %v", err)
		}
		return (<-got).auth
	}
	first := send()
	offset.Store(int64(vonage.TokenLifetime * 3 / 4))
	if again := send(); again != first {
		t.Errorf("a new token within most of its lifetime")
	}
	offset.Store(int64(vonage.TokenLifetime * 9 / 10))
	if later := send(); later == first {
		t.Errorf("a token near its expiry is used again")
	}
}
