package chat_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/stretchr/testify/require"
)

const msgID = "0192f3a1-7b2c-7def-8123-456789abcdef"

// callbackServer serves CallbackHandler over HTTP and collects events.
func callbackServer(t *testing.T, mod func(*chat.CallbackConfig)) (*events, string) {
	t.Helper()
	ev := &events{}
	cfg := chat.CallbackConfig{
		Secret:   secret,
		Reporter: reporterFunc(ev.handle),
		Now:      func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600)) },
	}
	if mod != nil {
		mod(&cfg)
	}
	srv := httptest.NewServer(chat.CallbackHandler(cfg))
	t.Cleanup(srv.Close)
	return ev, srv.URL + "/callbacks/chat"
}

// post sends body with the given signature (none when sig is "-").
func post(t *testing.T, url, body, sig string) (int, map[string]string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if sig != "-" {
		req.Header.Set("X-Content-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]string
	if resp.StatusCode != http.StatusOK {
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	}
	return resp.StatusCode, out
}

// hmacHex signs independently of chat.Sign.
func hmacHex(key, body string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func TestSign(t *testing.T) {
	body := []byte(`{"event":"status"}`)
	require.Equal(t, hmacHex(secret, string(body)), chat.Sign(secret, body))
	require.NotEqual(t, chat.Sign(secret, body), chat.Sign("other", body))
	require.Len(t, chat.Sign(secret, nil), 64)
}

func TestCallbackHandlerEvents(t *testing.T) {
	id := messaging.MustParseID(msgID)
	at := time.Date(2024, 11, 10, 10, 29, 27, 890_000_000, time.UTC)
	now := time.Date(2025, 1, 2, 2, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		body string
		want event
	}{
		{"delivered", `{"event":"status","message_token":"5379697806260881548","tracking_data":"` + msgID + `","status":"delivered","error_code":0,"timestamp":1731234567890,"phone_number":"998901234567"}`,
			event{Kind: "status", MessageID: id, Token: "5379697806260881548", Status: "delivered", At: at, OptionIndex: -1}},
		{"seen, numeric token, extra field", `{"event":"status","message_token":5379697806260881548,"tracking_data":"` + strings.ToUpper(msgID) + `","status":"seen","timestamp":1731234567890,"phone_number":"998901234567","extra":true}`,
			event{Kind: "status", MessageID: id, Token: "5379697806260881548", Status: "seen", At: at, OptionIndex: -1}},
		{"failed with a fallback code", `{"event":"status","message_token":"t","tracking_data":"` + msgID + `","status":"failed","error_code":9,"timestamp":1731234567890,"phone_number":"998901230011"}`,
			event{Kind: "status", MessageID: id, Token: "t", Status: "failed", Reason: delivery.ReasonNotOnChannel, Detail: "9", At: at, OptionIndex: -1}},
		{"expired without timestamp", `{"event":"status","message_token":"t","tracking_data":"` + msgID + `","status":"expired"}`,
			event{Kind: "status", MessageID: id, Token: "t", Status: "expired", Reason: delivery.ReasonExpired, Detail: "expired", At: now, OptionIndex: -1}},
		{"survey reply", `{"event":"reply","message_token":"t","tracking_data":"` + msgID + `","timestamp":1731234567890,"phone_number":"998901234567","text":"Yes","survey":{"option_index":0,"option_value":"yes"}}`,
			event{Kind: "reply", MessageID: id, At: at, Phone: "998901234567", Text: "Yes", OptionIndex: 0}},
		{"survey reply, later option", `{"event":"reply","message_token":"t","tracking_data":"` + msgID + `","timestamp":1731234567890,"text":"No","survey":{"option_index":3,"option_value":"no"}}`,
			event{Kind: "reply", MessageID: id, At: at, Text: "No", OptionIndex: 3}},
		{"free reply", `{"event":"reply","message_token":"t","tracking_data":"` + msgID + `","timestamp":1731234567890,"text":"thanks"}`,
			event{Kind: "text", MessageID: id, At: at, Text: "thanks", OptionIndex: -1}},
		{"unsubscribed", `{"event":"unsubscribed","service_id":"acme-1","phone_number":"998901234567","timestamp":1731234567890}`,
			event{Kind: "unsubscribed", Sender: "acme-1", At: at, Phone: "998901234567", OptionIndex: -1}},
		{"subscribed", `{"event":"subscribed","service_id":"acme-1","phone_number":"998901234567","timestamp":1731234567890}`,
			event{Kind: "subscribed", Sender: "acme-1", At: at, Phone: "998901234567", OptionIndex: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, url := callbackServer(t, nil)
			code, _ := post(t, url, tt.body, hmacHex(secret, tt.body))
			require.Equal(t, http.StatusOK, code)
			got := ev.of(tt.want.MessageID)
			require.Len(t, got, 1)
			require.Equal(t, time.UTC, got[0].At.Location())
			require.True(t, tt.want.At.Equal(got[0].At), "at %v, want %v", got[0].At, tt.want.At)
			got[0].At = tt.want.At
			require.Equal(t, tt.want, got[0])
		})
	}
}

func TestCallbackHandlerRefusals(t *testing.T) {
	good := `{"event":"status","message_token":"t","tracking_data":"` + msgID + `","status":"delivered","timestamp":1731234567890}`
	tests := []struct {
		name   string
		method string
		body   string
		sig    string // "-": no header; "": the right one
		fail   int32  // handler failures
		want   int
		stored bool
	}{
		{"good", http.MethodPost, good, "", 0, http.StatusOK, true},
		{"upper-case hex signature", http.MethodPost, good, strings.ToUpper(hmacHex(secret, good)), 0, http.StatusOK, true},
		{"missing signature", http.MethodPost, good, "-", 0, http.StatusUnauthorized, false},
		{"empty signature", http.MethodPost, good, " ", 0, http.StatusUnauthorized, false},
		{"wrong key", http.MethodPost, good, hmacHex("not-the-secret", good), 0, http.StatusUnauthorized, false},
		{"signature of another body", http.MethodPost, good, hmacHex(secret, good+" "), 0, http.StatusUnauthorized, false},
		{"truncated signature", http.MethodPost, good, hmacHex(secret, good)[:62], 0, http.StatusUnauthorized, false},
		{"not hex", http.MethodPost, good, strings.Repeat("zz", 32), 0, http.StatusUnauthorized, false},
		{"malformed JSON", http.MethodPost, `{"event":`, "", 0, http.StatusBadRequest, false},
		{"unknown event", http.MethodPost, strings.Replace(good, `"status","message_token"`, `"typing","message_token"`, 1), "", 0, http.StatusBadRequest, false},
		{"unknown status", http.MethodPost, strings.Replace(good, `"delivered"`, `"read"`, 1), "", 0, http.StatusBadRequest, false},
		{"bad tracking_data", http.MethodPost, strings.Replace(good, msgID, "message-1", 1), "", 0, http.StatusBadRequest, false},
		{"timestamp past 9999", http.MethodPost, strings.Replace(good, "1731234567890", "253402300800000", 1), "", 0, http.StatusBadRequest, false},
		{"last timestamp of 9999", http.MethodPost, strings.Replace(good, "1731234567890", "253402300799999", 1), "", 0, http.StatusOK, true},
		{"no tracking_data", http.MethodPost, `{"event":"status","status":"seen"}`, "", 0, http.StatusBadRequest, false},
		{"unsubscribed without service_id", http.MethodPost, `{"event":"unsubscribed","phone_number":"998901234567"}`, "", 0, http.StatusBadRequest, false},
		{"negative option", http.MethodPost, `{"event":"reply","tracking_data":"` + msgID + `","survey":{"option_index":-1}}`, "", 0, http.StatusBadRequest, false},
		{"survey without option", http.MethodPost, `{"event":"reply","tracking_data":"` + msgID + `","survey":{}}`, "", 0, http.StatusBadRequest, false},
		{"handler error", http.MethodPost, good, "", 1, http.StatusInternalServerError, false},
		{"GET", http.MethodGet, "", "", 0, http.StatusMethodNotAllowed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, url := callbackServer(t, nil)
			ev.fail.Store(tt.fail)
			sig := tt.sig
			if sig == "" {
				sig = hmacHex(secret, tt.body)
			}
			var code int
			var out map[string]string
			if tt.method == http.MethodPost {
				code, out = post(t, url, tt.body, sig)
			} else {
				resp, err := http.Get(url)
				require.NoError(t, err)
				resp.Body.Close()
				code = resp.StatusCode
				require.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
			}
			require.Equal(t, tt.want, code)
			if code != http.StatusOK && out != nil {
				require.Equal(t, http.StatusText(code), out["error"])
				require.NotEmpty(t, out["message"])
			}
			stored := len(ev.of(messaging.MustParseID(msgID))) == 1
			require.Equal(t, tt.stored, stored)
			calls := int32(0)
			if tt.stored || tt.fail > 0 {
				calls = 1
			}
			require.Equal(t, tt.fail-calls, ev.fail.Load(), "handler calls")
		})
	}
}

func TestCallbackHandlerNotCalledWithoutSignature(t *testing.T) {
	called := 0
	h := chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporterFunc(func(context.Context, event) error {
		called++
		return nil
	})})
	body := `{"event":"status","tracking_data":"` + msgID + `","status":"seen","timestamp":1}`
	for _, sig := range []string{"", hmacHex("x", body)} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/callbacks/chat", strings.NewReader(body))
		if sig != "" {
			req.Header.Set("X-Content-Signature", sig)
		}
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusUnauthorized, rec.Code)
	}
	require.Zero(t, called)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/callbacks/chat", strings.NewReader(body))
	req.Header.Set("X-Content-Signature", chat.Sign(secret, []byte(body)))
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, 1, called)
}

