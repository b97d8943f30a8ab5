package storetest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
)

// testRouting: connectors and routes round-trip whole, a connector name
// is unique, connectors list by name and routes by position then id,
// updates replace and keep the creation time, deletes remove, and a
// missing one is NotFound.
func testRouting(f *fixture) {
	t := f.t
	ton := 5
	a := routing.Connector{Name: "acme-eu", Addr: "smsc.example.com:2775", SystemID: "herald", Password: "secret", SystemType: "VMA",
		BindType: routing.BindTransceiver, Binds: 4, Window: 50, MaxPerSecond: 500, TLS: true,
		CACert: "-----BEGIN CERTIFICATE-----\nMII...\n-----END CERTIFICATE-----\n", SourceTON: &ton,
		SubmitIDFormat: routing.IDHex, ReceiptIDFormat: routing.IDDecimal, EnquireLink: 15 * time.Second,
		CreatedAt: at(1), UpdatedAt: at(1)}
	b := routing.Connector{Name: "backup", Addr: "10.0.0.2:2775", BindType: routing.BindTransmitter, Binds: 1, Window: 100,
		SubmitIDFormat: routing.IDAsSent, ReceiptIDFormat: routing.IDAsSent, CreatedAt: at(2), UpdatedAt: at(2)}
	require.NoError(t, f.s.CreateConnector(f.ctx, &b))
	require.NoError(t, f.s.CreateConnector(f.ctx, &a))
	dup := b
	err := f.s.CreateConnector(f.ctx, &dup)
	requireCode(t, err, messaging.Invalid)
	got, err := f.s.GetConnector(f.ctx, "acme-eu")
	require.NoError(t, err)
	requireSame(t, a, got)
	list, err := f.s.ListConnectors(f.ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []string{"acme-eu", "backup"}, []string{list[0].Name, list[1].Name})

	a.Binds, a.Password, a.SourceTON, a.UpdatedAt = 8, "other", nil, at(3)
	require.NoError(t, f.s.UpdateConnector(f.ctx, &a))
	got, err = f.s.GetConnector(f.ctx, "acme-eu")
	require.NoError(t, err)
	requireSame(t, a, got)
	missing := routing.Connector{Name: "nope", UpdatedAt: at(3)}
	requireNotFound(t, f.s.UpdateConnector(f.ctx, &missing))
	_, err = f.s.GetConnector(f.ctx, "nope")
	requireNotFound(t, err)

	co := f.company("A")
	r1 := routing.Route{Position: 20, Prefixes: []string{"44", "33"}, CompanyIDs: []messaging.ID{co.ID}, SenderIDs: []string{"ACME"},
		Strategy: routing.Weighted, Targets: []routing.Target{{Connector: "acme-eu", Weight: 3}, {Connector: "backup", Weight: 1}},
		CreatedAt: at(4), UpdatedAt: at(4)}
	r2 := routing.Route{Position: 10, Strategy: routing.Failover, Targets: []routing.Target{{Connector: "backup", Weight: 1}}, CreatedAt: at(5), UpdatedAt: at(5)}
	r3 := routing.Route{Position: 20, Strategy: routing.RoundRobin, Targets: []routing.Target{{Connector: "acme-eu", Weight: 1}}, CreatedAt: at(6), UpdatedAt: at(6)}
	for _, r := range []*routing.Route{&r1, &r2, &r3} {
		require.NoError(t, f.s.CreateRoute(f.ctx, r))
		require.NotZero(t, r.ID)
	}
	routes, err := f.s.ListRoutes(f.ctx)
	require.NoError(t, err)
	require.Len(t, routes, 3)
	requireSame(t, r2, routes[0])
	requireSame(t, r1, routes[1])
	requireSame(t, r3, routes[2])
	r2.Position, r2.UpdatedAt = 30, at(7)
	require.NoError(t, f.s.UpdateRoute(f.ctx, &r2))
	routes, err = f.s.ListRoutes(f.ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{r1.ID, r3.ID, r2.ID}, []int64{routes[0].ID, routes[1].ID, routes[2].ID})
	requireSame(t, r2, routes[2])
	require.NoError(t, f.s.DeleteRoute(f.ctx, r1.ID))
	requireNotFound(t, f.s.DeleteRoute(f.ctx, r1.ID))
	gone := routing.Route{ID: r1.ID, UpdatedAt: at(8)}
	requireNotFound(t, f.s.UpdateRoute(f.ctx, &gone))
	require.NoError(t, f.s.DeleteConnector(f.ctx, "acme-eu"))
	requireNotFound(t, f.s.DeleteConnector(f.ctx, "acme-eu"))
}

// testMessageRoute: the connector an SMS went through is kept with it.
func testMessageRoute(f *fixture) {
	t := f.t
	a := f.company("A")
	_, msgs := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignInProgress)
	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(600), 2), 2)
	f.apply(delivery.StatusUpdate{MessageID: msgs[0].ID, Status: messaging.StatusSent, At: at(2), ProviderMessageID: "eu:1", PartIDs: []string{"eu:1"}, Route: "eu"},
		delivery.StatusUpdate{MessageID: msgs[1].ID, Status: messaging.StatusSent, At: at(2), ProviderMessageID: "9", PartIDs: []string{"9"}})
	require.Equal(t, "eu", f.getMessage(a.ID, msgs[0].ID).Route)
	require.Empty(t, f.getMessage(a.ID, msgs[1].ID).Route)
	f.apply(delivery.StatusUpdate{MessageID: msgs[0].ID, Status: messaging.StatusDelivered, At: at(3)})
	require.Equal(t, "eu", f.getMessage(a.ID, msgs[0].ID).Route, "kept by later moves")
}

// testShareConnectors: each process's heartbeat counts it in the share of
// the connectors it runs, until ttl passes without one; a connector a
// process stops running is no longer counted for it.
func testShareConnectors(f *fixture) {
	t := f.t
	share := func(instance string, names []string, now int) map[string]int {
		got, err := f.s.ShareConnectors(f.ctx, instance, names, at(now), 6*time.Second)
		require.NoError(t, err)
		return got
	}
	require.Equal(t, map[string]int{"eu": 1}, share("p1", []string{"eu"}, 0))
	require.Equal(t, map[string]int{"eu": 2, "us": 1}, share("p2", []string{"eu", "us"}, 1))
	require.Equal(t, map[string]int{"eu": 3}, share("p3", []string{"eu"}, 2))
	require.Equal(t, map[string]int{"eu": 3}, share("p1", []string{"eu"}, 5))
	require.Equal(t, map[string]int{"eu": 1}, share("p1", []string{"eu"}, 8), "p2 and p3 silent for 6 s: counted out")
	require.Equal(t, map[string]int{"us": 1}, share("p3", []string{"us"}, 9), "p3 left eu")
	require.Equal(t, map[string]int{"eu": 1}, share("p1", []string{"eu"}, 10))
	require.Equal(t, map[string]int{}, share("p4", nil, 11))
}
