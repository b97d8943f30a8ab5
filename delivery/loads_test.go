package delivery

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// TestConnLoadsKeepFullConnectorsLinks: an SMS past its connector's budget
// is not counted and its campaign gets no quota while the connector is
// full, however long that lasts; once the connector has room, the link
// ages out as before.
func TestConnLoadsKeepFullConnectorsLinks(t *testing.T) {
	var c connLoads
	now := time.Unix(1_700_000_000, 0)
	first, second := messaging.ID{1}, messaging.ID{2}
	for i := range 2 {
		if !c.take(first, "capped", 2, now) {
			t.Fatalf("SMS %d refused within the budget", i)
		}
	}
	if c.take(second, "capped", 2, now) {
		t.Fatal("an SMS past the budget was counted")
	}
	// Another SMS of the second campaign through an uncapped connector
	// leaves it linked to the full one.
	if !c.take(second, "open", 0, now) {
		t.Fatal("an SMS of an uncapped connector was refused")
	}
	later := now.Add(10 * linkTTL)
	if q := c.quotas(later); len(q) != 2 || q[first] != 0 || q[second] != 0 {
		t.Fatalf("quotas of a full connector's campaigns past the link's age: %v, want both 0", q)
	}
	c.remove("capped")
	if q := c.quotas(later); q != nil {
		t.Fatalf("quotas once the connector has room and the links aged: %v, want none", q)
	}
}