func TestCallbackHandlerBodyCap(t *testing.T) {
	tests := []struct {
		name  string
		limit int64
		size  int
		want  int
	}{
		{"default cap, small body", 0, 1 << 10, http.StatusOK},
		{"default cap, 65 KiB", 0, 65 << 10, http.StatusRequestEntityTooLarge},
		{"small cap, at the cap", 300, 300, http.StatusOK},
		{"small cap, one byte over", 300, 301, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := &events{}
			h := chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporterFunc(ev.handle), MaxBodyBytes: tt.limit})
			prefix := `{"event":"reply","tracking_data":"` + msgID + `","text":"`
			suffix := `"}`
			body := prefix + strings.Repeat("a", tt.size-len(prefix)-len(suffix)) + suffix
			require.Len(t, body, tt.size)
			req := httptest.NewRequest(http.MethodPost, "/callbacks/chat", strings.NewReader(body))
			req.Header.Set("X-Content-Signature", chat.Sign(secret, []byte(body)))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tt.want, rec.Code)
			require.Equal(t, tt.want == http.StatusOK, len(ev.of(messaging.MustParseID(msgID))) == 1)
			if tt.want != http.StatusOK {
				limit := tt.limit
				if limit == 0 {
					limit = chat.DefaultMaxCallbackBytes
				}
				require.JSONEq(t, fmt.Sprintf(`{"error":"Payload Too Large","message":"a callback body is at most %d bytes"}`, limit), rec.Body.String())
			}
		})
	}
}

