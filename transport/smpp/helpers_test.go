package smpp_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/stretchr/testify/require"
)

// startSim starts a recording simulator on an ephemeral loopback port.
func startSim(t testing.TB, cfg smscsim.Config) *smscsim.Server {
	t.Helper()
	cfg.Record = true
	srv := smscsim.New(cfg)
	require.NoError(t, srv.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// sink collects the receipts a Client hands to its handler.
type sink struct {
	mu   sync.Mutex
	got  []delivery.Receipt
	fail func(r delivery.Receipt, calls int) error // optional
	seen map[string]int
	ch   chan delivery.Receipt
}

func newSink() *sink {
	return &sink{seen: map[string]int{}, ch: make(chan delivery.Receipt, 1024)}
}

func (s *sink) handle(_ context.Context, r delivery.Receipt) error {
	s.mu.Lock()
	s.seen[r.ProviderID]++
	calls := s.seen[r.ProviderID]
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		if err := fail(r, calls); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.got = append(s.got, r)
	s.mu.Unlock()
	s.ch <- r
	return nil
}

// wait returns the next n stored receipts.
func (s *sink) wait(t testing.TB, n int) []delivery.Receipt {
	t.Helper()
	out := make([]delivery.Receipt, 0, n)
	timeout := time.After(5 * time.Second)
	for len(out) < n {
		select {
		case r := <-s.ch:
			out = append(out, r)
		case <-timeout:
			t.Fatalf("got %d receipts of %d", len(out), n)
		}
	}
	return out
}

// waitFor waits until a receipt for provider id id was stored.
func (s *sink) waitFor(t testing.TB, id string) delivery.Receipt {
	t.Helper()
	var found delivery.Receipt
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range s.got {
			if r.ProviderID == id {
				found = r
				return true
			}
		}
		return false
	}, 5*time.Second, 2*time.Millisecond, "receipt for %s", id)
	return found
}

func testLogger() *slog.Logger {
	if os.Getenv("HERALD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newClient starts a Client on addr with fast test timings.
func newClient(t testing.TB, addr string, h delivery.ReceiptHandler, mod ...func(*smpp.Config)) *smpp.Client {
	t.Helper()
	cfg := smpp.Config{
		Addr:           addr,
		SystemID:       "herald",
		Password:       "secret",
		SubmitTimeout:  2 * time.Second,
		BindTimeout:    2 * time.Second,
		BindBackoff:    messaging.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		ReceiptHandler: h,
		Logger:         testLogger(),
	}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := smpp.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// freeAddr returns a loopback address nothing listens on (for now).
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
