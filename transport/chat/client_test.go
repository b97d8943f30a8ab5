package chat_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatsim"
	"github.com/stretchr/testify/require"
)

func TestSendChatBodies(t *testing.T) {
	sim, url := startSim(t, chatsim.Config{Record: true})
	c := newClient(t, url, nil)
	id := messaging.MustParseID("0192f3a1-7b2c-7def-8123-456789abcdef")
	items := []messaging.CarouselItem{
		{Title: "Shoes", ImageURL: "https://cdn.example/shoes.jpg", ButtonText: "Buy", ButtonURL: "https://shop.example/shoes"},
		{Title: "Hats", ImageURL: "https://cdn.example/hats.jpg", ButtonText: "Buy", ButtonURL: "https://shop.example/hats",
			SecondaryButtonText: "Details", SecondaryButtonURL: "https://shop.example/hats/info"},
	}
	tests := []struct {
		name string
		typ  messaging.MessageType
		text string
		cfg  messaging.ChatConfig
		to   string
		want string // the body after the common fields
	}{
		{"simple text", messaging.TypeSimpleText, "Hello Ann", messaging.ChatConfig{ImageURL: "https://ignored.example/x.png"}, "998901234561",
			`"message":{"text":"Hello Ann"}`},
		{"escaped text", messaging.TypeSimpleText, "quote \" slash \\ tab\t nl\n bell\a sep\u2028 emoji 😀 bad\xff end", messaging.ChatConfig{}, "998901234562",
			`"message":{"text":"quote \" slash \\ tab\t nl\n bell\u0007 sep\u2028 emoji 😀 bad\ufffd end"}`},
		{"image only", messaging.TypeImageOnly, "", messaging.ChatConfig{ImageURL: "https://cdn.example/a.png"}, "998901234563",
			`"message":{"image":"https://cdn.example/a.png"}`},
		{"image only with text", messaging.TypeImageOnly, "Look", messaging.ChatConfig{ImageURL: "https://cdn.example/a.png"}, "998901234564",
			`"message":{"text":"Look","image":"https://cdn.example/a.png"}`},
		{"button plus text", messaging.TypeButtonPlusText, "Your order", messaging.ChatConfig{ButtonText: "Open", ButtonURL: "https://shop.example/o/1"}, "998901234565",
			`"message":{"text":"Your order","button":{"caption":"Open","action":"https://shop.example/o/1"}}`},
		{"image plus text", messaging.TypeImagePlusText, "Sale", messaging.ChatConfig{ImageURL: "https://cdn.example/s.jpg", ButtonText: "Shop", ButtonURL: "https://shop.example"}, "998901234566",
			`"message":{"text":"Sale","image":"https://cdn.example/s.jpg","button":{"caption":"Shop","action":"https://shop.example"}}`},
		{"carousel", messaging.TypeCarousel, "New in", messaging.ChatConfig{Items: items}, "998901234567",
			`"message":{"text":"New in"},"carousel":{"items":[
				{"title":"Shoes","image_url":"https://cdn.example/shoes.jpg","primary_button":{"label":"Buy","action_url":"https://shop.example/shoes"}},
				{"title":"Hats","image_url":"https://cdn.example/hats.jpg","primary_button":{"label":"Buy","action_url":"https://shop.example/hats"},
				 "secondary_button":{"label":"Details","action_url":"https://shop.example/hats/info"}}]}`},
		{"survey", messaging.TypeSurvey, "Happy?", messaging.ChatConfig{Options: []messaging.SurveyOption{{OptionText: "Yes", OptionValue: "yes"}, {OptionText: "No", OptionValue: "no"}}}, "998901234568",
			`"message":{"text":"Happy?"},"survey":{"options":[{"text":"Yes","value":"yes"},{"text":"No","value":"no"}]}`},
		{"video", messaging.TypeVideo, "Watch", messaging.ChatConfig{VideoURL: "https://cdn.example/v.mp4", ThumbnailURL: "https://cdn.example/v.jpg", FileSize: 1048576, Duration: 30}, "998901234569",
			`"message":{"text":"Watch"},"video":{"url":"https://cdn.example/v.mp4","thumbnail_url":"https://cdn.example/v.jpg","file_size":1048576,"duration":30}`},
		{"video with button, no thumbnail", messaging.TypeVideo, "", messaging.ChatConfig{VideoURL: "https://cdn.example/v.mp4", ButtonText: "More", ButtonURL: "https://x.example", FileSize: 5, Duration: 2}, "998901234570",
			`"message":{"button":{"caption":"More","action":"https://x.example"}},"video":{"url":"https://cdn.example/v.mp4","file_size":5,"duration":2}`},
		{"file", messaging.TypeFile, "Your invoice", messaging.ChatConfig{FileURL: "https://cdn.example/i.pdf", FileName: "invoice.pdf", FileType: "PDF"}, "998901234571",
			`"message":{"text":"Your invoice"},"file":{"url":"https://cdn.example/i.pdf","file_name":"invoice.pdf","file_type":"pdf"}`},
		{"file type from name", messaging.TypeFile, "", messaging.ChatConfig{FileURL: "https://cdn.example/r.xlsx", FileName: "Report.XLSX"}, "998901234572",
			`"message":{},"file":{"url":"https://cdn.example/r.xlsx","file_name":"Report.XLSX","file_type":"xlsx"}`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := int64(1731234567890100 + i)
			res, err := c.SendChat(context.Background(), delivery.ChatSend{
				MessageID: id, Sender: "acme-brand", To: tt.to, Ref: seq, TTL: 2 * time.Hour,
				Type: tt.typ, Text: tt.text, Config: tt.cfg,
			})
			require.NoError(t, err)
			require.NotEmpty(t, res.ProviderID)
			require.False(t, res.AlreadySent)

			got := sim.Received(tt.to)
			require.Len(t, got, 1)
			require.Equal(t, chatsim.StatusSuccess, got[0].Status)
			want := fmt.Sprintf(`{"service_id":"acme-brand","dest":%q,"seq":%d,"ttl":7200,"type":%d,"tracking_data":%q,%s}`,
				tt.to, seq, int(tt.typ), id.String(), tt.want)
			require.JSONEq(t, want, string(got[0].Raw))
		})
	}
}

