package vonage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/vonage"
)

const (
	testAppID   = "aaaaaaaa-bbbb-4ccc-8ddd-000000000042"
	testSecret  = "test-signature-secret-0123456789"
	testMsgID   = "01890a5d-ac96-774b-bcce-b302099a8057"
	testCB      = "https://herald.example.com/callbacks/chat/42"
	testCompany = "01890a5d-ac96-774b-bcce-b30209900001"
	viberSender = "HeraldViber"
	waSender    = "447700900001"
)

// testKey makes an RSA key and the credentials object holding it.
func testKey(t *testing.T) (*rsa.PrivateKey, json.RawMessage) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	creds, err := json.Marshal(vonage.Credentials{ApplicationID: testAppID, PrivateKey: string(pemKey), SignatureSecret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	return key, creds
}

// fakeReporter records what an adapter reports.
type fakeReporter struct {
	mu       sync.Mutex
	statuses [][]delivery.ChatStatus
	inbound  []delivery.ChatInbound
	err      error
}

func (r *fakeReporter) Receipt(context.Context, delivery.Receipt) error        { return nil }
func (r *fakeReporter) InboundSMS(context.Context, delivery.InboundPart) error { return nil }

func (r *fakeReporter) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	r.statuses = append(r.statuses, append([]delivery.ChatStatus(nil), ss...))
	out := make([]delivery.ChatEventOutcome, len(ss))
	for i := range out {
		out[i] = delivery.ChatEventStored
	}
	return out, nil
}

func (r *fakeReporter) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return "", r.err
	}
	r.inbound = append(r.inbound, in)
	return delivery.ChatEventStored, nil
}

func (r *fakeReporter) calls() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.statuses), len(r.inbound)
}

// contacts is a Contacts whose people last wrote at last (zero: never).
type contacts struct{ last time.Time }

func (c contacts) LastInbound(context.Context, int64, string) (time.Time, bool, error) {
	return c.last, !c.last.IsZero(), nil
}

// newAdapter builds an adapter of channel against baseURL.
func newAdapter(t *testing.T, channel, baseURL string, creds json.RawMessage, rep delivery.Reporter, mod func(*chatprovider.Settings)) *vonage.Adapter {
	t.Helper()
	s := chatprovider.Settings{
		ServiceID:   42,
		CompanyID:   messaging.MustParseID(testCompany),
		Channel:     channel,
		Sender:      viberSender,
		BaseURL:     baseURL,
		Credentials: creds,
		CallbackURL: testCB,
		Client:      &http.Client{Timeout: 5 * time.Second},
		Reporter:    rep,
		Contacts:    contacts{last: time.Now().Add(-time.Hour)},
	}
	if channel == chatprovider.ChannelWhatsApp {
		s.Sender = waSender
	}
	if mod != nil {
		mod(&s)
	}
	a, err := vonage.New(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// signedRequest makes a webhook request for body signed with secret.
func signedRequest(t *testing.T, secret string, body []byte, c vonage.Claims) *http.Request {
	t.Helper()
	if c.IssuedAt == 0 {
		c.IssuedAt = time.Now().Unix()
	}
	if c.ID == "" {
		c.ID = vonage.NewJTI()
	}
	if c.PayloadHash == "" {
		c.PayloadHash = vonage.PayloadHash(body)
	}
	c.Issuer = "Vonage"
	tok, err := vonage.SignHS256([]byte(secret), c)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/callbacks/chat/42", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("unmarshal %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}
