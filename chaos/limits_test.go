package chaos_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Sizes of the connector limit scenario.
const (
	limitRate     = 500
	limitMessages = 6000
)

// TestConnectorRateAcrossProcesses runs one, then three herald serve
// processes on one Postgres database sending through one connector capped
// at 500 submits/s (set up through the admin API) to herald simulate smsc,
// which counts the submits it accepts in each second: the cap must hold
// for the processes together (within 5 %), each process running its share.
func TestConnectorRateAcrossProcesses(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	for _, procs := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d processes", procs), func(t *testing.T) { testConnectorRate(t, bin, procs) })
	}
}

// simSecond is a second of herald simulate smsc's GET /rate.
type simSecond struct {
	Start     time.Time
	Accepted  int
	Throttled int
}

func testConnectorRate(t *testing.T, bin *binary, procs int) {
	control := freeAddr(t)
	smscAddr := freeAddr(t)
	cmd := exec.Command(bin.path, "simulate", "smsc", "-addr", smscAddr, "-control", control)
	sim, _ := startProc(t, "herald simulate smsc", cmd, nil, regexp.MustCompile(`SMSC simulator listening on`))
	defer sim.stop(10 * time.Second)

	env := heraldEnv("HERALD_DATABASE_URL=" + stores[1].url(t))
	var hs []*heraldProc
	for range procs {
		hs = append(hs, startHerald(t, bin, freeAddr(t), env))
	}
	c := newClient(t, hs[0].base(), newAnswers())
	co := c.provision("Acme")
	c.admin("POST", "/smpp-connectors", fmt.Sprintf(`{"name":"capped","addr":%q,"systemId":"herald","binds":3,"window":50,"maxPerSecond":%d}`,
		smscAddr, limitRate), http.StatusCreated, nil)
	c.admin("POST", "/routes", `{"position":1,"connectors":[{"name":"capped"}]}`, http.StatusCreated, nil)
	for _, h := range hs {
		c.use(h.base())
		waitHealthy(t, c, "capped")
	}
	c.use(hs[0].base())
	// Every process counts the others in within three reloads (6 s).
	time.Sleep(7 * time.Second)

	id := c.smsCampaign(co, phones(5, limitMessages), "rate")
	started := time.Now()
	c.start(id)
	c.completed(id, 3*time.Minute)
	took := time.Since(started)

	resp, err := http.Get("http://" + control + "/rate")
	require.NoError(t, err)
	var seconds []simSecond
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&seconds))
	resp.Body.Close()
	var full []int // whole seconds of the campaign, the first and the last left out
	for i, s := range seconds {
		if i > 0 && i < len(seconds)-1 {
			full = append(full, s.Accepted)
		}
	}
	require.GreaterOrEqual(t, len(full), 5, "the campaign lasts long enough to measure: %v", seconds)
	peak := slices.Max(full)
	sum := 0
	for _, n := range full {
		sum += n
	}
	mean := float64(sum) / float64(len(full))
	t.Logf("%d process(es): %d SMS in %s; accepted per whole second: %v (mean %.0f, peak %d, cap %d)",
		procs, limitMessages, took.Round(time.Millisecond), full, mean, peak, limitRate)
	require.LessOrEqual(t, peak, limitRate*105/100, "the cap holds for the processes together, within 5 %%")
	require.GreaterOrEqual(t, mean, float64(limitRate)*0.8, "and the processes use it")
	for _, h := range hs {
		h.stop(30 * time.Second)
	}
}

// Sizes of the binds scenario: the simulator's limit on each session, and
// the SMS each run sends for each bind (several whole seconds at that rate).
const (
	bindRate          = 200
	bindsMessagesEach = 1500
)

