package chaos_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// store is a database herald can run on.
type store struct {
	name string
	url  func(t *testing.T) string // a new, empty database
}

// stores are the two databases every scenario runs on.
var stores = []store{
	{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "herald.db") }},
	{"postgres", func(t *testing.T) string { return postgres(t).database(t) }},
}

// Sizes of the herald kill scenario. The submit rate is capped
// (HERALD_SMPP_MAX_RATE, which keeps the dispatcher's 512 SMS in flight)
// so that the kills fall apart from each other: each restarted process
// sends for at least killGap before the next kill, and the duplicates
// after a kill are those of that kill.
const (
	killMessages = 10000
	kills        = 3
	killRate     = "2000"
	killGap      = time.Second
)

// TestHeraldKilled kills herald with SIGKILL at random points of a bulk
// SMS campaign and starts it again on the same address and database each
// time, with a webhook endpoint taking every message's events in batches
// of up to 50 (none may be lost or badly signed); on Postgres, a second herald sharing the database also takes over
// the claims of one killed for good.
func TestHeraldKilled(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	bin.needClaimLease(t)
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { testHeraldKilled(t, bin, st) })
	}
	t.Run("postgres/takeover", func(t *testing.T) { testTakeover(t, bin, stores[1]) })
}

// testHeraldKilled kills and restarts herald kills times mid-campaign.
func testHeraldKilled(t *testing.T, bin *binary, st store) {
	log := newSubmitLog()
	sm := startSMSC(t, log, "", "127.0.0.1", 0)
	env := heraldEnv("HERALD_DATABASE_URL="+st.url(t), "HERALD_SMPP_ADDR="+sm.addr(), "HERALD_SMPP_MAX_RATE="+killRate,
		"HERALD_WEBHOOK_ALLOW=loopback")
	h := startHerald(t, bin, freeAddr(t), env)
	c := newClient(t, h.base(), newAnswers())
	co := c.provision("Acme")
	hooks := startHookReceiver(t)
	hooks.register(c, 50) // batches: a write's events kept in one row
	ph := phones(1, killMessages)
	id := c.smsCampaign(co, ph, "herald-kill")

	rnd := newRand(t)
	points := make([]float64, kills) // one in each of kills spans of the campaign
	for i := range points {
		points[i] = (float64(i) + 0.1 + 0.6*rnd.Float64()) / kills * 0.9
	}
	t.Logf("kills at %.2f of the campaign's numbers submitted", points)

	var restarts, resumes []time.Duration
	var lastKill time.Time
	var restarted []*heraldProc
	began := time.Now()
	c.start(id)
	for _, p := range points {
		log.waitDistinct(t, int(p*killMessages), 2*time.Minute)
		if len(restarts) > 0 {
			time.Sleep(time.Until(h.started.Add(killGap)))
		}
		log.mark("herald killed")
		killed := time.Now()
		lastKill = killed
		h.kill()
		h = h.restart(t)
		restarted = append(restarted, h)
		restarts = append(restarts, h.started.Sub(killed))
		if d, ok := firstSubmitAfter(log, h.started, 30*time.Second); ok {
			resumes = append(resumes, d)
		}
	}
	lastRestart := h.started
	c.completed(id, 3*time.Minute)
	completed := time.Now()

	o := checkSMS(t, c, bin, env, id, "herald-kill", ph, log)
	// Every message's events reached the webhook endpoint, each signed,
	// the last one its final status: no event was lost to a kill.
	eventDuplicates := hooks.check(t, c, "herald-kill", killMessages)
	// A message is submitted again only when a killed process left it
	// Sending: never more than the restarted process put back to Pending.
	reclaimed := make([]int, len(restarted))
	for i, r := range restarted {
		reclaimed[i] = r.reclaimedCount()
		require.LessOrEqual(t, o.byFault[i], reclaimed[i], "duplicates after kill %d against the messages the restart put back to Pending", i+1)
	}
	f := newFigure("1 herald kill -9 + restart", st.name, killMessages, o)
	f.Notes = append(f.Notes, fmt.Sprintf("messages left Sending, put back to Pending by each restart: %v", reclaimed),
		fmt.Sprintf("duplicates submitted after the last kill: %d of %d", log.duplicatesAfterLastMark(), o.duplicates))
	f.Times["kill to serving (max)"] = dur(slices.Max(restarts))
	if len(resumes) > 0 {
		f.Times["serving to next submit (max)"] = dur(slices.Max(resumes))
	}
	f.Times["last restart to Completed"] = dur(completed.Sub(lastRestart))
	f.Times["last kill to Completed"] = dur(completed.Sub(lastKill))
	f.Times["campaign"] = dur(completed.Sub(began))
	f.Answers = c.log.summary()
	f.Notes = append(f.Notes, fmt.Sprintf("killed at %.2f of the numbers submitted; HERALD_SMPP_MAX_RATE=%s", points, killRate))
	f.Notes = append(f.Notes, fmt.Sprintf("webhook: every message's final status reached the endpoint, signed; %d events sent more than once", eventDuplicates))
	f.Notes = append(f.Notes, duplicateNotes(t, o.byFault)...)
	record(t, f)
	h.stop(30 * time.Second)
}