func TestSendChatTTL(t *testing.T) {
	sim, url := startSim(t, chatsim.Config{Record: true})
	c := newClient(t, url, nil)
	tests := []struct {
		ttl  time.Duration
		want int64
	}{
		{0, 86400},
		{-time.Minute, 86400},
		{500 * time.Millisecond, 30},
		{10 * time.Second, 30},
		{30 * time.Second, 30},
		{90*time.Second + 900*time.Millisecond, 90},
		{time.Hour, 3600},
		{14 * 24 * time.Hour, 1209600},
		{30 * 24 * time.Hour, 1209600},
	}
	for i, tt := range tests {
		t.Run(tt.ttl.String(), func(t *testing.T) {
			m := textTo(fmt.Sprintf("9989010%02d123", i))
			m.TTL = tt.ttl
			_, err := c.SendChat(context.Background(), m)
			require.NoError(t, err)
			got := sim.Received(m.To)
			require.Len(t, got, 1)
			require.NotNil(t, got[0].TTL)
			require.Equal(t, tt.want, *got[0].TTL)
		})
	}
}

func TestSendChatStatusMapping(t *testing.T) {
	statusFor := map[string]int{}
	tests := []struct {
		to        string
		status    int // forced with Faults.StatusFor; -1: outcome by number
		alreadyOK bool
		permanent bool
		code      string
		details   string
	}{
		{"998902000001", 0, false, false, "", ""},
		{"998902000002", 12, true, false, "", ""},
		{"998902000008", -1, false, true, "8", "USER_BLOCKED"},
		{"998902000009", -1, false, true, "9", "NOT_VIBER_USER"},
		{"998902000010", -1, false, true, "10", "NO_SUITABLE_DEVICE"},
		{"998902000102", 2, false, true, "2", "BAD_SERVICE_ID"},
		{"998902000103", 3, false, true, "3", "BAD_DATA"},
		{"998902000105", 5, false, true, "5", "BAD_MESSAGE_TYPE"},
		{"998902000106", 6, false, true, "3", "BAD_DATA"},
		{"998902000113", 13, false, true, "13", "NOT_PERMITTED"},
		{"998902000120", 20, false, true, "3", "BAD_DATA"},
		{"998902000127", 27, false, true, "27", "INVALID_PHONE_NUMBER"},
		{"998902000142", 42, false, true, "3", "BAD_DATA"},
		{"998902000101", 1, false, false, "1", "INTERNAL_FAILURE"},
		{"998902000107", 7, false, false, "1", "INTERNAL_FAILURE"},
	}
	for _, tt := range tests {
		if tt.status >= 0 {
			statusFor[tt.to] = tt.status
		}
	}
	sim, url := startSim(t, chatsim.Config{Faults: chatsim.Faults{StatusFor: statusFor}, Record: true})
	c := newClient(t, url, func(cfg *chat.Config) { cfg.Retries = 2 })
	for _, tt := range tests {
		t.Run(tt.to, func(t *testing.T) {
			res, err := c.SendChat(context.Background(), textTo(tt.to))
			attempts := len(sim.Received(tt.to))
			if tt.code == "" {
				require.NoError(t, err)
				require.Equal(t, tt.alreadyOK, res.AlreadySent)
				if !tt.alreadyOK {
					require.NotEmpty(t, res.ProviderID)
				}
				require.Equal(t, 1, attempts)
				return
			}
			se := sendErr(t, err)
			require.Equal(t, tt.permanent, se.Permanent)
			require.Equal(t, tt.permanent, delivery.IsPermanent(err))
			require.Equal(t, tt.code, se.Code)
			require.Equal(t, tt.details, se.Details)
			if tt.permanent {
				require.Equal(t, 1, attempts, "a permanent failure is not retried")
			} else {
				require.Equal(t, 3, attempts, "a transient status is retried Retries times")
			}
		})
	}
}