// TestThroughputGrowsWithBinds sends a bulk campaign through one herald
// serve (SQLite) and a connector of 1, 2, then 4 binds, set up through the
// admin API, to herald simulate smsc limiting each session to 200
// submits/s (beyond, ESME_RTHROTTLED), as SMSCs do per bind. Throttling
// adapts per session, so what the simulator accepts a second must grow
// with the binds: each doubling by half at least. Nothing fails but the
// three numbers the simulator rejects by design, and nothing is lost.
func TestThroughputGrowsWithBinds(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	rates := map[int]float64{}
	for _, binds := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d binds", binds), func(t *testing.T) { rates[binds] = throughputWithBinds(t, bin, binds) })
	}
	t.Logf("accepted per second: 1 bind %.0f, 2 binds %.0f (%.2f x), 4 binds %.0f (%.2f x of 2)",
		rates[1], rates[2], rates[2]/rates[1], rates[4], rates[4]/rates[2])
	require.Greater(t, rates[2], 1.5*rates[1], "two binds carry more than one")
	require.Greater(t, rates[4], 1.5*rates[2], "four binds carry more than two")
}

// throughputWithBinds runs one campaign through a connector of binds
// sessions and returns the simulator's mean accepted submits per whole
// second of it (the first and the last left out).
func throughputWithBinds(t *testing.T, bin *binary, binds int) float64 {
	control := freeAddr(t)
	smscAddr := freeAddr(t)
	cmd := exec.Command(bin.path, "simulate", "smsc", "-addr", smscAddr, "-control", control, "-bind-rate", fmt.Sprint(bindRate))
	sim, _ := startProc(t, "herald simulate smsc", cmd, nil, regexp.MustCompile(`SMSC simulator listening on`))
	defer sim.stop(10 * time.Second)

	h := startHerald(t, bin, freeAddr(t), heraldEnv("HERALD_DATABASE_URL="+stores[0].url(t)))
	defer h.stop(30 * time.Second)
	c := newClient(t, h.base(), newAnswers())
	co := c.provision("Acme")
	c.admin("POST", "/smpp-connectors", fmt.Sprintf(`{"name":"bound","addr":%q,"systemId":"herald","binds":%d,"window":50}`, smscAddr, binds),
		http.StatusCreated, nil)
	c.admin("POST", "/routes", `{"position":1,"connectors":[{"name":"bound"}]}`, http.StatusCreated, nil)
	waitBindsUp(t, c, "bound", binds)

	n := bindsMessagesEach * binds
	id := c.smsCampaign(co, phones(6, n), "binds")
	started := time.Now()
	c.start(id)
	cj := c.completed(id, 3*time.Minute)
	took := time.Since(started)
	require.Equal(t, n, cj.TotalMessages)
	require.Equal(t, 3, cj.FailedCount, "only the numbers the simulator rejects by design fail")
	require.Equal(t, n-3, cj.DeliveredCount)

	resp, err := http.Get("http://" + control + "/rate")
	require.NoError(t, err)
	var seconds []simSecond
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&seconds))
	resp.Body.Close()
	var full []int
	throttled := 0
	for i, s := range seconds {
		throttled += s.Throttled
		if i > 0 && i < len(seconds)-1 {
			full = append(full, s.Accepted)
		}
	}
	require.GreaterOrEqual(t, len(full), 3, "the campaign lasts long enough to measure: %v", seconds)
	sum := 0
	for _, a := range full {
		sum += a
	}
	mean := float64(sum) / float64(len(full))
	t.Logf("%d bind(s): %d SMS in %s; accepted per whole second: %v (mean %.0f; %d throttled answers; the SMSC takes %d a bind)",
		binds, n, took.Round(time.Millisecond), full, mean, throttled, bindRate)
	return mean
}

// waitBindsUp waits until connector name has binds sessions bound.
func waitBindsUp(t *testing.T, c *client, name string, binds int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		status, _, body, err := c.do("GET", "/admin/v1/smpp-connectors/"+name, map[string]string{"Authorization": "Bearer " + adminToken}, "")
		if err != nil || status != http.StatusOK {
			continue
		}
		var out struct {
			State *struct{ BindsUp int }
		}
		if json.Unmarshal(body, &out) == nil && out.State != nil && out.State.BindsUp == binds {
			return
		}
	}
	t.Fatalf("connector %s did not get %d binds up", name, binds)
}