// testTakeover runs two herald processes on one Postgres database and
// kills one of them for good mid-campaign: the other must take its claims
// back once they are older than the claim lease.
func testTakeover(t *testing.T, bin *binary, st store) {
	log := newSubmitLog()
	sm := startSMSC(t, log, "", "127.0.0.1", 0)
	env := heraldEnv("HERALD_DATABASE_URL="+st.url(t), "HERALD_SMPP_ADDR="+sm.addr(), "HERALD_SMPP_MAX_RATE="+killRate)
	a := startHerald(t, bin, freeAddr(t), env)
	b := startHerald(t, bin, freeAddr(t), env)
	c := newClient(t, a.base(), newAnswers())
	co := c.provision("Acme")
	ph := phones(2, killMessages)
	id := c.smsCampaign(co, ph, "takeover")

	p := 0.2 + 0.5*newRand(t).Float64()
	began := time.Now()
	c.start(id)
	log.waitDistinct(t, int(p*killMessages), 2*time.Minute)
	log.mark("herald A killed, B keeps running")
	killed := time.Now()
	a.kill()
	c.use(b.base())
	c.completed(id, 3*time.Minute)
	completed := time.Now()

	o := checkSMS(t, c, bin, env, id, "takeover", ph, log)
	require.LessOrEqual(t, o.duplicates, b.reclaimedCount(), "duplicates against the messages B put back to Pending")
	f := newFigure("1 herald kill -9, second herald takes over", st.name, killMessages, o)
	f.Notes = append(f.Notes, fmt.Sprintf("messages A left Sending, put back to Pending by B: %d", b.reclaimedCount()))
	f.Times["kill to Completed"] = dur(completed.Sub(killed))
	f.Times["campaign"] = dur(completed.Sub(began))
	f.Answers = c.log.summary()
	f.Notes = append(f.Notes, fmt.Sprintf("killed at %.2f of the numbers submitted; HERALD_CLAIM_LEASE=%s, HERALD_SMPP_MAX_RATE=%s each", p, claimLease, killRate))
	f.Notes = append(f.Notes, duplicateNotes(t, o.byFault)...)
	record(t, f)
	b.stop(30 * time.Second)
}

// firstSubmitAfter waits until the SMSC accepts a submit after since and
// returns how long after since that was; ok is false when none came within
// timeout (the campaign may have been sent entirely).
func firstSubmitAfter(log *submitLog, since time.Time, timeout time.Duration) (time.Duration, bool) {
	n := log.total()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if log.total() > n {
			return time.Since(since), true
		}
	}
	return 0, false
}

// duplicateNotes requires every fault's duplicates within the bound of
// delivery's guarantee and notes those beyond one SMPP window.
func duplicateNotes(t *testing.T, byFault []int) []string {
	t.Helper()
	var notes []string
	for i, d := range byFault {
		require.LessOrEqual(t, d, maxDuplicatesPerKill, "duplicates after fault %d", i+1)
		if d > smppWindow {
			notes = append(notes, fmt.Sprintf("fault %d: %d duplicates, more than one SMPP window (%d)", i+1, d, smppWindow))
		}
	}
	return notes
}
