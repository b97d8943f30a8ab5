package smsroute_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/heraldhq/herald/transport/smsroute"
)

// sim starts an SMSC simulator on loopback.
func sim(t *testing.T) *smscsim.Server {
	t.Helper()
	srv := smscsim.New(smscsim.Config{SystemID: "herald", Password: "secret", Record: true})
	require.NoError(t, srv.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// setup stores connectors a and b (to the simulators) and the routes, and
// starts a router on them.
func setup(t *testing.T, a, b *smscsim.Server, routes ...routing.Route) (*smsroute.Router, *routing.Service) {
	return setupWith(t, a, b, nil, routes...)
}

// setupWith is setup with a receipt handler.
func setupWith(t *testing.T, a, b *smscsim.Server, receipts delivery.ReceiptHandler, routes ...routing.Route) (*smsroute.Router, *routing.Service) {
	t.Helper()
	ctx := t.Context()
	svc, err := routing.New(routing.Config{Store: memstore.New()})
	require.NoError(t, err)
	for name, srv := range map[string]*smscsim.Server{"a": a, "b": b} {
		_, err := svc.CreateConnector(ctx, routing.Connector{Name: name, Addr: srv.Addr(), SystemID: "herald", Password: "secret", Window: 10})
		require.NoError(t, err)
	}
	for _, r := range routes {
		_, err := svc.CreateRoute(ctx, r)
		require.NoError(t, err)
	}
	rt, err := smsroute.New(ctx, smsroute.Config{Source: svc, Dial: smsroute.DialSMPP(smpp.Config{BindBackoff: messaging.Backoff{Min: 50 * time.Millisecond, Max: 200 * time.Millisecond},
		SubmitTimeout: 2 * time.Second, ReceiptHandler: receipts}), Reload: 50 * time.Millisecond, Penalty: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, rt.WaitReady(wctx))
	return rt, svc
}

func send(t *testing.T, rt *smsroute.Router, to string, company messaging.ID, from string) (delivery.SMSResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	return rt.Send(ctx, delivery.SMS{MessageID: messaging.NewIDGenerator(nil).New(), CompanyID: company, From: from, To: to, Text: "hello"})
}

// waitUp waits until connector name is up and healthy.
func waitUp(t *testing.T, rt *smsroute.Router, name string) {
	t.Helper()
	require.Eventually(t, func() bool { st, ok := rt.ConnectorState(name); return ok && st.Healthy }, 10*time.Second, 10*time.Millisecond, name)
}

// TestFailover: a failover route sends through its first connector; when
// that SMSC goes away, new sends move to the next one at once, and back
// once it returns; the connector that took each SMS is named in the result.
func TestFailover(t *testing.T) {
	a, b := sim(t), sim(t)
	rt, _ := setup(t, a, b, routing.Route{Strategy: routing.Failover, Targets: []routing.Target{{Connector: "a"}, {Connector: "b"}}})
	waitUp(t, rt, "a")
	res, err := send(t, rt, "447700900001", messaging.NilID, "HERALD")
	require.NoError(t, err)
	require.Equal(t, "a", res.Connector)
	require.Len(t, a.MessagesTo("447700900001"), 1)

	addr := a.Addr()
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool { st, _ := rt.ConnectorState("a"); return !st.Healthy }, 5*time.Second, 10*time.Millisecond)
	res, err = send(t, rt, "447700900002", messaging.NilID, "HERALD")
	require.NoError(t, err)
	require.Equal(t, "b", res.Connector, "moved to the next connector")
	require.Len(t, b.MessagesTo("447700900002"), 1)

	back := smscsim.New(smscsim.Config{SystemID: "herald", Password: "secret", Record: true})
	require.NoError(t, back.Start(addr))
	t.Cleanup(func() { _ = back.Close() })
	waitUp(t, rt, "a")
	res, err = send(t, rt, "447700900003", messaging.NilID, "HERALD")
	require.NoError(t, err)
	require.Equal(t, "a", res.Connector, "back once it recovered")
}

// TestRoutesByPrefixCompanyAndSender: the first matching route decides;
// round-robin alternates; an SMS no route takes fails at once, NO_ROUTE.
func TestRoutesByPrefixCompanyAndSender(t *testing.T) {
	a, b := sim(t), sim(t)
	vip := messaging.NewIDGenerator(nil).New()
	rt, svc := setup(t, a, b,
		routing.Route{Position: 1, CompanyIDs: []messaging.ID{vip}, Targets: []routing.Target{{Connector: "b"}}},
		routing.Route{Position: 2, Prefixes: []string{"33"}, Targets: []routing.Target{{Connector: "b"}}},
		routing.Route{Position: 3, Prefixes: []string{"44"}, SenderIDs: []string{"BANK"}, Strategy: routing.RoundRobin,
			Targets: []routing.Target{{Connector: "a"}, {Connector: "b"}}},
		routing.Route{Position: 4, Prefixes: []string{"44"}, Targets: []routing.Target{{Connector: "a"}}},
	)
	waitUp(t, rt, "a")
	waitUp(t, rt, "b")
	for _, c := range []struct {
		to, from string
		company  messaging.ID
		want     string
	}{
		{"447700900001", "SHOP", vip, "b"},
		{"33612345678", "SHOP", messaging.NilID, "b"},
		{"447700900002", "SHOP", messaging.NilID, "a"},
	} {
		res, err := send(t, rt, c.to, c.company, c.from)
		require.NoError(t, err)
		require.Equal(t, c.want, res.Connector, "%+v", c)
	}
	seen := map[string]int{}
	for range 4 {
		res, err := send(t, rt, "447700900009", messaging.NilID, "BANK")
		require.NoError(t, err)
		seen[res.Connector]++
	}
	require.Equal(t, map[string]int{"a": 2, "b": 2}, seen, "round-robin")
	_, err := send(t, rt, "4915112345678", messaging.NilID, "SHOP")
	var se *delivery.SendError
	require.True(t, errors.As(err, &se))
	require.True(t, se.Permanent)
	require.Equal(t, smsroute.DetailsNoRoute, se.Details)

	// What each route sent, through which connector.
	routes, err := svc.Routes(t.Context())
	require.NoError(t, err)
	id := map[int]string{}
	for _, r := range routes {
		id[r.Position] = strconv.FormatInt(r.ID, 10)
	}
	require.Equal(t, []smsroute.RouteCount{
		{Route: id[1], Connector: "b", Result: smsroute.ResultSent, Count: 1},
		{Route: id[2], Connector: "b", Result: smsroute.ResultSent, Count: 1},
		{Route: id[3], Connector: "a", Result: smsroute.ResultSent, Count: 2},
		{Route: id[3], Connector: "b", Result: smsroute.ResultSent, Count: 2},
		{Route: id[4], Connector: "a", Result: smsroute.ResultSent, Count: 1},
		{Route: smsroute.RouteNone, Result: smsroute.ResultFailed, Count: 1},
	}, sortedCounts(rt.RouteCounts(), id))
}

// sortedCounts orders counts by route position (ids of id), then the
// others, then connector.
func sortedCounts(counts []smsroute.RouteCount, id map[int]string) []smsroute.RouteCount {
	pos := map[string]int{}
	for p, s := range id {
		pos[s] = p
	}
	slices.SortFunc(counts, func(a, b smsroute.RouteCount) int {
		pa, oka := pos[a.Route]
		pb, okb := pos[b.Route]
		switch {
		case oka && !okb:
			return -1
		case !oka && okb:
			return 1
		case pa != pb:
			return pa - pb
		}
		return strings.Compare(a.Connector, b.Connector)
	})
	return counts
}

// TestReload: a connector and a route added through the service are
// used without a restart, and a route removed no longer takes SMS.
func TestReload(t *testing.T) {
	a, b := sim(t), sim(t)
	rt, svc := setup(t, a, b, routing.Route{Position: 9, Targets: []routing.Target{{Connector: "a"}}})
	c := sim(t)
	_, err := svc.CreateConnector(t.Context(), routing.Connector{Name: "c", Addr: c.Addr(), SystemID: "herald", Password: "secret"})
	require.NoError(t, err)
	r, err := svc.CreateRoute(t.Context(), routing.Route{Position: 1, Prefixes: []string{"49"}, Targets: []routing.Target{{Connector: "c"}}})
	require.NoError(t, err)
	waitUp(t, rt, "c")
	require.Eventually(t, func() bool {
		res, err := send(t, rt, "4915112345678", messaging.NilID, "X")
		return err == nil && res.Connector == "c"
	}, 5*time.Second, 20*time.Millisecond)
	require.NoError(t, svc.DeleteRoute(t.Context(), r.ID))
	require.Eventually(t, func() bool {
		res, err := send(t, rt, "4915112345678", messaging.NilID, "X")
		return err == nil && res.Connector == "a"
	}, 5*time.Second, 20*time.Millisecond, "the catch-all takes it again")
}

// TestConnectorSettingsReachTheClient: a connector's binds reach its SMPP
// client (the simulator sees them) and its live state; a settings change
// binds it again with the new ones.
func TestConnectorSettingsReachTheClient(t *testing.T) {
	a, b := sim(t), sim(t)
	rt, svc := setup(t, a, b)
	c, err := svc.Connector(t.Context(), "a")
	require.NoError(t, err)
	c.Binds = 3
	_, err = svc.UpdateConnector(t.Context(), c, true)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, ok := rt.ConnectorState("a")
		return ok && st.Binds == 3 && st.BindsUp == 3 && st.Healthy
	}, 10*time.Second, 10*time.Millisecond, "rebound with three sessions")
	require.GreaterOrEqual(t, a.Stats().Connections, 3, "the simulator sees the sessions")
}

