package smpp_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

// sendWithdrawable sends n one-part SMS at once through c, all withdrawn by
// withdraw, and returns a function waiting for their outcomes: how many
// went through and how many were withdrawn (any other error fails t).
func sendWithdrawable(t *testing.T, c *smpp.Client, n int, withdraw <-chan struct{}) func() (sent, withdrawn int) {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var others []error
	var sent, withdrawn int
	for i := range n {
		wg.Go(func() {
			_, err := c.Send(ctx, delivery.SMS{From: "Herald", To: fmt.Sprintf("4479%08d", i), Text: "Hello", Withdraw: withdraw})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				sent++
			case errors.Is(err, delivery.ErrWithdrawn):
				withdrawn++
			default:
				others = append(others, err)
			}
		})
	}
	return func() (int, int) {
		wg.Wait()
		require.Empty(t, others)
		return sent, withdrawn
	}
}

// TestWithdrawPacedParts: SMS waiting for their turn at the Client's rate
// give it up at once when withdrawn, and none of them reaches the SMSC
// afterwards; those written before finish.
func TestWithdrawPacedParts(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) { cfg.MaxPerSecond = 10 })
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	withdraw := make(chan struct{})
	wait := sendWithdrawable(t, c, 60, withdraw)
	require.Eventually(t, func() bool { return c.Stats().Submits >= 3 }, 5*time.Second, time.Millisecond)
	close(withdraw)
	withdrawnAt := time.Now()
	sent, withdrawn := wait()
	require.Less(t, time.Since(withdrawnAt), time.Second, "the queued SMS gave up at once")
	require.Equal(t, 60, sent+withdrawn)
	require.Greater(t, withdrawn, 40, "most waited for their turn")
	time.Sleep(300 * time.Millisecond)
	require.Len(t, srv.Parts(), sent, "the SMSC got the SMS written before the withdrawal only")
	require.EqualValues(t, sent, c.Stats().Submits)

	// The turns of the withdrawn SMS were given back: one sent now waits
	// for the rate, not behind them.
	start := time.Now()
	_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447900000999", Text: "After"})
	require.NoError(t, err)
	require.Less(t, time.Since(start), time.Second)
}

// TestWithdrawWindowWaiters: SMS waiting for a window slot give it up when
// withdrawn; those whose submit_sm is on the wire finish.
func TestWithdrawWindowWaiters(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) { cfg.Window = 2; cfg.SubmitTimeout = 10 * time.Second })
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	srv.Stall(smscsim.StallSubmits)
	withdraw := make(chan struct{})
	wait := sendWithdrawable(t, c, 10, withdraw)
	require.Eventually(t, func() bool { return c.Stats().WindowInUse == 2 }, 5*time.Second, time.Millisecond)
	close(withdraw)
	time.Sleep(100 * time.Millisecond)
	srv.Resume()
	sent, withdrawn := wait()
	require.Equal(t, 2, sent, "the two on the wire finished")
	require.Equal(t, 8, withdrawn)
	require.EqualValues(t, 2, c.Stats().Submits)
}

// TestWithdrawAfterFirstPart: a long SMS whose first part is on the wire is
// not cut short by a withdrawal: every part goes.
func TestWithdrawAfterFirstPart(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	c := newClient(t, srv.Addr(), nil, func(cfg *smpp.Config) { cfg.MaxPerSecond = 5 })
	require.NoError(t, c.WaitBound(ctxTimeout(t, 5*time.Second)))
	withdraw := make(chan struct{})
	done := make(chan error, 1)
	var res delivery.SMSResult
	go func() {
		var err error
		res, err = c.Send(ctxTimeout(t, 10*time.Second), delivery.SMS{From: "Herald", To: "447900000001",
			Text: strings.Repeat("a", 400), Withdraw: withdraw})
		done <- err
	}()
	require.Eventually(t, func() bool { return c.Stats().Submits >= 1 }, 5*time.Second, time.Millisecond)
	close(withdraw)
	require.NoError(t, <-done)
	require.Len(t, res.PartIDs, 3)
}
