package chaos_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConnectorKilled runs herald serve with two SMPP connectors set up
// through the admin API, each to its own SMSC process (which both hand
// out the same decimal ids), and a failover route; the first SMSC gets
// SIGKILL mid-campaign. Every message must reach one of the SMSCs, new
// sends must move to the second at once, and a number is submitted to
// both only when its send was in flight on the killed one (counted).
func TestConnectorKilled(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { testConnectorKilled(t, bin, st) })
	}
}

func testConnectorKilled(t *testing.T, bin *binary, st store) {
	const n = 4000
	la, lb := newSubmitLog(), newSubmitLog()
	a := startSMSC(t, la, "", "127.0.0.1", 0)
	b := startSMSC(t, lb, "", "127.0.0.1", 0)
	h := startHerald(t, bin, freeAddr(t), heraldEnv("HERALD_DATABASE_URL="+st.url(t)))
	c := newClient(t, h.base(), newAnswers())
	co := c.provision("Acme")
	for name, sm := range map[string]*smsc{"a": a, "b": b} {
		c.admin("POST", "/smpp-connectors", fmt.Sprintf(`{"name":%q,"addr":%q,"systemId":"herald","binds":2,"window":50,"maxPerSecond":1000}`,
			name, sm.addr()), http.StatusCreated, nil)
	}
	c.admin("POST", "/routes", `{"position":1,"strategy":"failover","connectors":[{"name":"a"},{"name":"b"}]}`, http.StatusCreated, nil)
	waitHealthy(t, c, "a")
	waitHealthy(t, c, "b")

	ph := phones(4, n)
	id := c.smsCampaign(co, ph, "connector-killed")
	c.start(id)
	la.waitDistinct(t, n/3, 2*time.Minute)
	a.kill()
	killed := time.Now()
	killedAt := la.total()
	// The sends waiting in the killed connector give up at once and go
	// through the other (a bound that a loaded machine cannot make flaky).
	lb.waitDistinct(t, 1, 5*time.Second)
	moved := time.Since(killed)
	c.completed(id, 3*time.Minute)

	missing := 0
	both := 0
	for _, p := range ph {
		inA, inB := la.count[p] > 0, lb.count[p] > 0
		switch {
		case !inA && !inB:
			missing++
		case inA && inB:
			both++
		}
	}
	require.Zero(t, missing, "every message reached an SMSC")
	require.Positive(t, lb.distinct(), "the rest went through the second connector")
	dupA, _ := la.duplicates()
	dupB, _ := lb.duplicates()
	require.Zero(t, dupA+dupB, "no SMSC got a number twice")
	require.LessOrEqual(t, both, 2*50, "a number reaches both only when it was in flight on the killed one (two binds of 50)")
	msgs := c.messagesOf("connector-killed")
	require.Len(t, msgs, n)
	t.Logf("%s: %d submitted to a before its kill, %d to b, the first %s after the kill; %d numbers reached both (in flight at the kill)",
		st.name, killedAt, lb.distinct(), moved.Round(time.Millisecond), both)
	h.stop(30 * time.Second)
}

// waitHealthy waits until the admin API shows connector name healthy.
func waitHealthy(t *testing.T, c *client, name string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		status, _, body, err := c.do("GET", "/admin/v1/smpp-connectors/"+name, map[string]string{"Authorization": "Bearer " + adminToken}, "")
		if err != nil || status != http.StatusOK {
			continue
		}
		var out struct {
			State *struct{ Healthy bool }
		}
		if json.Unmarshal(body, &out) == nil && out.State != nil && out.State.Healthy {
			return
		}
	}
	t.Fatalf("connector %s did not come up", name)
}
