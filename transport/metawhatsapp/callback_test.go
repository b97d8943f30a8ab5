package metawhatsapp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

func TestWebhookSignature(t *testing.T) {
	body := []byte(readFile(t, "webhook/statuses.json"))
	forged := []struct{ name, sig string }{
		{"missing", "none"},
		{"other secret", Sign("another-secret", body)},
		{"no prefix", strings.TrimPrefix(Sign(testAppSecret, body), "sha256=")},
		{"sha1", "sha1=" + strings.TrimPrefix(Sign(testAppSecret, body), "sha256=")},
		{"not hex", "sha256=zz"},
		{"truncated", Sign(testAppSecret, body)[:40]},
	}
	for _, tc := range forged {
		t.Run(tc.name, func(t *testing.T) {
			rep := &fakeReporter{}
			a := newTestAdapter(t, "https://graph.example.com/v23.0", rep)
			sig := tc.sig
			if sig == "none" {
				sig = " "
			}
			if w := post(t, a, body, sig); w.Code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", w.Code)
			}
			if calls, in := rep.calls(); len(calls)+len(in) != 0 {
				t.Fatal("the Reporter was called for a forged webhook")
			}
		})
	}
	t.Run("body changed after signing", func(t *testing.T) {
		rep := &fakeReporter{}
		a := newTestAdapter(t, "https://graph.example.com/v23.0", rep)
		sig := Sign(testAppSecret, body)
		changed := []byte(strings.Replace(string(body), `"read"`, `"failed"`, 1))
		if w := post(t, a, changed, sig); w.Code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", w.Code)
		}
		if calls, _ := rep.calls(); len(calls) != 0 {
			t.Fatal("the Reporter was called")
		}
	})
}

func TestWebhookReplay(t *testing.T) {
	rep := &fakeReporter{}
	a := newTestAdapter(t, "https://graph.example.com/v23.0", rep)
	body := []byte(readFile(t, "webhook/statuses.json"))
	if w := post(t, a, body, ""); w.Code != http.StatusOK {
		t.Fatalf("first: status %d", w.Code)
	}
	if w := post(t, a, body, ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("replay: status %d, want 401", w.Code)
	}
	if calls, _ := rep.calls(); len(calls) != 1 {
		t.Fatalf("ChatStatuses called %d times, want once", len(calls))
	}
	// Another body is taken.
	if w := post(t, a, []byte(readFile(t, "webhook/inbound_text.json")), ""); w.Code != http.StatusOK {
		t.Fatalf("another body: status %d", w.Code)
	}
}

// replayOnly is a guard without Forget: it never forgets.
type replayOnly struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (g *replayOnly) Seen(_ context.Context, key string, _ time.Time) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := g.keys[key]
	g.keys[key] = true
	return seen, nil
}

func TestWebhookReportFailure(t *testing.T) {
	rep := &fakeReporter{err: errors.New("database down")}
	a := newTestAdapter(t, "https://graph.example.com/v23.0", rep)
	body := []byte(readFile(t, "webhook/statuses.json"))
	if w := post(t, a, body, ""); w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", w.Code)
	}
	// Meta sends the same body again: it is taken, not a replay.
	rep.mu.Lock()
	rep.err = nil
	rep.mu.Unlock()
	if w := post(t, a, body, ""); w.Code != http.StatusOK {
		t.Fatalf("resend: status %d, want 200", w.Code)
	}
	if calls, _ := rep.calls(); len(calls) != 2 {
		t.Fatalf("ChatStatuses called %d times, want 2", len(calls))
	}

	// An outcome saying a status was not stored fails the webhook too.
	rep2 := &fakeReporter{outcome: delivery.ChatEventError}
	a2 := newTestAdapter(t, "https://graph.example.com/v23.0", rep2)
	if w := post(t, a2, body, ""); w.Code != http.StatusInternalServerError {
		t.Fatalf("outcome error: status %d, want 500", w.Code)
	}
	// Inbound messages fail alike.
	rep3 := &fakeReporter{err: errors.New("database down")}
	a3 := newTestAdapter(t, "https://graph.example.com/v23.0", rep3)
	if w := post(t, a3, []byte(readFile(t, "webhook/inbound_text.json")), ""); w.Code != http.StatusInternalServerError {
		t.Fatalf("inbound: status %d, want 500", w.Code)
	}
	// A guard without Forget keeps the key: the adapter takes the resend
	// once itself, and refuses a replay after it.
	rep4 := &fakeReporter{err: errors.New("down")}
	a4 := newTestAdapter(t, "https://graph.example.com/v23.0", rep4)
	a4.replays = &replayOnly{keys: map[string]bool{}}
	if w := post(t, a4, body, ""); w.Code != http.StatusInternalServerError {
		t.Fatalf("guard without Forget: status %d, want 500", w.Code)
	}
	rep4.mu.Lock()
	rep4.err = nil
	rep4.mu.Unlock()
	if w := post(t, a4, body, ""); w.Code != http.StatusOK {
		t.Fatalf("guard without Forget, resend: status %d, want 200", w.Code)
	}
	if w := post(t, a4, body, ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("guard without Forget, replay: status %d, want 401", w.Code)
	}
}

