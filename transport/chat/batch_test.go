package chat_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// batchReporter records each ChatStatuses call whole, as a store write
// would take it; a failing call stores none of its statuses.
type batchReporter struct {
	mu           sync.Mutex
	writes       [][]delivery.ChatStatus
	inbound      []delivery.ChatInbound
	failStatuses int // the next ChatStatuses calls fail
	failInbound  int // the next ChatInbound calls fail
	invalid      bool
}

func (r *batchReporter) Receipt(context.Context, delivery.Receipt) error { return errTemporary }
func (r *batchReporter) InboundSMS(context.Context, delivery.InboundPart) error {
	return errTemporary
}

func (r *batchReporter) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failStatuses > 0 {
		r.failStatuses--
		return nil, errTemporary
	}
	r.writes = append(r.writes, append([]delivery.ChatStatus(nil), ss...))
	out := make([]delivery.ChatEventOutcome, len(ss))
	for i := range out {
		out[i] = delivery.ChatEventStored
	}
	return out, nil
}

func (r *batchReporter) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.invalid {
		return delivery.ChatEventRefused, messaging.Errorf(messaging.Invalid, "optionIndex", "option %d is not one of the survey's", in.OptionIndex)
	}
	if r.failInbound > 0 {
		r.failInbound--
		return delivery.ChatEventError, errTemporary
	}
	r.inbound = append(r.inbound, in)
	return delivery.ChatEventStored, nil
}

// statuses lists the statuses stored, as "token:status", write by write.
func (r *batchReporter) statuses() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]string
	for _, w := range r.writes {
		var ss []string
		for _, s := range w {
			ss = append(ss, s.ProviderID+":"+strings.ToLower(string(s.Status)))
		}
		out = append(out, ss)
	}
	return out
}

// batchGuard is a memory guard that records the keys of a call in one
// SeenAll, and counts those calls.
type batchGuard struct {
	*chatprovider.MemoryGuard
	mu    sync.Mutex
	calls int
}

func (g *batchGuard) SeenAll(ctx context.Context, keys []string, until time.Time) ([]bool, error) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i], _ = g.Seen(ctx, k, until)
	}
	return out, nil
}

// batchServer serves CallbackHandler with a batchReporter and batchGuard.
func batchServer(t *testing.T) (*batchReporter, *batchGuard, string) {
	t.Helper()
	rep := &batchReporter{}
	guard := &batchGuard{MemoryGuard: chatprovider.NewMemoryGuard(time.Now, 1000)}
	srv := httptest.NewServer(chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: rep, Replays: guard}))
	t.Cleanup(srv.Close)
	return rep, guard, srv.URL + "/callbacks/chat"
}

// statusEvent is a batched status event of message token tok.
func statusEvent(id, tok, status string) string {
	return `{"id":"` + id + `","event":"status","message_token":"` + tok + `","tracking_data":"` + msgID +
		`","status":"` + status + `","error_code":0,"timestamp":1731234567890,"phone_number":"998901234567"}`
}

// replyEvent is a batched survey reply.
func replyEvent(id string) string {
	return `{"id":"` + id + `","event":"reply","message_token":"r","tracking_data":"` + msgID +
		`","timestamp":1731234567890,"phone_number":"998901234567","text":"Yes","survey":{"option_index":0,"option_value":"y"}}`
}

func batchOf(events ...string) string { return "[" + strings.Join(events, ",") + "]" }

func TestBatchedCallbackOneWrite(t *testing.T) {
	rep, guard, url := batchServer(t)
	body := batchOf(statusEvent("a.0", "a", "delivered"), statusEvent("b.0", "b", "seen"), statusEvent("c.0", "c", "delivered"))
	code, _ := post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, [][]string{{"a:delivered", "b:seen", "c:delivered"}}, rep.statuses(), "one write, in order")
	require.Equal(t, 1, guard.calls, "the three ids recorded in one call")

	// A single-event body is still taken, alone.
	single := `{"event":"status","message_token":"d","tracking_data":"` + msgID + `","status":"seen","timestamp":1731234567890}`
	code, _ = post(t, url, single, hmacHex(secret, single))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"d:seen"}, rep.statuses()[1])
}

