package delivery_test

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

// Environment of the dispatcher process TestCrashRecovery starts.
const (
	crashEnvDB   = "HERALD_CRASH_DB"   // the database URL (sqlite:// or postgres://)
	crashEnvSMSC = "HERALD_CRASH_SMSC" // the simulator's address
	crashEnvRate = "HERALD_CRASH_RATE" // submits per second
	// the dispatcher's Instance and ClaimLease
	crashEnvInstance   = "HERALD_CRASH_INSTANCE"
	crashEnvClaimLease = "HERALD_CRASH_CLAIM_LEASE"
)

// crashConcurrency is the SMS concurrency of the dispatcher processes: the
// most SMS one crash may have submitted without recording them.
const crashConcurrency = 64

// crashQuiet is how long TestCrashRecovery waits, once the simulator
// stopped answering, without a new submit before it kills the dispatcher:
// by then every place the lane would fill holds an unanswered submit (it
// claims again only when half a batch of places is free, so it may stop
// short of crashConcurrency). The kill then comes some tens of
// milliseconds after the simulator stopped answering, far within the send
// timeout (1s from the claim) after which the dispatcher would give those
// sends up and put their messages back to Pending itself.
const crashQuiet = 50 * time.Millisecond

// TestCrashChild is the dispatcher process of TestCrashRecovery: it runs a
// Dispatcher on the database against the simulator until it is killed, or
// stopped with SIGTERM. Without its environment it does nothing.
func TestCrashChild(t *testing.T) {
	dbURL := os.Getenv(crashEnvDB)
	if dbURL == "" {
		t.Skip("run by TestCrashRecovery")
	}
	rate, err := strconv.ParseFloat(os.Getenv(crashEnvRate), 64)
	require.NoError(t, err)
	claimLease, err := time.ParseDuration(os.Getenv(crashEnvClaimLease))
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
		Instance: os.Getenv(crashEnvInstance), ClaimLease: claimLease,
		SendTimeout: time.Second, RecoverInterval: 100 * time.Millisecond,
		PollInterval: 10 * time.Millisecond, CompleteInterval: 20 * time.Millisecond, Logger: testLogger(),
	})
	require.NoError(t, err)
	close(dReady)
	require.NoError(t, d.Run(ctx))
}

// TestCrashRecovery runs a dispatcher in a child process against the
// simulator over TCP, on SQLite and on Postgres, stops the simulator's
// answers mid-campaign, kills the dispatcher with SIGKILL, and runs a
// second one. At the kill, the database holds messages Sending (claimed
// by the dead process, their results not recorded), at most
// crashConcurrency of them, and the SMSC has some of them. After the
// second one ran, every message ends as the simulator's outcome by number
// says, the Sending ones included: recovery put them back to Pending and
// the second dispatcher claimed them again. Neither the 5-minute Lease
// nor a claim lease the test would wait out brings them back: in mode
// "restart" the second process has the first one's Instance and takes
// back its claims when it starts (its claim lease is an hour); in mode
// "takeover" it has an Instance of its own and takes the claims of the
// first once its heartbeat is a second old. None is
// left Pending or Sending, the campaign completes, and no message was
// submitted more than twice; only messages Sending at the kill were, so
// at most crashConcurrency of them (the bound of the package
// documentation), and every one the SMSC had left unanswered was.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, db := range databases {
		for _, mode := range []string{"restart", "takeover"} {
			t.Run(db.name+"/"+mode, func(t *testing.T) { testCrashRecovery(t, db.url(t), mode) })
		}
	}
}

