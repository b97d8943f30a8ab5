package vonage_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/vonage"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestWebhookGolden(t *testing.T) {
	_, creds := testKey(t)
	id := messaging.MustParseID(testMsgID)
	const uuid = "aaaaaaaa-bbbb-4ccc-8ddd-0123456789ab"
	company := messaging.MustParseID(testCompany)
	cases := []struct {
		file     string
		channel  string
		statuses []delivery.ChatStatus
		inbound  []delivery.ChatInbound
	}{
		{"status_viber_submitted.json", chatprovider.ChannelViber, nil, nil},
		{"status_viber_delivered.json", chatprovider.ChannelViber, []delivery.ChatStatus{{MessageID: id, ProviderID: uuid,
			Status: messaging.StatusDelivered, At: at("2026-11-27T14:00:03.250Z")}}, nil},
		{"status_whatsapp_read.json", chatprovider.ChannelWhatsApp, []delivery.ChatStatus{{MessageID: id, ProviderID: uuid,
			Status: messaging.StatusSeen, At: at("2026-11-27T14:05:00Z")}}, nil},
		{"status_viber_rejected_1300.json", chatprovider.ChannelViber, []delivery.ChatStatus{{MessageID: id, ProviderID: uuid,
			Status: messaging.StatusFailed, Reason: delivery.ReasonNotOnChannel, Detail: "1300 Not part of the provider network",
			At: at("2026-11-27T14:00:01Z")}}, nil},
		{"status_whatsapp_rejected_1340.json", chatprovider.ChannelWhatsApp, []delivery.ChatStatus{{MessageID: id, ProviderID: uuid,
			Status: messaging.StatusFailed, Reason: delivery.ReasonNotPermitted, Detail: "1340 Outside of the allowed window",
			At: at("2026-11-27T14:00:01Z")}}, nil},
		{"status_whatsapp_undeliverable.json", chatprovider.ChannelWhatsApp, []delivery.ChatStatus{{MessageID: id, ProviderID: uuid,
			Status: messaging.StatusFailed, Reason: delivery.ReasonTransient, Detail: "undeliverable",
			At: at("2026-11-27T14:00:01Z")}}, nil},
		{"inbound_whatsapp_text.json", chatprovider.ChannelWhatsApp, nil, []delivery.ChatInbound{{ServiceID: 42, CompanyID: company, Sender: waSender, Kind: delivery.InboundText,
			Phone: "447700900000", Text: "Can I change the delivery day?", OptionIndex: -1, At: at("2026-11-27T15:00:00Z")}}},
		{"inbound_whatsapp_reply.json", chatprovider.ChannelWhatsApp, nil, []delivery.ChatInbound{{ServiceID: 42, CompanyID: company, Sender: waSender, Kind: delivery.InboundReply,
			MessageID: id, Phone: "447700900000", Text: "Late", OptionIndex: 1, At: at("2026-11-27T15:01:00Z")}}},
		{"inbound_viber_text.json", chatprovider.ChannelViber, nil, []delivery.ChatInbound{{ServiceID: 42, CompanyID: company, Sender: viberSender, Kind: delivery.InboundText,
			Phone: "447700900000", Text: "Thanks", OptionIndex: -1, At: at("2026-11-27T15:02:00Z")}}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			rep := &fakeReporter{}
			a := newAdapter(t, tc.channel, "http://127.0.0.1:1", creds, rep, nil)
			body := readTestdata(t, tc.file)
			w := httptest.NewRecorder()
			a.ServeHTTP(w, signedRequest(t, testSecret, body, vonage.Claims{ApplicationID: testAppID}))
			if w.Code != http.StatusOK {
				t.Fatalf("answer %d %s, want 200", w.Code, w.Body)
			}
			var gotStatuses []delivery.ChatStatus
			if len(rep.statuses) > 1 {
				t.Fatalf("%d ChatStatuses calls, want at most 1", len(rep.statuses))
			} else if len(rep.statuses) == 1 {
				gotStatuses = rep.statuses[0]
			}
			if !reflect.DeepEqual(gotStatuses, tc.statuses) {
				t.Errorf("statuses\n%+v\nwant\n%+v", gotStatuses, tc.statuses)
			}
			if !reflect.DeepEqual(rep.inbound, tc.inbound) {
				t.Errorf("inbound\n%+v\nwant\n%+v", rep.inbound, tc.inbound)
			}
		})
	}
}

