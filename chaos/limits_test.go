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