func TestBatchedCallbackReplay(t *testing.T) {
	rep, _, url := batchServer(t)
	body := batchOf(statusEvent("a.0", "a", "delivered"), statusEvent("b.0", "b", "delivered"))
	code, _ := post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusOK, code)

	// The same body again: every event was taken.
	code, out := post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "Unauthorized", out["error"])
	require.Len(t, rep.statuses(), 1)

	// A new batch repeating one event: only the new one is stored.
	body = batchOf(statusEvent("b.0", "b", "delivered"), statusEvent("a.1", "a", "seen"))
	code, _ = post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, [][]string{{"a:delivered", "b:delivered"}, {"a:seen"}}, rep.statuses())
}

func TestBatchedCallbackPartlyBad(t *testing.T) {
	rep, _, url := batchServer(t)
	body := batchOf(statusEvent("a.0", "a", "delivered"), statusEvent("x.0", "x", "read"),
		statusEvent("b.0", "b", "delivered"), statusEvent("", "y", "seen"), statusEvent("a.0", "z", "seen"))
	for range 2 {
		code, out := post(t, url, body, hmacHex(secret, body))
		require.Equal(t, http.StatusBadRequest, code)
		require.Equal(t, "Bad Request", out["error"])
		require.Contains(t, out["message"], `event 1: unknown status "read"`)
		require.Contains(t, out["message"], "event 3: id is missing")
		require.Contains(t, out["message"], `event 4: id "a.0" given twice`)
		require.NotContains(t, out["message"], "event 0")
	}
	require.Equal(t, [][]string{{"a:delivered", "b:delivered"}}, rep.statuses(),
		"the good events are stored once, the resend finding them taken")

	for name, bad := range map[string]string{"not JSON": `[{"id":`, "empty": `[]`} {
		code, out := post(t, url, bad, hmacHex(secret, bad))
		require.Equal(t, http.StatusBadRequest, code, name)
		require.Equal(t, "Bad Request", out["error"], name)
	}
}

func TestBatchedCallbackStoreFailure(t *testing.T) {
	rep, _, url := batchServer(t)
	body := batchOf(statusEvent("a.0", "a", "delivered"), replyEvent("r.0"), statusEvent("b.0", "b", "delivered"))
	rep.failInbound = 1
	code, out := post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusInternalServerError, code)
	require.Equal(t, "Internal Server Error", out["error"])
	require.Contains(t, out["message"], "event 1 ")
	require.Equal(t, [][]string{{"a:delivered"}}, rep.statuses(), "the events before the failure stay stored")

	// The resend stores the rest, and the first event not twice.
	code, _ = post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, [][]string{{"a:delivered"}, {"b:delivered"}}, rep.statuses())
	require.Len(t, rep.inbound, 1)

	// A failed status write stores none of its run; the resend all.
	body = batchOf(statusEvent("c.0", "c", "delivered"), statusEvent("d.0", "d", "delivered"))
	rep.failStatuses = 1
	code, _ = post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusInternalServerError, code)
	code, _ = post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"c:delivered", "d:delivered"}, rep.statuses()[2])

	// An answer refused for good is a bad event; the others are taken.
	rep.invalid = true
	body = batchOf(replyEvent("r.9"), statusEvent("e.0", "e", "seen"))
	code, out = post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, out["message"], "event 0: ")
	require.Equal(t, []string{"e:seen"}, rep.statuses()[3])
}

func TestBatchedCallbackSignature(t *testing.T) {
	rep, _, url := batchServer(t)
	body := batchOf(statusEvent("a.0", "a", "delivered"))
	code, _ := post(t, url, body, hmacHex("other", body))
	require.Equal(t, http.StatusUnauthorized, code)
	require.Empty(t, rep.statuses())
}

