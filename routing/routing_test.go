package routing_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
)

func TestMatch(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	acme, other := ids.New(), ids.New()
	routes := []routing.Route{
		{ID: 1, Prefixes: []string{"447"}, CompanyIDs: []messaging.ID{acme}, Targets: []routing.Target{{Connector: "uk-acme"}}},
		{ID: 2, Prefixes: []string{"44", "353"}, Targets: []routing.Target{{Connector: "uk"}}},
		{ID: 3, SenderIDs: []string{"BANK"}, Targets: []routing.Target{{Connector: "secure"}}},
		{ID: 4, Targets: []routing.Target{{Connector: "rest"}}},
	}
	cases := []struct {
		dest    string
		company messaging.ID
		sender  string
		want    int64
	}{
		{"447700900001", acme, "ACME", 1},
		{"447700900001", other, "ACME", 2},
		{"441632960001", acme, "ACME", 2},
		{"353861234567", other, "X", 2},
		{"33612345678", other, "BANK", 3},
		{"33612345678", other, "SHOP", 4},
	}
	for _, c := range cases {
		r := routing.Match(routes, c.dest, c.company, c.sender)
		require.NotNil(t, r, "%+v", c)
		require.Equal(t, c.want, r.ID, "%+v", c)
	}
	require.Nil(t, routing.Match(routes[:3], "33612345678", other, "SHOP"), "no route: none")
}

func TestPick(t *testing.T) {
	down := map[string]bool{}
	healthy := func(n string) bool { return !down[n] }
	failover := &routing.Route{Strategy: routing.Failover, Targets: []routing.Target{{Connector: "a", Weight: 1}, {Connector: "b", Weight: 1}}}
	rr := &routing.Route{Strategy: routing.RoundRobin, Targets: []routing.Target{{Connector: "a", Weight: 1}, {Connector: "b", Weight: 1}, {Connector: "c", Weight: 1}}}
	weighted := &routing.Route{Strategy: routing.Weighted, Targets: []routing.Target{{Connector: "a", Weight: 3}, {Connector: "b", Weight: 1}}}

	pick := func(r *routing.Route, turn uint64) string {
		n, ok := routing.Pick(r, healthy, turn)
		require.True(t, ok)
		return n
	}
	require.Equal(t, "a", pick(failover, 7))
	counts := map[string]int{}
	for turn := range uint64(300) {
		counts[pick(rr, turn)]++
	}
	require.Equal(t, map[string]int{"a": 100, "b": 100, "c": 100}, counts)
	counts = map[string]int{}
	for turn := range uint64(400) {
		counts[pick(weighted, turn)]++
	}
	require.Equal(t, map[string]int{"a": 300, "b": 100}, counts)

	down["a"] = true
	require.Equal(t, "b", pick(failover, 0), "failover moves to the next healthy one")
	counts = map[string]int{}
	for turn := range uint64(100) {
		counts[pick(rr, turn)]++
	}
	require.Equal(t, map[string]int{"b": 50, "c": 50}, counts, "a connector down is skipped")
	require.Equal(t, "b", pick(weighted, 0))
	down["b"], down["c"] = true, true
	name, ok := routing.Pick(failover, healthy, 0)
	require.False(t, ok)
	require.Equal(t, "a", name, "all down: failover still names the first")
	_, ok = routing.Pick(rr, healthy, 0)
	require.False(t, ok)
}

func TestConnectorCheck(t *testing.T) {
	c := routing.Connector{Name: "eu-1", Addr: "smsc:2775"}
	require.NoError(t, c.Check())
	require.Equal(t, routing.BindTransceiver, c.BindType)
	require.Equal(t, 1, c.Binds)
	require.Equal(t, 100, c.Window)
	require.Equal(t, routing.IDAsSent, c.SubmitIDFormat)
	for _, bad := range []routing.Connector{
		{Name: "-eu", Addr: "a:1"}, {Name: "EU", Addr: "a:1"}, {Name: "eu", Addr: "a"}, {Name: "eu", Addr: "a:1", Binds: 33},
		{Name: "eu", Addr: "a:1", Password: "123456789"}, {Name: "eu", Addr: "a:1", MaxPerSecond: -1},
		{Name: "eu", Addr: "a:1", SubmitIDFormat: "octal"}, {Name: "eu", Addr: "a:1", CACert: "x"},
	} {
		require.Error(t, bad.Check(), "%+v", bad)
	}
	r := routing.Route{Targets: []routing.Target{{Connector: "eu-1"}}}
	require.NoError(t, r.Check())
	require.Equal(t, routing.Failover, r.Strategy)
	require.Equal(t, 1, r.Targets[0].Weight)
	for _, bad := range []routing.Route{{}, {Prefixes: []string{"4a"}, Targets: r.Targets}, {Strategy: "x", Targets: r.Targets},
		{Targets: []routing.Target{{Connector: "a"}, {Connector: "a"}}}, {Targets: []routing.Target{{Connector: "a", Weight: -2}}}} {
		require.Error(t, bad.Check(), "%+v", bad)
	}
}