func testCrashRecovery(t *testing.T, dbURL, mode string) {
	s := openStore(t, dbURL)
	w := newWorld(t, s)
	sim := startSMSC(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	const n = 1500
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(n, 0)})

	start := func(instance string) *exec.Cmd {
		claimLease := "1h"
		if mode == "takeover" {
			claimLease = "1s"
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnvDB+"="+dbURL, crashEnvSMSC+"="+sim.Addr(), crashEnvRate+"=2000",
			crashEnvInstance+"="+instance, crashEnvClaimLease+"="+claimLease,
			// A -race binary sleeps a second before it exits
			// (atexit_sleep_ms), which the test need not wait for.
			"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}

	began := time.Now()
	first := start("first")
	w.waitCampaign(c.ID, "a third of the campaign settled", func(c messaging.Campaign) bool {
		return c.Counts.Delivered+c.Counts.Failed >= n/3
	})
	// The SMSC stops answering: every submit from now on reaches it and
	// waits, its message Sending, until the kill, which comes once the
	// lane stopped submitting. A submit counted after the faults were set
	// found them (the simulator counts a submit before it reads its
	// faults), so at least one is unanswered at the kill, and as a rule
	// some 50 to crashConcurrency are: the dead process leaves about as
	// many messages submitted and not recorded as the documented bound
	// allows.
	sim.SetFaults(smscsim.Faults{RespDelay: time.Hour})
	before, frozen := sim.Stats().Submits, time.Now()
	var st smscsim.Stats
	last, changed := before, frozen
	waitFor(t, "submits left unanswered", func() bool {
		st = sim.Stats()
		if st.Submits != last {
			last, changed = st.Submits, time.Now()
		}
		return st.Submits > before && (st.InFlight >= crashConcurrency || time.Since(changed) > crashQuiet)
	})
	froze := time.Since(frozen)
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	killed := time.Since(began)
	sim.SetFaults(smscsim.Faults{})

	// What the kill left, read before any dispatcher runs again: the rows
	// themselves, by SQL of our own, and the campaign's counters.
	sending := sendingPhones(t, dbURL)
	mid := w.get(c.ID)
	t.Logf("killed after %v (%v after the SMSC stopped answering, %d submits unanswered, %d since) with %+v",
		killed.Round(time.Millisecond), froze.Round(time.Millisecond), st.InFlight, st.Submits-before, mid.Counts)
	require.NotEmpty(t, sending, "the kill left messages Sending: recovery has work to do")
	require.LessOrEqual(t, len(sending), crashConcurrency, "a lane keeps at most its concurrency claimed and not recorded")
	require.Equal(t, len(sending), mid.Counts.Sending, "the counters agree with the rows")
	require.Positive(t, mid.Counts.Pending, "the kill came mid-campaign")

	secondName := "first"
	if mode == "takeover" {
		secondName = "second"
	}
	second := start(secondName)
	got := w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool {
		return c.Status == messaging.CampaignCompleted && settled(c)
	})
	t.Logf("recovered and completed %v after the kill", (time.Since(began) - killed).Round(time.Millisecond))
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "the second dispatcher drains and exits cleanly")

	require.Equal(t, messaging.StatusCounts{Delivered: n - 3, Failed: 3}, got.Counts)
	submits := map[string]int{}
	for _, p := range sim.Parts() {
		if p.MessageID != "" {
			submits[p.To]++
		}
	}
	// Every message in one read (one by one, they take a second on SQLite
	// under -race).
	all, total, err := s.ListMessages(t.Context(), w.co.ID, messaging.MessageFilter{PageRequest: messaging.PageRequest{PageSize: n}})
	require.NoError(t, err)
	require.Equal(t, n, total)
	final := make(map[messaging.ID]messaging.Message, n)
	for _, m := range all {
		final[m.ID] = m
	}
	twice := 0
	for i, m := range msgs {
		got, ok := final[m.ID]
		require.True(t, ok, "message %d", i)
		if i >= 1 && i <= 3 {
			require.Equal(t, messaging.StatusFailed, got.Status, "message %d", i)
			require.Equal(t, []string{"UNDELIVERED", "EXPIRED", "REJECTED"}[i-1], got.Details)
		} else {
			require.Equal(t, messaging.StatusDelivered, got.Status, "message %d", i)
		}
		k := submits[m.Phone]
		if sending[m.Phone] {
			// Claimed by the dead process, taken back once its claim
			// ended and claimed by the second one: sent by it, once more
			// when the dead one had submitted it already.
			require.Equal(t, 2, got.Attempts, "message %d, Sending at the kill, claimed again after recovery", i)
			require.True(t, k == 1 || k == 2, "message %d, Sending at the kill, submitted %d times", i, k)
		} else {
			// Pending at the kill (the second process sends it) or
			// recorded by the first: claimed and submitted once. The
			// simulator answers every submit well within the send
			// timeout, so no send is retried.
			require.Equal(t, 1, got.Attempts, "message %d, not Sending at the kill", i)
			require.Equal(t, 1, k, "message %d, not Sending at the kill, submitted %d times", i, k)
		}
		if k == 2 {
			twice++
		}
	}
	t.Logf("%d messages Sending at the kill, %d of %d messages submitted twice", len(sending), twice, n)
	require.LessOrEqual(t, twice, crashConcurrency)
	// The submits the SMSC received after it stopped answering were of
	// messages Sending at the kill: each was submitted again.
	require.GreaterOrEqual(t, twice, int(st.Submits-before), "the unanswered submits were sent again")
	pending, err := s.PendingCount(t.Context(), w.co.ID)
	require.NoError(t, err)
	require.Zero(t, pending)
}

// sendingPhones returns the phones of the messages Sending in the
// database at dbURL (one campaign's, each phone its own), read from the
// messages table on a connection of its own rather than through the store
// under test or its counters.
func sendingPhones(t *testing.T, dbURL string) map[string]bool {
	t.Helper()
	var db *sql.DB
	if path, ok := strings.CutPrefix(dbURL, "sqlite://"); ok {
		var err error
		db, err = sql.Open("sqlite", path) // registered by sqlstore
		require.NoError(t, err)
	} else {
		// The URL's search_path selects the test's schema.
		db = sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dbURL)))
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), "SELECT phone FROM messages WHERE status = 'Sending'")
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var phone string
		require.NoError(t, rows.Scan(&phone))
		out[phone] = true
	}
	require.NoError(t, rows.Err())
	return out
}
