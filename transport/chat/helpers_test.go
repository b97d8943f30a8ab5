package chat_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatsim"
	"github.com/stretchr/testify/require"
)

const (
	token  = "provider-token"
	secret = "callback-secret"
)

// startSim serves a simulator on an httptest server.
func startSim(t testing.TB, cfg chatsim.Config) (*chatsim.Server, string) {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = token
	}
	if cfg.LateFailureSuffix == "" {
		cfg.LateFailureSuffix = "0011"
	}
	sim := chatsim.New(cfg)
	srv := httptest.NewServer(sim)
	t.Cleanup(func() {
		srv.Close()
		_ = sim.Close()
	})
	return sim, srv.URL
}

// newClient returns a client of baseURL with fast retries; mod adjusts
// its config.
func newClient(t testing.TB, baseURL string, mod func(*chat.Config)) *chat.Client {
	t.Helper()
	cfg := chat.Config{
		BaseURL: baseURL,
		Token:   token,
		Timeout: 2 * time.Second,
		Backoff: messaging.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond},
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := chat.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// seqs hands out unique seq values across the package's tests.
var seqs atomic.Int64

// textTo is a SimpleText message to a number.
func textTo(to string) delivery.ChatMessage {
	return delivery.ChatMessage{
		MessageID: messaging.NewIDGenerator(nil).New(),
		ServiceID: "acme",
		To:        to,
		Seq:       1000 + seqs.Add(1),
		TTL:       time.Hour,
		Type:      messaging.TypeSimpleText,
		Text:      "hello",
	}
}

// sendErr asserts that err is a *delivery.SendError and returns it.
func sendErr(t *testing.T, err error) *delivery.SendError {
	t.Helper()
	require.Error(t, err)
	var se *delivery.SendError
	require.ErrorAs(t, err, &se)
	return se
}

// events collects the events a CallbackHandler stored.
type events struct {
	mu   sync.Mutex
	list []delivery.ChatEvent
	// fail makes the next calls of the handler fail.
	fail atomic.Int32
}

func (e *events) handle(_ context.Context, ev delivery.ChatEvent) error {
	if e.fail.Add(-1) >= 0 {
		return errTemporary
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
	return nil
}

// of returns the events of one message.
func (e *events) of(id messaging.ID) []delivery.ChatEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []delivery.ChatEvent
	for _, ev := range e.list {
		if ev.MessageID == id {
			out = append(out, ev)
		}
	}
	return out
}

// wait waits until message id has n events and returns them.
func (e *events) wait(t *testing.T, id messaging.ID, n int) []delivery.ChatEvent {
	t.Helper()
	var got []delivery.ChatEvent
	require.Eventually(t, func() bool {
		got = e.of(id)
		return len(got) >= n
	}, 5*time.Second, 2*time.Millisecond, "events of %s", id)
	return got
}

var errTemporary = errors.New("storage unavailable")