// TestPartIDsNameTheirConnector: the part ids of an SMS sent through a
// connector carry its name, and so do its receipts, so that two SMSCs
// handing out the same ids never settle each other's messages.
func TestPartIDsNameTheirConnector(t *testing.T) {
	a, b := sim(t), sim(t)
	got := make(chan delivery.Receipt, 4)
	rt, _ := setupWith(t, a, b, func(_ context.Context, r delivery.Receipt) error { got <- r; return nil },
		routing.Route{Position: 1, Prefixes: []string{"33"}, Targets: []routing.Target{{Connector: "b"}}},
		routing.Route{Position: 2, Targets: []routing.Target{{Connector: "a"}}})
	waitUp(t, rt, "a")
	waitUp(t, rt, "b")
	ra, err := send(t, rt, "447700900001", messaging.NilID, "X")
	require.NoError(t, err)
	rb, err := send(t, rt, "33612345678", messaging.NilID, "X")
	require.NoError(t, err)
	require.Regexp(t, `^a:.+`, ra.PartIDs[0])
	require.Regexp(t, `^b:.+`, rb.PartIDs[0])
	want := map[string]bool{ra.PartIDs[0]: true, rb.PartIDs[0]: true}
	for range 2 {
		select {
		case r := <-got:
			require.True(t, want[r.ProviderID], "receipt %q matches a part sent", r.ProviderID)
			delete(want, r.ProviderID)
		case <-time.After(10 * time.Second):
			t.Fatal("no receipt")
		}
	}
	require.Equal(t, "447700900001", smsroute.PartID(routing.DefaultConnector, "447700900001"), "the default connector's ids stay as they are")
}