func TestLookupStatus(t *testing.T) {
	tests := []struct {
		code  int
		name  string
		class chat.Class
	}{
		{0, "SUCCESS", chat.ClassAccepted},
		{1, "INTERNAL_FAILURE", chat.ClassTransient},
		{2, "BAD_SERVICE_ID", chat.ClassPermanent},
		{3, "BAD_DATA", chat.ClassPermanent},
		{4, "4", chat.ClassPermanent},
		{5, "BAD_MESSAGE_TYPE", chat.ClassPermanent},
		{6, "BAD_PARAMETERS", chat.ClassPermanent},
		{7, "TIMEOUT", chat.ClassTransient},
		{8, "USER_BLOCKED", chat.ClassFallback},
		{9, "NOT_VIBER_USER", chat.ClassFallback},
		{10, "NO_SUITABLE_DEVICE", chat.ClassFallback},
		{11, "11", chat.ClassPermanent},
		{12, "ALREADY_SENT", chat.ClassAlreadySent},
		{13, "NOT_PERMITTED", chat.ClassPermanent},
		{20, "INVALID_TTL", chat.ClassPermanent},
		{27, "INVALID_PHONE_NUMBER", chat.ClassPermanent},
		{-1, "-1", chat.ClassPermanent},
	}
	for _, tt := range tests {
		name, class := chat.LookupStatus(tt.code)
		require.Equal(t, tt.name, name, "code %d", tt.code)
		require.Equal(t, tt.class, class, "code %d", tt.code)
		require.Equal(t, tt.class == chat.ClassFallback, chat.IsFallbackCode(tt.code), "code %d", tt.code)
		se := chat.StatusError(tt.code)
		if class.Success() {
			require.Nil(t, se, "code %d", tt.code)
			continue
		}
		require.NotNil(t, se)
		want := delivery.ChatCodes()[chat.ReasonOf(tt.code)]
		require.Equal(t, fmt.Sprint(want.Code), se.Code, "code %d: the code of its reason", tt.code)
		require.Equal(t, want.Name, se.Details, "code %d: the name of its reason", tt.code)
		require.Equal(t, fmt.Sprintf("%s (%d)", tt.name, tt.code), se.Provider, "code %d: the protocol's own words", tt.code)
		require.Equal(t, class != chat.ClassTransient, se.Permanent)
	}
}

