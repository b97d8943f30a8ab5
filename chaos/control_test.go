package chaos_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Sizes of the campaign control scenario: a capped submit rate keeps the
// campaign going for a few seconds, so that pause and cancel land in the
// middle of it.
const (
	controlMessages = 10000
	controlRate     = "2000"
)

// TestPauseAndCancelAcrossProcesses runs two herald processes on one
// Postgres database, both sending one bulk campaign, and pauses, resumes
// and cancels it through one process while the other sends too: after a
// pause, submits stop once the sends in flight are answered; after the
// cancel, every message the SMSC never got is Failed CANCELLED, none that
// it got is, and the capacity is released. Nothing is lost and nothing
// sent twice.
func TestPauseAndCancelAcrossProcesses(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	log := newSubmitLog()
	sm := startSMSC(t, log, "", "127.0.0.1", 0)
	env := heraldEnv("HERALD_DATABASE_URL="+stores[1].url(t), "HERALD_SMPP_ADDR="+sm.addr(), "HERALD_SMPP_MAX_RATE="+controlRate)
	a := startHerald(t, bin, freeAddr(t), env)
	b := startHerald(t, bin, freeAddr(t), env)
	c := newClient(t, a.base(), newAnswers())
	co := c.provision("Acme")
	ph := phones(3, controlMessages)
	id := c.smsCampaign(co, ph, "control")
	c.start(id)

	// Pause through the other process a third of the way in.
	log.waitDistinct(t, controlMessages/3, 2*time.Minute)
	c.use(b.base())
	c.api("POST", "/campaigns/"+id+"/pause", "", 200, nil)
	atPause := log.total()
	stable := waitStable(t, log, 2*time.Second, 30*time.Second)
	t.Logf("paused at %d submits; %d more were in flight", atPause, stable-atPause)
	time.Sleep(time.Second)
	require.Equal(t, stable, log.total(), "nothing is submitted while paused")
	got, _ := c.campaign(id)
	require.Equal(t, "Paused", got.Status)

	// Resume through the first, cancel through the second two thirds in.
	c.use(a.base())
	c.api("POST", "/campaigns/"+id+"/resume", "", 200, nil)
	log.waitDistinct(t, 2*controlMessages/3, 2*time.Minute)
	c.use(b.base())
	c.api("POST", "/campaigns/"+id+"/cancel", "", 200, nil)
	atCancel := log.total()
	final := waitStable(t, log, 2*time.Second, 30*time.Second)
	t.Logf("cancelled at %d submits; %d more were in flight", atCancel, final-atCancel)

	got = c.waitCampaign(id, time.Minute, func(cj campaignJSON) bool { return cj.PendingCount == 0 })
	require.Equal(t, "Completed", got.Status)
	msgs := c.messagesOf("control")
	require.Len(t, msgs, controlMessages)
	missing := map[string]bool{}
	for _, p := range log.missing(ph) {
		missing[p] = true
	}
	cancelled := 0
	for _, m := range msgs {
		if missing[m.PhoneNumber] {
			require.Equal(t, "Failed", m.Status, "never submitted: %s", m.PhoneNumber)
			require.Equal(t, "CANCELLED", deref(m.Details), m.PhoneNumber)
			cancelled++
			continue
		}
		require.NotEqual(t, "CANCELLED", deref(m.Details), "submitted, yet cancelled: %s", m.PhoneNumber)
	}
	require.Positive(t, cancelled, "the cancel came before the end")
	all, _ := log.duplicates()
	require.Zero(t, all, "nothing was submitted twice")
	require.Equal(t, controlMessages, cancelled+log.distinct())
	t.Logf("%d submitted, %d cancelled before reaching the SMSC", log.distinct(), cancelled)
	a.stop(30 * time.Second)
	b.stop(30 * time.Second)
}

// waitStable waits until the SMSC accepted no submit for quiet, and
// returns the total then.
func waitStable(t *testing.T, log *submitLog, quiet, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last, since := log.total(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if n := log.total(); n != last {
			last, since = n, time.Now()
			continue
		}
		if time.Since(since) >= quiet {
			return last
		}
	}
	t.Fatalf("submits did not stop within %s", timeout)
	return 0
}