func TestWebhookBatchOneCall(t *testing.T) {
	_, creds := testKey(t)
	rep := &fakeReporter{}
	a := newAdapter(t, chatprovider.ChannelViber, "http://127.0.0.1:1", creds, rep, nil)
	var body bytes.Buffer
	body.WriteString("[")
	for i, f := range []string{"status_viber_submitted.json", "status_viber_delivered.json", "status_whatsapp_read.json", "status_viber_rejected_1300.json"} {
		if i > 0 {
			body.WriteString(",")
		}
		body.Write(readTestdata(t, f))
	}
	body.WriteString("]")
	w := httptest.NewRecorder()
	a.ServeHTTP(w, signedRequest(t, testSecret, body.Bytes(), vonage.Claims{}))
	if w.Code != http.StatusOK {
		t.Fatalf("answer %d %s", w.Code, w.Body)
	}
	if len(rep.statuses) != 1 {
		t.Fatalf("%d ChatStatuses calls, want 1", len(rep.statuses))
	}
	var got []messaging.MessageStatus
	for _, s := range rep.statuses[0] {
		got = append(got, s.Status)
	}
	want := []messaging.MessageStatus{messaging.StatusDelivered, messaging.StatusSeen, messaging.StatusFailed}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
}

func TestWebhookRefused(t *testing.T) {
	_, creds := testKey(t)
	body := readTestdata(t, "status_viber_delivered.json")
	now := time.Now()
	cases := []struct {
		name string
		req  func() *http.Request
	}{
		{"basic authorization", func() *http.Request {
			r := signedRequest(t, testSecret, body, vonage.Claims{})
			r.SetBasicAuth("key", "secret")
			return r
		}},
		{"wrong secret", func() *http.Request {
			return signedRequest(t, "another-secret-entirely-0123456789", body, vonage.Claims{})
		}},
		{"body altered", func() *http.Request {
			r := signedRequest(t, testSecret, body, vonage.Claims{})
			r.Body = http.NoBody
			altered := bytes.Replace(body, []byte("delivered"), []byte("read"), 1)
			r2 := httptest.NewRequest(http.MethodPost, "/callbacks/chat/42", bytes.NewReader(altered))
			r2.Header = r.Header
			return r2
		}},
		{"hash of another body", func() *http.Request {
			return signedRequest(t, testSecret, body, vonage.Claims{PayloadHash: vonage.PayloadHash([]byte("{}"))})
		}},
		{"issued long ago", func() *http.Request {
			return signedRequest(t, testSecret, body, vonage.Claims{IssuedAt: now.Add(-time.Hour).Unix()})
		}},
		{"issued in the future", func() *http.Request {
			return signedRequest(t, testSecret, body, vonage.Claims{IssuedAt: now.Add(time.Hour).Unix()})
		}},
		{"expired", func() *http.Request {
			return signedRequest(t, testSecret, body, vonage.Claims{Expires: now.Add(-time.Second).Unix()})
		}},
		{"not a token", func() *http.Request {
			r := signedRequest(t, testSecret, body, vonage.Claims{})
			r.Header.Set("Authorization", "Bearer abc.def")
			return r
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := &fakeReporter{}
			a := newAdapter(t, chatprovider.ChannelViber, "http://127.0.0.1:1", creds, rep, nil)
			w := httptest.NewRecorder()
			a.ServeHTTP(w, tc.req())
			if w.Code != http.StatusUnauthorized {
				t.Errorf("answer %d, want 401", w.Code)
			}
			if s, i := rep.calls(); s+i != 0 {
				t.Errorf("reporter called %d+%d times, want never", s, i)
			}
		})
	}
}