func TestSendChatRetriesReuseSeq(t *testing.T) {
	tests := []struct {
		name     string
		faults   chatsim.Faults
		retries  int
		wantOK   bool
		already  bool
		attempts int
		details  string
	}{
		{"500 then success", chatsim.Faults{FailFirst: 2}, 3, true, false, 3, ""},
		{"429 then success", chatsim.Faults{ThrottleFirst: 3}, 3, true, false, 4, ""},
		{"429 with Retry-After capped by the backoff", chatsim.Faults{ThrottleFirst: 1, RetryAfter: 30}, 3, true, false, 2, ""},
		{"500 past the retries", chatsim.Faults{FailFirst: 10}, 3, false, false, 4, "HTTP 500"},
		{"429 without retries", chatsim.Faults{ThrottleFirst: 1}, -1, false, false, 1, "HTTP 429"},
		{"lost response answered 12", chatsim.Faults{DropFirst: 1}, 3, true, true, 2, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, url := startSim(t, chatsim.Config{Faults: tt.faults, Record: true})
			c := newClient(t, url, func(cfg *chat.Config) { cfg.Retries = tt.retries })
			m := textTo(fmt.Sprintf("99890300%04d", i))
			start := time.Now()
			res, err := c.SendChat(context.Background(), m)
			require.Less(t, time.Since(start), 2*time.Second)
			st := sim.Stats()
			require.EqualValues(t, tt.attempts, st.Requests)
			if !tt.wantOK {
				se := sendErr(t, err)
				require.False(t, se.Permanent)
				require.Equal(t, tt.details, se.Details)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.already, res.AlreadySent)
			require.NotEmpty(t, res.ProviderID)
			require.EqualValues(t, 1, st.Accepted, "the message is accepted once")
			got := sim.Received(m.To)
			require.NotEmpty(t, got)
			for _, r := range got {
				require.Equal(t, m.Ref, r.Seq, "every attempt carries the same seq")
				require.JSONEq(t, string(got[0].Raw), string(r.Raw))
			}
			if tt.already {
				require.Equal(t, []int{0, 12}, []int{got[0].Status, got[1].Status})
			}
		})
	}
}