func TestWebhookBatchIsOneCall(t *testing.T) {
	// Two entries, three changes, five statuses (one "sent"), one message
	// and one change of another phone number.
	body := `{"object":"whatsapp_business_account","entry":[
	 {"id":"1","changes":[
	  {"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"1555","phone_number_id":"` + testPhoneID + `"},
	   "statuses":[
	    {"id":"wamid.A","status":"sent","timestamp":"1795000000","recipient_id":"1","biz_opaque_callback_data":"` + testMessageID + `"},
	    {"id":"wamid.A","status":"delivered","timestamp":"1795000001","recipient_id":"1","biz_opaque_callback_data":"` + testMessageID + `"}]}},
	  {"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"1555","phone_number_id":"999"},
	   "statuses":[{"id":"wamid.X","status":"delivered","timestamp":"1795000001","recipient_id":"9"}]}}]},
	 {"id":"1","changes":[
	  {"field":"messages","value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"1555","phone_number_id":"` + testPhoneID + `"},
	   "statuses":[
	    {"id":"wamid.B","status":"read","timestamp":"1795000002","recipient_id":"2"},
	    {"id":"wamid.C","status":"failed","timestamp":"1795000003","recipient_id":"3","errors":[{"code":131050,"title":"t"}]},
	    {"id":"wamid.D","status":"failed","timestamp":"1795000004","recipient_id":"4"}],
	   "messages":[{"from":"5","id":"wamid.E","timestamp":"1795000005","type":"text","text":{"body":"hi"}},
	               {"from":"5","id":"wamid.F","timestamp":"1795000006","type":"image","image":{"id":"1"}}]}}]}]}`
	rep := &fakeReporter{}
	a := newTestAdapter(t, "https://graph.example.com/v23.0", rep)
	if w := post(t, a, []byte(body), ""); w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	calls, inbound := rep.calls()
	if len(calls) != 1 {
		t.Fatalf("ChatStatuses called %d times, want once", len(calls))
	}
	got := calls[0]
	if len(got) != 4 {
		t.Fatalf("%d statuses, want 4: %+v", len(got), got)
	}
	want := []struct {
		pid    string
		status messaging.MessageStatus
		reason delivery.ChatReason
	}{
		{"wamid.A", messaging.StatusDelivered, ""},
		{"wamid.B", messaging.StatusSeen, ""},
		{"wamid.C", messaging.StatusFailed, delivery.ReasonBlocked},
		{"wamid.D", messaging.StatusFailed, delivery.ReasonRejected},
	}
	for i, w := range want {
		if got[i].ProviderID != w.pid || got[i].Status != w.status || got[i].Reason != w.reason {
			t.Errorf("status %d = %+v, want %+v", i, got[i], w)
		}
	}
	if got[0].MessageID != msgID(testMessageID) || !got[1].MessageID.IsZero() {
		t.Errorf("message ids %v %v", got[0].MessageID, got[1].MessageID)
	}
	if len(inbound) != 1 || inbound[0].Text != "hi" || inbound[0].Kind != delivery.InboundText {
		t.Errorf("inbound = %+v", inbound)
	}
}