// guard is a ReplayGuard that remembers keys, as a shared store would.
type guard struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (g *guard) Seen(_ context.Context, key string, _ time.Time) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := g.keys[key]
	g.keys[key] = true
	return seen, nil
}

func TestWebhookUnsigned(t *testing.T) {
	_, creds := testKey(t)
	rep := &fakeReporter{}
	a := newAdapter(t, chatprovider.ChannelViber, "http://127.0.0.1:1", creds, rep, nil)
	r := signedRequest(t, testSecret, readTestdata(t, "status_viber_delivered.json"), vonage.Claims{})
	r.Header.Del("Authorization")
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("unsigned webhook answered %d, want 503 so that Vonage posts it again signed", w.Code)
	}
	if s, i := rep.calls(); s+i != 0 {
		t.Errorf("reporter called %d+%d times, want never", s, i)
	}
}

func TestWebhookReplay(t *testing.T) {
	_, creds := testKey(t)
	body := readTestdata(t, "status_viber_delivered.json")
	for name, replays := range map[string]chatprovider.ReplayGuard{"memory": nil, "settings": &guard{keys: map[string]bool{}}} {
		t.Run(name, func(t *testing.T) {
			rep := &fakeReporter{}
			a := newAdapter(t, chatprovider.ChannelViber, "http://127.0.0.1:1", creds, rep, func(s *chatprovider.Settings) { s.Replays = replays })
			first := signedRequest(t, testSecret, body, vonage.Claims{})
			again := httptest.NewRequest(http.MethodPost, "/callbacks/chat/42", bytes.NewReader(body))
			again.Header = first.Header.Clone()
			w := httptest.NewRecorder()
			a.ServeHTTP(w, first)
			if w.Code != http.StatusOK {
				t.Fatalf("first answer %d", w.Code)
			}
			w = httptest.NewRecorder()
			a.ServeHTTP(w, again)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("replay answer %d, want 401", w.Code)
			}
			if s, _ := rep.calls(); s != 1 {
				t.Errorf("%d ChatStatuses calls, want 1", s)
			}
			// A new token for the same body is a new delivery of it.
			w = httptest.NewRecorder()
			a.ServeHTTP(w, signedRequest(t, testSecret, body, vonage.Claims{}))
			if w.Code != http.StatusOK {
				t.Errorf("freshly signed answer %d, want 200", w.Code)
			}
		})
	}
}

func TestWebhookReporterFails(t *testing.T) {
	_, creds := testKey(t)
	for _, f := range []string{"status_viber_delivered.json", "inbound_whatsapp_reply.json"} {
		rep := &fakeReporter{err: errors.New("database down")}
		a := newAdapter(t, chatprovider.ChannelWhatsApp, "http://127.0.0.1:1", creds, rep, nil)
		w := httptest.NewRecorder()
		a.ServeHTTP(w, signedRequest(t, testSecret, readTestdata(t, f), vonage.Claims{}))
		if w.Code < 500 {
			t.Errorf("%s: answer %d, want 5xx so that Vonage sends again", f, w.Code)
		}
	}
}

// failingGuard is a ReplayGuard whose store is down.
type failingGuard struct{}

func (failingGuard) Seen(context.Context, string, time.Time) (bool, error) {
	return false, errors.New("store down")
}

func TestWebhookReplayGuardDown(t *testing.T) {
	_, creds := testKey(t)
	rep := &fakeReporter{}
	a := newAdapter(t, chatprovider.ChannelViber, "http://127.0.0.1:1", creds, rep, func(s *chatprovider.Settings) { s.Replays = failingGuard{} })
	w := httptest.NewRecorder()
	a.ServeHTTP(w, signedRequest(t, testSecret, readTestdata(t, "status_viber_delivered.json"), vonage.Claims{}))
	if w.Code != http.StatusInternalServerError {
		t.Errorf("answer %d, want 500 so that Vonage posts again", w.Code)
	}
	if s, i := rep.calls(); s+i != 0 {
		t.Errorf("reporter called %d+%d times, want never", s, i)
	}
}