func TestSendChatTimeouts(t *testing.T) {
	sim, url := startSim(t, chatsim.Config{Faults: chatsim.Faults{RespDelay: 300 * time.Millisecond}, Record: true})
	c := newClient(t, url, func(cfg *chat.Config) {
		cfg.Timeout = 40 * time.Millisecond
		cfg.Retries = 1
	})
	m := textTo("998904000001")
	_, err := c.SendChat(context.Background(), m)
	se := sendErr(t, err)
	require.False(t, se.Permanent)
	require.Equal(t, "timeout", se.Details)

	got := sim.Received(m.To)
	require.Len(t, got, 2)
	require.Equal(t, []int{0, 12}, []int{got[0].Status, got[1].Status}, "the retry after a timeout is idempotent")

	// A later send of the same message, once the provider answers in
	// time, is a success that reports the earlier acceptance.
	sim.SetFaults(chatsim.Faults{})
	res, err := c.SendChat(context.Background(), m)
	require.NoError(t, err)
	require.True(t, res.AlreadySent)
	require.NotEmpty(t, res.ProviderID)
	require.EqualValues(t, 1, sim.Stats().Accepted)

	// The caller's deadline ends the send with a context error.
	sim.SetFaults(chatsim.Faults{RespDelay: 300 * time.Millisecond})
	c2 := newClient(t, url, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = c2.SendChat(ctx, textTo("998904000002"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.False(t, delivery.IsPermanent(err))
}

func TestSendChatBadToken(t *testing.T) {
	sim, url := startSim(t, chatsim.Config{Token: "the-right-one"})
	c := newClient(t, url, func(cfg *chat.Config) { cfg.Token = "a-wrong-one" })
	_, err := c.SendChat(context.Background(), textTo("998905000001"))
	se := sendErr(t, err)
	require.True(t, se.Permanent)
	require.Equal(t, "BAD_TOKEN", se.Details)
	require.EqualValues(t, 1, sim.Stats().Requests, "a bad token is not retried")
}

func TestSendChatHTTPAnswers(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		wantToken string
		permanent bool
		details   string
		attempts  int
	}{
		{"numeric token", 200, `{"status":0,"seq":SEQ,"message_token":5379697806260881548}`, "5379697806260881548", false, "", 1},
		{"string token, no seq", 200, `{"status":0,"message_token":"abc"}`, "abc", false, "", 1},
		{"escaped string token", 200, `{"status":0,"message_token":"a\u0062c\"\u00e9"}`, "abc\"\u00e9", false, "", 1},
		{"negative numeric token", 200, `{"status":0,"message_token":-12.5e3}`, "-12.5e3", false, "", 1},
		{"null token", 200, `{"status":0,"message_token":null}`, "", false, "", 1},
		{"object token", 200, `{"status":0,"message_token":{}}`, "", false, "malformed response", 2},
		{"not found", 404, `nope`, "", true, "HTTP 404", 1},
		{"bad request", 400, `{}`, "", true, "HTTP 400", 1},
		{"service unavailable", 503, ``, "", false, "HTTP 503", 2},
		{"request timeout", 408, ``, "", false, "HTTP 408", 2},
		{"garbage", 200, `<html>`, "", false, "malformed response", 2},
		{"no status", 200, `{"seq":SEQ}`, "", false, "malformed response", 2},
		{"another seq", 200, `{"status":0,"seq":1,"message_token":"x"}`, "", false, "malformed response", 2},
		{"status message kept", 200, `{"status":6,"status_message":"button missing","seq":SEQ}`, "", true, "BAD_DATA", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := textTo("998906000001")
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				require.Equal(t, "/api/send_message", r.URL.Path)
				require.Equal(t, http.MethodPost, r.Method)
				require.Equal(t, token, r.Header.Get("X-Auth-Token"))
				require.Equal(t, "application/json", r.Header.Get("Content-Type"))
				w.WriteHeader(tt.status)
				_, _ = fmt.Fprint(w, strings.ReplaceAll(tt.body, "SEQ", fmt.Sprint(m.Ref)))
			}))
			defer srv.Close()
			c := newClient(t, srv.URL+"/api/", func(cfg *chat.Config) { cfg.Retries = 1 })
			res, err := c.SendChat(context.Background(), m)
			require.EqualValues(t, tt.attempts, calls.Load())
			if tt.details == "" {
				require.NoError(t, err)
				require.Equal(t, tt.wantToken, res.ProviderID)
				return
			}
			se := sendErr(t, err)
			require.Equal(t, tt.permanent, se.Permanent)
			require.Equal(t, tt.details, se.Details)
			if tt.name == "status message kept" {
				require.ErrorContains(t, err, "button missing")
			}
		})
	}
}

func TestSendChatRefusesUnsendable(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	c := newClient(t, srv.URL, nil)
	tests := []struct {
		name string
		mod  func(*delivery.ChatSend)
	}{
		{"type 0", func(m *delivery.ChatSend) { m.Type = 0 }},
		{"type 9", func(m *delivery.ChatSend) { m.Type = 9 }},
		{"no number", func(m *delivery.ChatSend) { m.To = "" }},
		{"no service", func(m *delivery.ChatSend) { m.Sender = "" }},
		{"no seq", func(m *delivery.ChatSend) { m.Ref = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := textTo("998907000001")
			tt.mod(&m)
			_, err := c.SendChat(context.Background(), m)
			require.True(t, sendErr(t, err).Permanent)
		})
	}
	require.Zero(t, calls.Load())
}

func TestNewChecksBaseURL(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://"} {
		_, err := chat.New(chat.Config{BaseURL: u})
		require.Error(t, err, u)
	}
	_, err := chat.New(chat.Config{BaseURL: "https://provider.example/v1"})
	require.NoError(t, err)
}

