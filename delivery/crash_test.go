package delivery_test

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

// Environment of the dispatcher process TestCrashRecovery starts.
const (
	crashEnvDB   = "HERALD_CRASH_DB"   // the SQLite database URL
	crashEnvSMSC = "HERALD_CRASH_SMSC" // the simulator's address
	crashEnvRate = "HERALD_CRASH_RATE" // submits per second
)

// crashConcurrency is the SMS concurrency of the dispatcher processes: the
// most SMS one crash may have submitted without recording them.
const crashConcurrency = 64

// TestCrashChild is the dispatcher process of TestCrashRecovery: it runs a
// Dispatcher on the SQLite file against the simulator until it is killed,
// or stopped with SIGTERM. Without its environment it does nothing.
func TestCrashChild(t *testing.T) {
	dbURL := os.Getenv(crashEnvDB)
	if dbURL == "" {
		t.Skip("run by TestCrashRecovery")
	}
	rate, err := strconv.ParseFloat(os.Getenv(crashEnvRate), 64)
	require.NoError(t, err)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	s, err := sqlstore.Open(ctx, dbURL, sqlstore.Config{})
	require.NoError(t, err)
	defer s.Close()
	// The SMSC delivers the receipts of the killed process's submits as
	// soon as this one binds, before the dispatcher exists: they wait.
	var d *delivery.Dispatcher
	dReady := make(chan struct{})
	client, err := smpp.New(smpp.Config{Addr: os.Getenv(crashEnvSMSC), SystemID: "herald", Password: "secret", MaxPerSecond: rate,
		ReceiptHandler: func(ctx context.Context, r delivery.Receipt) error {
			select {
			case <-dReady:
				return d.HandleReceipt(ctx, r)
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	require.NoError(t, err)
	defer client.Close(context.Background())
	d, err = delivery.New(delivery.Config{
		Store: s, SMS: client, SMSConcurrency: crashConcurrency, BatchSize: 32,
		SendTimeout: time.Second, Lease: 2 * time.Second, RecoverInterval: 100 * time.Millisecond,
		PollInterval: 10 * time.Millisecond, CompleteInterval: 20 * time.Millisecond, Logger: testLogger(),
	})
	require.NoError(t, err)
	close(dReady)
	require.NoError(t, d.Run(ctx))
}

// TestCrashRecovery runs a dispatcher in a child process on a SQLite file
// against the simulator over TCP, kills it with SIGKILL mid-campaign, and
// runs a second one: every message ends as the simulator's outcome by
// number says, none is left Pending or Sending, the campaign completes,
// and no message was submitted more than twice, at most crashConcurrency
// of them twice (the bound of the package documentation).
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dbURL := "sqlite://" + filepath.Join(t.TempDir(), "herald.db")
	s := openStore(t, dbURL)
	w := newWorld(t, s)
	sim := startSMSC(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	const n = 1500
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(n, 0)})

	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnvDB+"="+dbURL, crashEnvSMSC+"="+sim.Addr(), crashEnvRate+"=2000")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}

	first := start()
	w.waitCampaign(c.ID, "a third of the campaign settled", func(c messaging.Campaign) bool {
		return c.Counts.Delivered+c.Counts.Failed >= n/3
	})
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	mid := w.get(c.ID)
	t.Logf("killed with %+v", mid.Counts)
	require.Less(t, mid.Counts.Delivered+mid.Counts.Failed, n, "the kill came mid-campaign")

	second := start()
	got := w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool {
		return c.Status == messaging.CampaignCompleted && settled(c)
	})
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "the second dispatcher drains and exits cleanly")

	require.Equal(t, messaging.StatusCounts{Delivered: n - 3, Failed: 3}, got.Counts)
	for i, m := range msgs {
		got := w.message(m.ID)
		if i >= 1 && i <= 3 {
			require.Equal(t, messaging.StatusFailed, got.Status, "message %d", i)
			require.Equal(t, []string{"UNDELIVERED", "EXPIRED", "REJECTED"}[i-1], got.Details)
		} else {
			require.Equal(t, messaging.StatusDelivered, got.Status, "message %d", i)
		}
	}
	submits := map[string]int{}
	for _, p := range sim.Parts() {
		if p.MessageID != "" {
			submits[p.To]++
		}
	}
	twice := 0
	for i, m := range msgs {
		k := submits[m.Phone]
		require.True(t, k == 1 || k == 2, "message %d submitted %d times", i, k)
		if k == 2 {
			twice++
		}
	}
	t.Logf("%d of %d messages submitted twice", twice, n)
	require.LessOrEqual(t, twice, crashConcurrency)
	pending, err := s.PendingCount(t.Context(), w.co.ID)
	require.NoError(t, err)
	require.Zero(t, pending)
}
