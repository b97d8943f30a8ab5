package infobip_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/infobip"
)

// goldenSends are one message of each type with the request Infobip's
// reference gives for it, in testdata.
func goldenSends() []struct {
	file string
	m    delivery.ChatSend
} {
	base := delivery.ChatSend{MessageID: testID(), ServiceID: 42, Sender: "HeraldShop", To: "385981234567", Ref: 7}
	with := func(t messaging.MessageType, text string, ttl time.Duration, c messaging.ChatConfig) delivery.ChatSend {
		m := base
		m.Type, m.Text, m.TTL, m.Config = t, text, ttl, c
		return m
	}
	return []struct {
		file string
		m    delivery.ChatSend
	}{
		{"send_1_text.json", with(messaging.TypeSimpleText, "Your order 1042 has shipped.", time.Hour, messaging.ChatConfig{})},
		{"send_2_image.json", with(messaging.TypeImageOnly, "", 0, messaging.ChatConfig{ImageURL: "https://cdn.example.com/sale.jpg"})},
		{"send_3_button_text.json", with(messaging.TypeButtonPlusText, "Track your parcel.", 0, messaging.ChatConfig{
			ButtonText: "Track", ButtonURL: "https://shop.example.com/track/1042"})},
		{"send_4_image_text.json", with(messaging.TypeImagePlusText, "Spring sale: 20% off.", 0, messaging.ChatConfig{
			ImageURL: "https://cdn.example.com/spring.png", ButtonText: "Shop now", ButtonURL: "https://shop.example.com/spring"})},
		{"send_5_carousel.json", with(messaging.TypeCarousel, "New arrivals", 0, messaging.ChatConfig{Items: []messaging.CarouselItem{
			{Title: "Linen shirt", ImageURL: "https://cdn.example.com/shirt.jpg", ButtonText: "Buy", ButtonURL: "https://shop.example.com/shirt",
				SecondaryButtonText: "Details", SecondaryButtonURL: "https://shop.example.com/shirt/info"},
			{Title: "Canvas shoes", ImageURL: "https://cdn.example.com/shoes.jpg", ButtonText: "Buy", ButtonURL: "https://shop.example.com/shoes"},
		}})},
		{"send_6_survey.json", with(messaging.TypeSurvey, "Did your parcel arrive on time?", 0, messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "Yes", OptionValue: "yes"}, {OptionText: "No", OptionValue: "no"}, {OptionText: "Not sure", OptionValue: "unsure"},
		}})},
		{"send_7_video.json", with(messaging.TypeVideo, "How to assemble your desk", 0, messaging.ChatConfig{
			VideoURL: "https://cdn.example.com/desk.mp4", ThumbnailURL: "https://cdn.example.com/desk.jpg", Duration: 95, FileSize: 1 << 20,
			ButtonText: "Manual", ButtonURL: "https://shop.example.com/desk/manual"})},
		{"send_8_file.json", with(messaging.TypeFile, "", 0, messaging.ChatConfig{
			FileURL: "https://cdn.example.com/invoice-1042.pdf", FileName: "invoice-1042", FileType: "PDF"})},
	}
}

func TestGoldenRequests(t *testing.T) {
	for _, tc := range goldenSends() {
		t.Run(tc.file, func(t *testing.T) {
			p, url := newProvider(t, answerWith(http.StatusOK, golden(t, "answer_accepted.json")))
			a := newAdapter(t, url, newReporter())
			acc, err := a.SendChat(context.Background(), tc.m)
			require.NoError(t, err)
			require.Equal(t, delivery.ChatAccepted{ProviderID: testID().String()}, acc)
			bodies, auth := p.requests()
			require.Len(t, bodies, 1)
			require.JSONEq(t, string(golden(t, tc.file)), string(bodies[0]))
			require.Equal(t, "App "+testAPIKey, auth[0])
		})
	}
}

func TestRequestWithoutCallbackURLOrTTL(t *testing.T) {
	p, url := newProvider(t, answerWith(http.StatusOK, golden(t, "answer_accepted.json")))
	a, err := infobip.New(context.Background(), chatprovider.Settings{
		ServiceID: 42, Sender: "HeraldShop", BaseURL: url + "/", Credentials: testCreds(), Reporter: newReporter(),
	})
	require.NoError(t, err)
	defer a.Close()
	m := goldenSends()[0].m
	m.TTL = 30 * 24 * time.Hour // past Infobip's 48 hours
	_, err = a.SendChat(context.Background(), m)
	require.NoError(t, err)
	bodies, _ := p.requests()
	require.JSONEq(t, `{"messages":[{"sender":"HeraldShop",
		"destinations":[{"to":"385981234567","messageId":"`+testID().String()+`"}],
		"content":{"type":"TEXT","text":"Your order 1042 has shipped."},
		"options":{"validityPeriod":{"amount":172800,"timeUnit":"SECONDS"}},
		"webhooks":{"callbackData":"`+testID().String()+`"}}]}`, string(bodies[0]))
}

