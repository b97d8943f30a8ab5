package metawhatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

const (
	testPhoneID   = "106540352242922"
	testToken     = "EAAJtest-access-token"
	testAppSecret = "test-app-secret"
	testVerify    = "test-verify-token"
	testMessageID = "0190f5a2-7c1e-7b3a-9d4e-5f6a7b8c9d0e"
)

func testCredentials() json.RawMessage {
	return json.RawMessage(`{"accessToken":"` + testToken + `","appSecret":"` + testAppSecret + `","verifyToken":"` + testVerify + `"}`)
}

// fakeReporter records what it is given; err, when set, fails every call.
type fakeReporter struct {
	mu       sync.Mutex
	err      error
	outcome  delivery.ChatEventOutcome
	statuses [][]delivery.ChatStatus
	inbound  []delivery.ChatInbound
}

func (f *fakeReporter) Receipt(context.Context, delivery.Receipt) error {
	return errors.New("unexpected")
}

func (f *fakeReporter) InboundSMS(context.Context, delivery.InboundPart) error {
	return errors.New("unexpected")
}

func (f *fakeReporter) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses = append(f.statuses, append([]delivery.ChatStatus(nil), ss...))
	if f.err != nil {
		return nil, f.err
	}
	outs := make([]delivery.ChatEventOutcome, len(ss))
	for i := range outs {
		outs[i] = delivery.ChatEventStored
		if f.outcome != "" {
			outs[i] = f.outcome
		}
	}
	return outs, nil
}

func (f *fakeReporter) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inbound = append(f.inbound, in)
	if f.err != nil {
		return delivery.ChatEventError, f.err
	}
	return delivery.ChatEventStored, nil
}

func (f *fakeReporter) calls() (statusCalls [][]delivery.ChatStatus, inbound []delivery.ChatInbound) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]delivery.ChatStatus(nil), f.statuses...), append([]delivery.ChatInbound(nil), f.inbound...)
}

// openWindow says every person wrote an hour before now.
type openWindow struct{ now time.Time }

func (o openWindow) LastInbound(context.Context, int64, string) (time.Time, bool, error) {
	return o.now.Add(-time.Hour), true, nil
}

// captured is one request the fake Graph API received.
type captured struct {
	method, path, auth, contentType string
	body                            []byte
}

// fakeGraph answers every request with status and body (and headers),
// recording the requests.
type fakeGraph struct {
	mu       sync.Mutex
	reqs     []captured
	status   int
	body     string
	header   http.Header
	delay    time.Duration
	srv      *httptest.Server
	accepted string
}

func newFakeGraph(t *testing.T) *fakeGraph {
	t.Helper()
	g := &fakeGraph{status: http.StatusOK, body: readFile(t, "answer/accepted.json")}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		g.mu.Lock()
		g.reqs = append(g.reqs, captured{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), b})
		status, body, header, delay := g.status, g.body, g.header, g.delay
		g.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		for k, vs := range header {
			w.Header()[k] = vs
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *fakeGraph) answer(status int, body string, header http.Header) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.status, g.body, g.header = status, body, header
}

func (g *fakeGraph) requests() []captured {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]captured(nil), g.reqs...)
}

// testNow is the adapters' clock in tests.
func testNow() time.Time { return time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC) }

// newTestAdapter builds an adapter on base (a fake Graph API URL, with
// its version) with the customer window open.
func newTestAdapter(t *testing.T, base string, rep delivery.Reporter) *Adapter {
	t.Helper()
	a, err := New(context.Background(), chatprovider.Settings{
		ServiceID:   42,
		Channel:     chatprovider.ChannelWhatsApp,
		Sender:      testPhoneID,
		BaseURL:     base,
		Credentials: testCredentials(),
		Client:      &http.Client{Timeout: 5 * time.Second},
		Reporter:    rep,
		Contacts:    openWindow{testNow()},
		Now:         testNow,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonEqual compares two JSON texts as values.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}

// post sends a webhook body to the adapter, signed with secret unless
// sig is given.
func post(t *testing.T, h http.Handler, body []byte, sig string) *httptest.ResponseRecorder {
	t.Helper()
	if sig == "" {
		sig = Sign(testAppSecret, body)
	}
	r := httptest.NewRequest(http.MethodPost, "/callbacks/chat/42", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(SignatureHeader, sig)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func msgID(s string) messaging.ID { return messaging.MustParseID(s) }