// countingTransport counts the requests of a caller's http.Client.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestSendChatUsesTheGivenHTTPClient(t *testing.T) {
	_, url := startSim(t, chatsim.Config{Faults: chatsim.Faults{FailFirst: 1}})
	rt := &countingTransport{}
	c := newClient(t, url, func(cfg *chat.Config) { cfg.HTTP = &http.Client{Transport: rt} })
	res, err := c.SendChat(context.Background(), textTo("998908000001"))
	require.NoError(t, err)
	require.NotEmpty(t, res.ProviderID)
	require.EqualValues(t, 2, rt.n.Load(), "the failed attempt and its retry")
}

// TestReachable: the provider is reachable until a request gets no answer
// (HTTP 5xx, a refused connection), and again once one is answered, even
// with a refusal of the message itself.
func TestReachable(t *testing.T) {
	var mode atomic.Value
	mode.Store("ok")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case "5xx":
			w.WriteHeader(http.StatusBadGateway)
		case "refuse":
			_, _ = fmt.Fprint(w, `{"status":6,"status_message":"bad"}`)
		default:
			_, _ = fmt.Fprint(w, `{"status":0,"message_token":"t"}`)
		}
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL+"/api", func(cfg *chat.Config) { cfg.Retries = -1 })
	require.NoError(t, c.Reachable(t.Context()), "nothing sent yet")
	_, err := c.SendChat(t.Context(), textTo("998906100001"))
	require.NoError(t, err)
	require.NoError(t, c.Reachable(t.Context()))

	mode.Store("5xx")
	_, err = c.SendChat(t.Context(), textTo("998906100002"))
	require.Error(t, err)
	err = c.Reachable(t.Context())
	require.True(t, messaging.IsCode(err, messaging.Unavailable), "%v", err)
	require.ErrorContains(t, err, "HTTP 502")

	mode.Store("refuse")
	_, err = c.SendChat(t.Context(), textTo("998906100003"))
	require.Error(t, err)
	require.NoError(t, c.Reachable(t.Context()), "a refusal is an answer")

	srv.Close()
	_, err = c.SendChat(t.Context(), textTo("998906100004"))
	require.Error(t, err)
	require.ErrorContains(t, c.Reachable(t.Context()), "connection error")
}

// TestProbing: while the provider does not answer, the client lets one
// send through at a time (SendLimit 1) and WaitReady holds the next claim
// until ProbeInterval after the last failure; once it answers, neither
// holds anything back.
func TestProbing(t *testing.T) {
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprint(w, `{"status":0,"message_token":"t"}`)
	}))
	t.Cleanup(srv.Close)
	var _ delivery.ReadyWaiter = (*chat.Client)(nil)
	var _ delivery.SendLimiter = (*chat.Client)(nil)

	slow := newClient(t, srv.URL, func(cfg *chat.Config) { cfg.Retries = -1; cfg.ProbeInterval = time.Hour })
	fast := newClient(t, srv.URL, func(cfg *chat.Config) { cfg.Retries = -1; cfg.ProbeInterval = time.Millisecond })
	for _, c := range []*chat.Client{slow, fast} {
		require.Zero(t, c.SendLimit())
		require.NoError(t, c.WaitReady(t.Context()))
	}

	failing.Store(true)
	for _, c := range []*chat.Client{slow, fast} {
		_, err := c.SendChat(t.Context(), textTo("998906200001"))
		require.Error(t, err)
		require.Equal(t, 1, c.SendLimit(), "one probe at a time while the provider does not answer")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, slow.WaitReady(ctx), context.DeadlineExceeded, "the next probe waits for the interval")
	require.NoError(t, fast.WaitReady(t.Context()), "the next probe goes once the interval passed")

	failing.Store(false)
	_, err := slow.SendChat(t.Context(), textTo("998906200002"))
	require.NoError(t, err)
	require.Zero(t, slow.SendLimit())
	require.NoError(t, slow.WaitReady(t.Context()))
}