func TestRefusedTypes(t *testing.T) {
	p, url := newProvider(t, answerWith(http.StatusOK, golden(t, "answer_accepted.json")))
	a := newAdapter(t, url, newReporter())
	cases := []struct {
		name  string
		t     messaging.MessageType
		c     messaging.ChatConfig
		field string
	}{
		{"video without thumbnail", messaging.TypeVideo, messaging.ChatConfig{VideoURL: "https://cdn.example.com/v.mp4", Duration: 5},
			"typeSpecificConfig.thumbnailUrl"},
		{"video without duration", messaging.TypeVideo, messaging.ChatConfig{VideoURL: "https://cdn.example.com/v.mp4",
			ThumbnailURL: "https://cdn.example.com/v.jpg"}, "typeSpecificConfig.duration"},
		{"zip file", messaging.TypeFile, messaging.ChatConfig{FileURL: "https://cdn.example.com/a.zip", FileName: "a.zip", FileType: "ZIP"},
			"typeSpecificConfig.fileType"},
		{"not a chat type", messaging.MessageType(9), messaging.ChatConfig{}, "messageType"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := infobip.Carries(chatprovider.ChannelViber, tc.t, tc.c)
			var me *messaging.Error
			require.ErrorAs(t, err, &me)
			require.Equal(t, messaging.Invalid, me.Code)
			require.Contains(t, me.Fields, tc.field)

			m := goldenSends()[0].m
			m.Type, m.Config = tc.t, tc.c
			_, err = a.SendChat(context.Background(), m)
			se := sendErr(t, err)
			require.Equal(t, delivery.ReasonUnsupported, se.Reason)
			require.True(t, se.Permanent)
		})
	}
	bodies, _ := p.requests()
	require.Empty(t, bodies, "a refused message is never sent")
	require.Error(t, infobip.Carries(chatprovider.ChannelWhatsApp, messaging.TypeSimpleText, messaging.ChatConfig{}))
	for _, tc := range goldenSends() {
		require.NoError(t, infobip.Carries(chatprovider.ChannelViber, tc.m.Type, tc.m.Config), tc.file)
	}
}

func TestCheckCredentials(t *testing.T) {
	cases := map[string]string{
		``:   "credentials",
		`[]`: "credentials",
		`{"apiKey":"k","callbackUsername":"u","callbackPassword":"p","x":1}`: "credentials",
		`{"callbackUsername":"u","callbackPassword":"p"}`:                    "credentials.apiKey",
		`{"apiKey":"k","callbackPassword":"p"}`:                              "credentials.callbackUsername",
		`{"apiKey":"k","callbackUsername":"u"}`:                              "credentials.callbackPassword",
		`{"apiKey":"k","callbackUsername":"a:b","callbackPassword":"p"}`:     "credentials.callbackUsername",
	}
	for in, field := range cases {
		err := infobip.CheckCredentials(chatprovider.ChannelViber, []byte(in))
		var me *messaging.Error
		require.ErrorAs(t, err, &me, in)
		require.Contains(t, me.Fields, field, in)
	}
	require.NoError(t, infobip.CheckCredentials(chatprovider.ChannelViber, testCreds()))
}

func TestAnswers(t *testing.T) {
	cases := []struct {
		name      string
		answer    func(w http.ResponseWriter)
		reason    delivery.ChatReason
		permanent bool
		retry     time.Duration
	}{
		{"rejected destination", answerWith(http.StatusOK, golden(t, "answer_rejected_destination.json")), delivery.ReasonInvalidNumber, true, 0},
		{"400", answerWith(http.StatusBadRequest, golden(t, "error_400.json")), delivery.ReasonRejected, true, 0},
		{"401", answerWith(http.StatusUnauthorized, golden(t, "error_401_legacy.json")), delivery.ReasonServiceRefused, true, 0},
		{"403", answerWith(http.StatusForbidden, nil), delivery.ReasonServiceRefused, true, 0},
		{"429", answerWith(http.StatusTooManyRequests, golden(t, "error_429.json"), "Retry-After", "7"), delivery.ReasonTransient, false, 7 * time.Second},
		{"500", answerWith(http.StatusInternalServerError, []byte(`{"errorCode":"E500","description":"Something went wrong."}`)), delivery.ReasonTransient, false, 0},
		{"503 without body", answerWith(http.StatusServiceUnavailable, nil), delivery.ReasonTransient, false, 0},
		{"unreadable 200", answerWith(http.StatusOK, []byte(`<html>`)), delivery.ReasonTransient, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, url := newProvider(t, tc.answer)
			a := newAdapter(t, url, newReporter())
			_, err := a.SendChat(context.Background(), goldenSends()[0].m)
			se := sendErr(t, err)
			require.Equal(t, tc.reason, se.Reason)
			require.Equal(t, tc.permanent, se.Permanent)
			require.Equal(t, tc.retry, se.RetryAfter)
			require.Equal(t, tc.name == "429", errors.Is(err, delivery.ErrRateLimited))
		})
	}
}