// BenchmarkBatchedCallback measures the handler's own work on a batched
// callback of 100 status events (signature, decode, replay keys in a
// memory guard, the report to a Reporter that keeps nothing), per event.
//
//	go test -run '^$' -bench BatchedCallback -benchmem ./transport/chat/
func BenchmarkBatchedCallback(b *testing.B) {
	h := chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporterFunc(func(context.Context, event) error { return nil }),
		Replays: chatprovider.NewMemoryGuard(time.Now, 1<<22)})
	// A new id for every event: the guard would skip the old ones.
	bodies, sigs := make([]string, b.N), make([]string, b.N)
	for n := range b.N {
		evs := make([]string, 100)
		for i := range evs {
			evs[i] = statusEvent(fmt.Sprintf("%d.%d", n, i), fmt.Sprint(5379697806260881548+i), "delivered")
		}
		bodies[n] = batchOf(evs...)
		sigs[n] = chat.Sign(secret, []byte(bodies[n]))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		req := httptest.NewRequest(http.MethodPost, "/callbacks/chat", strings.NewReader(bodies[n]))
		req.Header.Set(chat.SignatureHeader, sigs[n])
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("answered %d: %s", rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/event")
}

// onceStore is a memory store whose next status writes fail and that
// cannot forget a key, as a process that stops between two writes.
type onceStore struct {
	*memstore.Store
	mu   sync.Mutex
	fail int // the next status writes fail
}

func (s *onceStore) failing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		return true
	}
	return false
}

func (s *onceStore) ApplyUpdates(ctx context.Context, us []delivery.StatusUpdate) ([]bool, error) {
	if s.failing() {
		return nil, errTemporary
	}
	return s.Store.ApplyUpdates(ctx, us)
}

func (s *onceStore) ApplyUpdatesOnce(ctx context.Context, keys []delivery.ReplayKey, us []delivery.StatusUpdate,
	keyOf []int) ([]bool, []bool, error) {
	if s.failing() {
		return nil, nil, errTemporary
	}
	return s.Store.ApplyUpdatesOnce(ctx, keys, us, keyOf)
}

func (s *onceStore) Forget(context.Context, string) error { return errTemporary }

// TestBatchedCallbackKeysWithStatuses: with the store as both the replay
// guard and the store of the statuses, a batch's keys are written in the
// transaction of its statuses: when that write fails no key is kept, even
// by a guard that cannot forget, and the resend is taken; a replay of the
// body taken is refused.
func TestBatchedCallbackKeysWithStatuses(t *testing.T) {
	st := &onceStore{Store: memstore.New(), fail: 1}
	events := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st})
	srv := httptest.NewServer(chat.CallbackHandler(chat.CallbackConfig{Secret: secret,
		Reporter: delivery.Reports{Chat: events}, Replays: st}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/callbacks/chat"

	body := batchOf(statusEvent("k.0", "k", "delivered"), statusEvent("k.1", "k", "seen"))
	code, _ := post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusInternalServerError, code, "the write failed")
	seen, err := st.Seen(context.Background(), "herald:id:k.0", time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.False(t, seen, "no key kept by the failed write")
	require.NoError(t, st.Store.Forget(context.Background(), "herald:id:k.0"))

	code, _ = post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusOK, code, "the resend is taken")
	code, _ = post(t, url, body, hmacHex(secret, body))
	require.Equal(t, http.StatusUnauthorized, code, "a replay")

	single := statusEvent("s.0", "s", "delivered")
	single = `{` + single[strings.Index(single, `"event"`):]
	st.fail = 1
	code, _ = post(t, url, single, hmacHex(secret, single))
	require.Equal(t, http.StatusInternalServerError, code)
	code, _ = post(t, url, single, hmacHex(secret, single))
	require.Equal(t, http.StatusOK, code, "a single callback's resend is taken too")
	code, _ = post(t, url, single, hmacHex(secret, single))
	require.Equal(t, http.StatusUnauthorized, code)
}
