package infobip_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/infobip"
)

const (
	testAPIKey   = "test-api-key"
	testUser     = "herald-callbacks"
	testPassword = "callback-password"
	testCallback = "https://herald.example.com/callbacks/chat/42"
)

// The message ids of the golden files.
func testID() messaging.ID  { return messaging.MustParseID("01936f4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f") }
func testID2() messaging.ID { return messaging.MustParseID("01936f4e-8a2b-7c3d-9e4f-5a6b7c8d9e10") }
func testID3() messaging.ID { return messaging.MustParseID("01936f4e-8a2b-7c3d-9e4f-5a6b7c8d9e11") }

func testCreds() json.RawMessage {
	b, _ := json.Marshal(infobip.Credentials{APIKey: testAPIKey, CallbackUsername: testUser, CallbackPassword: testPassword})
	return b
}

// reporter records what an adapter reports; fail makes the next calls
// fail.
type reporter struct {
	mu       sync.Mutex
	statuses [][]delivery.ChatStatus
	inbound  []delivery.ChatInbound
	fail     error
	seen     chan struct{}
}

func newReporter() *reporter { return &reporter{seen: make(chan struct{}, 1024)} }

func (r *reporter) Receipt(context.Context, delivery.Receipt) error {
	return errors.New("unexpected SMS receipt")
}

func (r *reporter) InboundSMS(context.Context, delivery.InboundPart) error {
	return errors.New("unexpected inbound SMS")
}

func (r *reporter) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return nil, r.fail
	}
	r.statuses = append(r.statuses, append([]delivery.ChatStatus(nil), ss...))
	out := make([]delivery.ChatEventOutcome, len(ss))
	for i := range out {
		out[i] = delivery.ChatEventStored
		r.seen <- struct{}{}
	}
	return out, nil
}

func (r *reporter) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return delivery.ChatEventError, r.fail
	}
	r.inbound = append(r.inbound, in)
	r.seen <- struct{}{}
	return delivery.ChatEventStored, nil
}

func (r *reporter) calls() ([][]delivery.ChatStatus, []delivery.ChatInbound) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]delivery.ChatStatus(nil), r.statuses...), append([]delivery.ChatInbound(nil), r.inbound...)
}

func (r *reporter) setFail(err error) {
	r.mu.Lock()
	r.fail = err
	r.mu.Unlock()
}

func newAdapter(t *testing.T, baseURL string, rep delivery.Reporter) *infobip.Adapter {
	t.Helper()
	a, err := infobip.New(context.Background(), chatprovider.Settings{
		ServiceID:   42,
		Channel:     chatprovider.ChannelViber,
		Sender:      "HeraldShop",
		BaseURL:     baseURL,
		Credentials: testCreds(),
		CallbackURL: testCallback,
		Client:      &http.Client{Timeout: 5 * time.Second},
		Reporter:    rep,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	return a
}

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// post sends body to the adapter's report endpoint with the given Basic
// credentials and returns the status.
func post(t *testing.T, a http.Handler, user, pass string, body []byte) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/callbacks/chat/42", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if user != "" || pass != "" {
		req.SetBasicAuth(user, pass)
	}
	w := httptest.NewRecorder()
	a.ServeHTTP(w, req)
	return w.Code
}

// provider is a fake Infobip send endpoint: it records the requests and
// answers what answer returns.
type provider struct {
	mu     sync.Mutex
	bodies [][]byte
	auth   []string
	answer func(w http.ResponseWriter)
}

func newProvider(t *testing.T, answer func(w http.ResponseWriter)) (*provider, string) {
	p := &provider{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(r.Body)
		p.mu.Lock()
		if r.URL.Path == infobip.SendPath && r.Method == http.MethodPost {
			p.bodies = append(p.bodies, buf.Bytes())
			p.auth = append(p.auth, r.Header.Get("Authorization"))
		}
		p.mu.Unlock()
		p.answer(w)
	}))
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *provider) requests() ([][]byte, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.bodies...), append([]string(nil), p.auth...)
}

func answerWith(status int, body []byte, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

func sendErr(t *testing.T, err error) *delivery.SendError {
	t.Helper()
	var se *delivery.SendError
	require.ErrorAs(t, err, &se)
	return se
}

func newGet() (*http.Request, *httptest.ResponseRecorder) {
	return httptest.NewRequest(http.MethodGet, "/callbacks/chat/42", nil), httptest.NewRecorder()
}