func TestDuplicateIsAlreadySent(t *testing.T) {
	_, url := newProvider(t, answerWith(http.StatusOK, golden(t, "answer_duplicate.json")))
	a := newAdapter(t, url, newReporter())
	acc, err := a.SendChat(context.Background(), goldenSends()[0].m)
	require.NoError(t, err)
	require.Equal(t, delivery.ChatAccepted{ProviderID: testID().String(), AlreadySent: true}, acc)
}

func TestTimeoutIsTransient(t *testing.T) {
	release := make(chan struct{})
	_, url := newProvider(t, func(w http.ResponseWriter) { <-release })
	defer close(release)
	a, err := infobip.New(context.Background(), chatprovider.Settings{
		ServiceID: 42, Sender: "HeraldShop", BaseURL: url, Credentials: testCreds(), Reporter: newReporter(),
		Client: &http.Client{Timeout: 100 * time.Millisecond},
	})
	require.NoError(t, err)
	defer a.Close()
	_, err = a.SendChat(context.Background(), goldenSends()[0].m)
	se := sendErr(t, err)
	require.Equal(t, delivery.ReasonTransient, se.Reason)
	require.False(t, se.Permanent)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = a.SendChat(ctx, goldenSends()[0].m)
	require.ErrorIs(t, err, context.Canceled)
}

func TestFailureReason(t *testing.T) {
	cases := []struct {
		s      infobip.Status
		e      *infobip.Error
		reason delivery.ChatReason
	}{
		{infobip.Status{GroupID: 2, ID: 9}, &infobip.Error{GroupID: 1, ID: 8, Name: "USER_BLOCKED"}, delivery.ReasonBlocked},
		{infobip.Status{GroupID: 2, ID: 9}, &infobip.Error{GroupID: 1, ID: 9, Name: "NOT_VIBER_USER"}, delivery.ReasonNotOnChannel},
		{infobip.Status{GroupID: 2, ID: 9}, &infobip.Error{GroupID: 1, ID: 10, Name: "no_suitable_device"}, delivery.ReasonNoSuitableDevice},
		{infobip.Status{GroupID: 2, ID: 4}, &infobip.Error{GroupID: 2, ID: 1, Name: "EC_UNKNOWN_SUBSCRIBER"}, delivery.ReasonNotOnChannel},
		{infobip.Status{GroupID: 2, ID: 9}, nil, delivery.ReasonNotOnChannel},
		{infobip.Status{GroupID: 2, ID: 4}, &infobip.Error{Name: "USER_BLOCKED"}, delivery.ReasonRejected}, // id 0: no error
		{infobip.Status{GroupID: 4, ID: 15}, nil, delivery.ReasonExpired},
		{infobip.Status{GroupName: "EXPIRED", ID: 99}, nil, delivery.ReasonExpired},
		{infobip.Status{GroupID: 5, ID: 12}, nil, delivery.ReasonServiceRefused},
		{infobip.Status{GroupID: 5, ID: 14}, nil, delivery.ReasonInvalidNumber},
		{infobip.Status{GroupID: 5, ID: 18}, nil, delivery.ReasonNotOnChannel},
		{infobip.Status{GroupID: 5, ID: 10}, nil, delivery.ReasonNotPermitted},
		{infobip.Status{GroupID: 5, ID: 21}, nil, delivery.ReasonTransient},
		{infobip.Status{GroupID: 5, ID: 77}, nil, delivery.ReasonRejected},
	}
	for _, tc := range cases {
		require.Equal(t, tc.reason, infobip.FailureReason(tc.s, tc.e), "%+v %+v", tc.s, tc.e)
	}
	// Every reason of the tables is one Herald knows.
	for _, c := range infobip.StatusCodes() {
		_, ok := delivery.ChatCodes()[c.Reason]
		require.True(t, ok, c.Name)
	}
	for _, w := range infobip.ErrorWords() {
		_, ok := delivery.ChatCodes()[w.Reason]
		require.True(t, ok, w.Word)
	}
}

func TestNewRefusesBadSettings(t *testing.T) {
	good := chatprovider.Settings{ServiceID: 42, Channel: chatprovider.ChannelViber, Sender: "HeraldShop",
		Credentials: testCreds(), Reporter: newReporter()}
	cases := map[string]func(s *chatprovider.Settings){
		"whatsapp":       func(s *chatprovider.Settings) { s.Channel = chatprovider.ChannelWhatsApp },
		"no credentials": func(s *chatprovider.Settings) { s.Credentials = nil },
		"no reporter":    func(s *chatprovider.Settings) { s.Reporter = nil },
		"no sender":      func(s *chatprovider.Settings) { s.Sender = " " },
	}
	for name, change := range cases {
		s := good
		change(&s)
		a, err := infobip.Provider().New(context.Background(), s)
		require.Error(t, err, name)
		require.True(t, a == nil, "%s: a nil Adapter, not a nil pointer in an interface", name)
	}
	a, err := infobip.Provider().New(context.Background(), good)
	require.NoError(t, err)
	require.NoError(t, a.Close())
}