func TestCallbackHandlerRequiresSecretAndHandler(t *testing.T) {
	require.Panics(t, func() { chat.CallbackHandler(chat.CallbackConfig{Reporter: reporterFunc((&events{}).handle)}) })
	require.Panics(t, func() { chat.CallbackHandler(chat.CallbackConfig{Secret: secret}) })
}

func TestCallbackHandlerConcurrent(t *testing.T) {
	ev, url := callbackServer(t, nil)
	gen := messaging.NewIDGenerator(nil)
	ids := make([]messaging.ID, 50)
	done := make(chan int, len(ids))
	for i := range ids {
		ids[i] = gen.New()
		go func(id messaging.ID) {
			body := []byte(`{"event":"status","tracking_data":"` + id.String() + `","status":"seen","timestamp":1731234567890}`)
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("X-Content-Signature", chat.Sign(secret, body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}(ids[i])
	}
	for range ids {
		require.Equal(t, http.StatusOK, <-done)
	}
	for _, id := range ids {
		require.Len(t, ev.of(id), 1)
	}
}

func TestCallbackHandlerBodyCapOverHTTP(t *testing.T) {
	ev, url := callbackServer(t, func(c *chat.CallbackConfig) { c.MaxBodyBytes = 300 })
	body := `{"event":"reply","tracking_data":"` + msgID + `","text":"` + strings.Repeat("a", 400) + `"}`
	code, out := post(t, url, body, chat.Sign(secret, []byte(body)))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
	require.Equal(t, "Payload Too Large", out["error"])
	require.Empty(t, ev.of(messaging.MustParseID(msgID)))
}

// TestCallbackHandlerRefusedEvent: an event the handler refuses for good
// (a messaging.Invalid error, such as an answer outside the survey's
// options) is a 400 in the error format, not a 500 the provider would
// retry.
func TestCallbackHandlerRefusedEvent(t *testing.T) {
	h := chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporterFunc(func(context.Context, event) error {
		return messaging.Invalidf("survey.option_index", "option_index 7 is outside the survey's 3 options")
	})})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	body := `{"event":"reply","tracking_data":"` + msgID + `","survey":{"option_index":7},"timestamp":1}`
	code, out := post(t, srv.URL, body, hmacHex(secret, body))
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "Bad Request", out["error"])
	require.Contains(t, out["message"], "option_index 7 is outside")
}