func TestWebhookMalformed(t *testing.T) {
	rep := &fakeReporter{}
	a := newTestAdapter(t, "https://graph.example.com/v23.0", rep)
	if w := post(t, a, []byte(`{"object":`), ""); w.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", w.Code)
	}
	big := make([]byte, MaxWebhookBytes+1)
	if w := post(t, a, big, ""); w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", w.Code)
	}
	r := httptest.NewRequest(http.MethodPut, "/", nil)
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("PUT: status %d", w.Code)
	}
	if calls, in := rep.calls(); len(calls)+len(in) != 0 {
		t.Fatal("the Reporter was called")
	}
}

func TestWebhookVerification(t *testing.T) {
	a := newTestAdapter(t, "https://graph.example.com/v23.0", &fakeReporter{})
	get := func(mode, token, challenge string) *httptest.ResponseRecorder {
		q := url.Values{"hub.mode": {mode}, "hub.verify_token": {token}, "hub.challenge": {challenge}}
		r := httptest.NewRequest(http.MethodGet, "/callbacks/chat/42?"+q.Encode(), nil)
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		return w
	}
	if w := get("subscribe", testVerify, "1158201444"); w.Code != 200 || w.Body.String() != "1158201444" {
		t.Fatalf("good token: %d %q", w.Code, w.Body)
	}
	if w := get("subscribe", "wrong", "1158201444"); w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), "1158201444") {
		t.Fatalf("wrong token: %d %q", w.Code, w.Body)
	}
	if w := get("unsubscribe", testVerify, "1158201444"); w.Code != http.StatusForbidden {
		t.Fatalf("wrong mode: %d", w.Code)
	}
}

func TestOptionID(t *testing.T) {
	id := msgID(testMessageID)
	got, idx, ok := ParseOptionID(OptionID(id, 4))
	if !ok || got != id || idx != 4 {
		t.Fatalf("round trip: %v %d %v", got, idx, ok)
	}
	for _, s := range []string{"", "yes", testMessageID, testMessageID + ":", testMessageID + ":-1", "x:1", testMessageID + ":abc"} {
		if _, _, ok := ParseOptionID(s); ok {
			t.Errorf("%q parsed as an option id", s)
		}
	}
}

// onceStore is a memory store whose next status writes fail and that
// cannot forget a key, as a process that stops between two writes.
type onceStore struct {
	*memstore.Store
	fail atomic.Int32 // the next status writes fail
}

func (s *onceStore) ApplyUpdatesOnce(ctx context.Context, keys []delivery.ReplayKey, us []delivery.StatusUpdate,
	keyOf []int) ([]bool, []bool, error) {
	if s.fail.Add(-1) >= 0 {
		return nil, nil, errors.New("database down")
	}
	return s.Store.ApplyUpdatesOnce(ctx, keys, us, keyOf)
}

func (s *onceStore) ApplyUpdates(ctx context.Context, us []delivery.StatusUpdate) ([]bool, error) {
	if s.fail.Add(-1) >= 0 {
		return nil, errors.New("database down")
	}
	return s.Store.ApplyUpdates(ctx, us)
}

func (s *onceStore) Forget(context.Context, string) error { return errors.New("database down") }

// TestWebhookKeyWithStatuses: with the store as both the replay guard and
// the store of the statuses, a webhook of statuses is taken in one write,
// its key with them: when that write fails no key is kept, even by a
// guard that cannot forget, and the resend is taken; a replay after it is
// refused.
func TestWebhookKeyWithStatuses(t *testing.T) {
	st := &onceStore{Store: memstore.New()}
	st.fail.Store(1)
	rep := delivery.Reports{Chat: delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st})}
	a := newTestAdapter(t, "https://graph.example.com/v23.0", rep)
	a.replays = st
	body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{` +
		`"messaging_product":"whatsapp","statuses":[{"id":"wamid.A","status":"delivered","timestamp":"1795000002",` +
		`"recipient_id":"998901234567","biz_opaque_callback_data":"0190f5a2-7c1e-7b3a-9d4e-5f6a7b8c9d0e"}]}}]}]}`)
	if w := post(t, a, body, ""); w.Code != http.StatusInternalServerError {
		t.Fatalf("failed write: status %d, want 500", w.Code)
	}
	if w := post(t, a, body, ""); w.Code != http.StatusOK {
		t.Fatalf("resend: status %d, want 200", w.Code)
	}
	if w := post(t, a, body, ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("replay: status %d, want 401", w.Code)
	}
}