// TestDefaultTakesTheRest: with the connector of the HERALD_SMPP_*
// variables (not stored, named default), an SMS no route takes goes
// through it instead of failing.
func TestDefaultTakesTheRest(t *testing.T) {
	a, d := sim(t), sim(t)
	ctx := t.Context()
	svc, err := routing.New(routing.Config{Store: memstore.New()})
	require.NoError(t, err)
	_, err = svc.CreateConnector(ctx, routing.Connector{Name: "fr", Addr: a.Addr(), SystemID: "herald", Password: "secret"})
	require.NoError(t, err)
	_, err = svc.CreateRoute(ctx, routing.Route{Prefixes: []string{"33"}, Targets: []routing.Target{{Connector: "fr"}, {Connector: routing.DefaultConnector}}})
	require.NoError(t, err, "a route may name the default connector")
	rt, err := smsroute.New(ctx, smsroute.Config{Source: svc, Dial: smsroute.DialSMPP(smpp.Config{}),
		Static: []routing.Connector{{Name: routing.DefaultConnector, Addr: d.Addr(), SystemID: "herald", Password: "secret"}}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	waitUp(t, rt, "fr")
	waitUp(t, rt, routing.DefaultConnector)
	res, err := send(t, rt, "33612345678", messaging.NilID, "X")
	require.NoError(t, err)
	require.Equal(t, "fr", res.Connector)
	res, err = send(t, rt, "447700900001", messaging.NilID, "X")
	require.NoError(t, err)
	require.Equal(t, routing.DefaultConnector, res.Connector)
	require.Len(t, d.MessagesTo("447700900001"), 1)
}

// TestSharesAcrossProcesses: three routers (three processes) sharing one
// store each run a 6-bind connector with 2 binds; when one stops, the
// others take 3 binds each once its heartbeat is older than three reloads.
func TestSharesAcrossProcesses(t *testing.T) {
	a := sim(t)
	ctx := t.Context()
	st := memstore.New()
	svc, err := routing.New(routing.Config{Store: st})
	require.NoError(t, err)
	_, err = svc.CreateConnector(ctx, routing.Connector{Name: "eu", Addr: a.Addr(), SystemID: "herald", Password: "secret", Binds: 6, MaxPerSecond: 300})
	require.NoError(t, err)
	start := func(instance string) *smsroute.Router {
		rt, err := smsroute.New(ctx, smsroute.Config{Source: svc, Instance: instance, Reload: 50 * time.Millisecond,
			Dial: smsroute.DialSMPP(smpp.Config{BindBackoff: messaging.Backoff{Min: 20 * time.Millisecond, Max: 100 * time.Millisecond}})})
		require.NoError(t, err)
		return rt
	}
	rts := []*smsroute.Router{start("p1"), start("p2"), start("p3")}
	defer func() {
		for _, rt := range rts[1:] {
			require.NoError(t, rt.Close(context.Background()))
		}
	}()
	binds := func(rt *smsroute.Router) int { s, _ := rt.ConnectorState("eu"); return s.BindsUp }
	require.Eventually(t, func() bool { return binds(rts[0]) == 2 && binds(rts[1]) == 2 && binds(rts[2]) == 2 },
		10*time.Second, 20*time.Millisecond, "a third of the binds each")
	require.NoError(t, rts[0].Close(context.Background()))
	require.Eventually(t, func() bool { return binds(rts[1]) == 3 && binds(rts[2]) == 3 },
		10*time.Second, 20*time.Millisecond, "the stopped process's share taken back")
	require.LessOrEqual(t, a.Stats().Connections, 6, "never more binds than the connector's")
}

// TestPickConnectorBudget: the router tells the dispatcher which connector
// an SMS goes through, and a capped connector's budget (two seconds of its
// rate); an uncapped one has none, and neither has an SMS no route takes.
func TestPickConnectorBudget(t *testing.T) {
	a, b := sim(t), sim(t)
	company := messaging.NewIDGenerator(nil).New()
	rt, svc := setup(t, a, b, routing.Route{Prefixes: []string{"44"}, Targets: []routing.Target{{Connector: "a"}}},
		routing.Route{Prefixes: []string{"33"}, Targets: []routing.Target{{Connector: "b"}}})
	var picker delivery.ConnectorPicker = rt
	name, budget := picker.PickConnector(delivery.SMS{CompanyID: company, From: "Herald", To: "447700900001"})
	require.Equal(t, "a", name)
	require.Zero(t, budget, "uncapped")

	ctx := t.Context()
	c, err := svc.Connector(ctx, "b")
	require.NoError(t, err)
	c.MaxPerSecond = 25
	_, err = svc.UpdateConnector(ctx, c, true)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		name, budget = picker.PickConnector(delivery.SMS{CompanyID: company, From: "Herald", To: "33612345678"})
		return budget > 0
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "b", name)
	require.Equal(t, 50, budget, "two seconds of 25 a second")

	name, budget = picker.PickConnector(delivery.SMS{CompanyID: company, From: "Herald", To: "15550001111"})
	require.Empty(t, name, "no route takes it, and there is no default connector")
	require.Zero(t, budget)
}