// slowBody is a body whose read fails on its deadline after a few bytes.
type slowBody struct {
	sent bool
	err  error
}

func (b *slowBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, `{"event":`), nil
	}
	return 0, b.err
}

func (b *slowBody) Close() error { return nil }

// timeoutErr is a network timeout, as a connection's read deadline gives.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestCallbackHandlerSlowBody: a body that does not arrive in time is a
// 408, which a provider retries, not a 400 it may take as final; any
// other failed read stays a 400.
func TestCallbackHandlerSlowBody(t *testing.T) {
	h := chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporterFunc(func(context.Context, event) error { return nil })})
	for _, c := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("the server's own: %w", os.ErrDeadlineExceeded), http.StatusRequestTimeout},
		{timeoutErr{}, http.StatusRequestTimeout},
		{io.ErrUnexpectedEOF, http.StatusBadRequest},
	} {
		r := httptest.NewRequest(http.MethodPost, "/callbacks/chat", nil)
		r.Body = &slowBody{err: c.err}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, c.code, w.Code, "%v: %s", c.err, w.Body)
		var out map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
		require.Equal(t, http.StatusText(c.code), out["error"])
	}
}

// keepGuard is a replay guard that cannot forget, failing when told.
type keepGuard struct {
	keys map[string]bool
	err  error
}

func (g *keepGuard) Seen(_ context.Context, key string, _ time.Time) (bool, error) {
	if g.err != nil {
		return false, g.err
	}
	seen := g.keys[key]
	g.keys[key] = true
	return seen, nil
}

// A callback taken before is refused 401 and reports nothing; one that
// could not be stored is taken when the provider sends it again; with a
// guard that cannot forget, that resend is refused; a guard failure is a
// 503.
func TestCallbackHandlerReplays(t *testing.T) {
	body := `{"event":"status","tracking_data":"` + msgID + `","status":"delivered","timestamp":1731234567890}`
	sig := chat.Sign(secret, []byte(body))
	send := func(h http.Handler) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/callbacks/chat", strings.NewReader(body))
		req.Header.Set(chat.SignatureHeader, sig)
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	var calls, failures int
	reporter := reporterFunc(func(context.Context, event) error {
		calls++
		if failures > 0 {
			failures--
			return errors.New("database down")
		}
		return nil
	})

	h := chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporter})
	require.Equal(t, http.StatusOK, send(h))
	require.Equal(t, http.StatusUnauthorized, send(h), "a replay")
	require.Equal(t, 1, calls, "a replay reports nothing")

	calls, failures = 0, 1
	h = chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporter})
	require.Equal(t, http.StatusInternalServerError, send(h))
	require.Equal(t, http.StatusOK, send(h), "the resend of a callback not stored is taken")
	require.Equal(t, http.StatusUnauthorized, send(h))
	require.Equal(t, 2, calls)

	calls, failures = 0, 1
	keep := &keepGuard{keys: map[string]bool{}}
	h = chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporter, Replays: keep, ReplayScope: "herald:7:"})
	require.Equal(t, http.StatusInternalServerError, send(h))
	require.Equal(t, http.StatusUnauthorized, send(h), "a guard that cannot forget keeps the key")
	require.Equal(t, 1, calls)
	require.Equal(t, map[string]bool{"herald:7:" + sig: true}, keep.keys, "the key is the scope and the signature")

	calls = 0
	h = chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporter, Replays: &keepGuard{err: errors.New("down")}})
	require.Equal(t, http.StatusServiceUnavailable, send(h))
	require.Zero(t, calls)
}