// TestWebhookRetryAfterFailure: a webhook answered 500 because its report
// failed is taken when posted again, token and all, if the guard can
// forget; a guard that cannot refuses it as a replay.
func TestWebhookRetryAfterFailure(t *testing.T) {
	_, creds := testKey(t)
	body := readTestdata(t, "status_viber_delivered.json")
	for name, tc := range map[string]struct {
		replays chatprovider.ReplayGuard
		again   int
	}{
		"memory guard forgets":       {nil, http.StatusOK},
		"guard without Forget keeps": {&guard{keys: map[string]bool{}}, http.StatusUnauthorized},
	} {
		t.Run(name, func(t *testing.T) {
			rep := &fakeReporter{err: errors.New("database down")}
			a := newAdapter(t, chatprovider.ChannelViber, "http://127.0.0.1:1", creds, rep, func(s *chatprovider.Settings) { s.Replays = tc.replays })
			first := signedRequest(t, testSecret, body, vonage.Claims{})
			again := httptest.NewRequest(http.MethodPost, "/callbacks/chat/42", bytes.NewReader(body))
			again.Header = first.Header.Clone()
			w := httptest.NewRecorder()
			a.ServeHTTP(w, first)
			if w.Code != http.StatusInternalServerError {
				t.Fatalf("first answer %d, want 500", w.Code)
			}
			rep.mu.Lock()
			rep.err = nil
			rep.mu.Unlock()
			w = httptest.NewRecorder()
			a.ServeHTTP(w, again)
			if w.Code != tc.again {
				t.Errorf("the same delivery again: %d, want %d", w.Code, tc.again)
			}
		})
	}
}

func TestWebhookBadInput(t *testing.T) {
	_, creds := testKey(t)
	cases := map[string]string{
		"malformed JSON": `{"status":`,
		"unknown status": `{"status":"exploded","client_ref":"` + testMsgID + `"}`,
		"bad timestamp":  `{"status":"delivered","client_ref":"` + testMsgID + `","timestamp":"yesterday"}`,
		"neither kind":   `{"message_uuid":"x"}`,
	}
	for name, body := range cases {
		rep := &fakeReporter{}
		a := newAdapter(t, chatprovider.ChannelViber, "http://127.0.0.1:1", creds, rep, nil)
		w := httptest.NewRecorder()
		a.ServeHTTP(w, signedRequest(t, testSecret, []byte(body), vonage.Claims{}))
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: answer %d, want 400", name, w.Code)
		}
		if s, i := rep.calls(); s+i != 0 {
			t.Errorf("%s: reporter called", name)
		}
	}
	// A status of a message another sender of the application sent is
	// taken and reports nothing.
	for _, body := range []string{`{"status":"delivered","client_ref":"order-12"}`, `{"status":"read"}`} {
		rep := &fakeReporter{}
		a := newAdapter(t, chatprovider.ChannelViber, "http://127.0.0.1:1", creds, rep, nil)
		w := httptest.NewRecorder()
		a.ServeHTTP(w, signedRequest(t, testSecret, []byte(body), vonage.Claims{}))
		if s, i := rep.calls(); w.Code != http.StatusOK || s+i != 0 {
			t.Errorf("%s: answer %d, %d reports; want 200 and none", body, w.Code, s+i)
		}
	}
	rep := &fakeReporter{}
	a := newAdapter(t, chatprovider.ChannelViber, "http://127.0.0.1:1", creds, rep, nil)
	w := httptest.NewRecorder()
	a.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/callbacks/chat/42", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET answer %d, want 405", w.Code)
	}
}
