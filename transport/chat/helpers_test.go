package chat_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
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
func textTo(to string) delivery.ChatSend {
	return delivery.ChatSend{
		MessageID: messaging.NewIDGenerator(nil).New(),
		Sender:    "acme",
		To:        to,
		Ref:       1000 + seqs.Add(1),
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

// event is one report of a CallbackHandler, a status or an inbound, in
// one shape for the tests to compare.
type event struct {
	Kind        string // "status", or the kind of the inbound
	MessageID   messaging.ID
	Token       string // the provider's message id
	Status      string // delivered, seen, expired, failed
	Reason      delivery.ChatReason
	Detail      string
	At          time.Time
	Phone       string
	Text        string
	OptionIndex int
	Sender      string
}

// reporterFunc is a delivery.Reporter of the chat reports, each handed
// to the function as an event.
type reporterFunc func(ctx context.Context, ev event) error

func (f reporterFunc) Receipt(context.Context, delivery.Receipt) error {
	return errors.New("no receipts here")
}

func (f reporterFunc) InboundSMS(context.Context, delivery.InboundPart) error {
	return errors.New("no inbound SMS here")
}

func (f reporterFunc) ChatStatuses(ctx context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	out := make([]delivery.ChatEventOutcome, len(ss))
	for i, s := range ss {
		st := strings.ToLower(string(s.Status))
		if s.Reason == delivery.ReasonExpired {
			st = "expired"
		}
		if err := f(ctx, event{Kind: "status", MessageID: s.MessageID, Token: s.ProviderID, Status: st, Reason: s.Reason, Detail: s.Detail,
			At: s.At, OptionIndex: -1}); err != nil {
			return nil, err
		}
		out[i] = delivery.ChatEventStored
	}
	return out, nil
}

func (f reporterFunc) ChatInbound(ctx context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	err := f(ctx, event{Kind: in.Kind, MessageID: in.MessageID, At: in.At, Phone: in.Phone, Text: in.Text, OptionIndex: in.OptionIndex,
		Sender: in.Sender})
	if err != nil {
		return delivery.ChatEventError, err
	}
	return delivery.ChatEventStored, nil
}

// events collects the events a CallbackHandler stored.
type events struct {
	mu   sync.Mutex
	list []event
	// fail makes the next calls of the handler fail.
	fail atomic.Int32
}

func (e *events) handle(_ context.Context, ev event) error {
	if e.fail.Add(-1) >= 0 {
		return errTemporary
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
	return nil
}

// of returns the events of one message.
func (e *events) of(id messaging.ID) []event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []event
	for _, ev := range e.list {
		if ev.MessageID == id {
			out = append(out, ev)
		}
	}
	return out
}

// wait waits until message id has n events and returns them.
func (e *events) wait(t *testing.T, id messaging.ID, n int) []event {
	t.Helper()
	var got []event
	require.Eventually(t, func() bool {
		got = e.of(id)
		return len(got) >= n
	}, 5*time.Second, 2*time.Millisecond, "events of %s", id)
	return got
}

var errTemporary = errors.New("storage unavailable")
