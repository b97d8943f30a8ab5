package infobipsim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/transport/infobip/infobipsim"
)

type apiError struct {
	ErrorCode  string `json:"errorCode"`
	Violations []struct {
		Property string `json:"property"`
	} `json:"violations"`
}

func start(t *testing.T, rate int) *infobipsim.Server {
	t.Helper()
	s, err := infobipsim.Start(context.Background(), "127.0.0.1:0", infobipsim.Config{
		Credentials: infobipsim.DemoCredentials(), Channel: "viber", RatePerSecond: rate,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func send(t *testing.T, s *infobipsim.Server, auth, body string) (int, http.Header, apiError) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/viber/2/messages", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var e apiError
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, resp.Header, e
}

const demoAuth = "App demo-infobip-api-key"

func msg(content string) string {
	return `{"messages":[{"sender":"HeraldShop","destinations":[{"to":"385981234567"}],"content":` + content + `}]}`
}

func TestAuthentication(t *testing.T) {
	s := start(t, 0)
	body := msg(`{"type":"TEXT","text":"hi"}`)
	for _, auth := range []string{"", "App wrong", "Basic aGVyYWxkOng=", "demo-infobip-api-key"} {
		code, _, e := send(t, s, auth, body)
		require.Equal(t, http.StatusUnauthorized, code, auth)
		require.Equal(t, "E401", e.ErrorCode)
	}
	code, _, _ := send(t, s, demoAuth, body)
	require.Equal(t, http.StatusOK, code)
}

func TestValidation(t *testing.T) {
	s := start(t, 1000)
	cases := map[string]string{
		`{"messages":[]}`: "messages",
		`{"messages":[{"sender":"","destinations":[{"to":"385981234567"}],"content":{"type":"TEXT","text":"hi"}}]}`: "messages[0].sender",
		`{"messages":[{"sender":"S","destinations":[{"to":"+38598"}],"content":{"type":"TEXT","text":"hi"}}]}`:      "messages[0].destinations[0].to",
		msg(`{"type":"TEXT"}`): "messages[0].content.text",
		msg(`{"type":"TEXT","text":"hi","mediaUrl":"https://x.example/a.png"}`):                                                    "messages[0].content.mediaUrl",
		msg(`{"type":"TEXT","text":"hi","button":{"title":"Go"}}`):                                                                 "messages[0].content.button.action",
		msg(`{"type":"IMAGE","mediaUrl":"https://x.example/a.gif"}`):                                                               "messages[0].content.mediaUrl",
		msg(`{"type":"VIDEO","mediaUrl":"https://x.example/v.mp4","mediaDuration":"95","thumbnailUrl":"https://x.example/t.jpg"}`): "messages[0].content.mediaDuration",
		msg(`{"type":"VIDEO","mediaUrl":"https://x.example/v.mp4","mediaDuration":"PT95S"}`):                                       "messages[0].content.thumbnailUrl",
		msg(`{"type":"FILE","fileName":"a.zip","mediaUrl":"https://x.example/a.zip"}`):                                             "messages[0].content.fileName",
		msg(`{"type":"LIST","text":"Q?","options":["only"]}`):                                                                      "messages[0].content.options",
		msg(`{"type":"CAROUSEL","text":"T","cards":[{"text":"a","mediaUrl":"https://x.example/a.jpg","buttons":[{"title":"Much too long","action":"https://x.example"}]},{"text":"b","mediaUrl":"https://x.example/b.jpg"}]}`): "messages[0].content.cards[0].buttons[0].title",
		msg(`{"type":"OTP_TEMPLATE"}`):                 "messages[0].content.type",
		msg(`{"type":"TEXT","text":"hi","unknown":1}`): "body",
		`{"messages":[{"sender":"S","destinations":[{"to":"385981234567"}],"content":{"type":"TEXT","text":"hi"},"options":{"validityPeriod":{"amount":0}}}]}`: "messages[0].options.validityPeriod.amount",
	}
	for body, prop := range cases {
		code, _, e := send(t, s, demoAuth, body)
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Equal(t, "E400", e.ErrorCode, body)
		var props []string
		for _, v := range e.Violations {
			props = append(props, v.Property)
		}
		require.Contains(t, props, prop, body)
	}
}

func TestRateLimit(t *testing.T) {
	s := start(t, 3)
	limited := false
	for i := 0; i < 20 && !limited; i++ {
		code, h, e := send(t, s, demoAuth, msg(`{"type":"TEXT","text":"hi"}`))
		if code == http.StatusTooManyRequests {
			limited = true
			require.Equal(t, "1", h.Get("Retry-After"))
			require.Equal(t, "E429", e.ErrorCode)
		} else {
			require.Equal(t, http.StatusOK, code)
		}
	}
	require.True(t, limited)
}

func TestStartRefusesBadConfig(t *testing.T) {
	_, err := infobipsim.Start(context.Background(), "127.0.0.1:0", infobipsim.Config{Credentials: []byte(`{"apiKey":"k"}`)})
	require.Error(t, err)
	_, err = infobipsim.Start(context.Background(), "127.0.0.1:0", infobipsim.Config{
		Credentials: infobipsim.DemoCredentials(), Channel: "whatsapp"})
	require.Error(t, err)
}
