package admin_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/client/admin"
)

// TestConnectorsAndRoutes: the operator creates, lists, reads, updates
// and deletes SMPP connectors and routes; the routing SMS sender binds
// the connectors (their live state shows it) and sends SMS through the
// route that matches, failing those no route takes; each call's typical
// error is decoded.
func TestConnectorsAndRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	acme := e.onboard("Acme", "ACME")

	secret := "secret"
	eu, err := e.a.CreateConnector(ctx, admin.ConnectorInput{Name: "eu-main", Addr: "smsc.example.com:2775", SystemID: "herald",
		Password: &secret, Binds: 2, Window: 50, MaxPerSecond: 500, SubmitIDFormat: admin.IDHex})
	require.NoError(t, err)
	require.Equal(t, "eu-main", eu.Name)
	require.Equal(t, "smsc.example.com:2775", eu.Addr)
	require.True(t, eu.PasswordSet)
	require.Equal(t, admin.BindTransceiver, eu.BindType, "the default bind type")
	require.Equal(t, 2, eu.Binds)
	require.Equal(t, 50, eu.Window)
	require.Equal(t, 500.0, eu.MaxPerSecond)
	require.Equal(t, admin.IDHex, eu.SubmitIDFormat)
	require.Equal(t, admin.IDAsSent, eu.ReceiptIDFormat)
	require.Nil(t, eu.SourceTON)
	require.Zero(t, eu.EnquireLinkSeconds)
	require.False(t, eu.CreatedAt.IsZero())
	ton := 1
	backup, err := e.a.CreateConnector(ctx, admin.ConnectorInput{Name: "backup", Addr: "10.0.0.2:2775", BindType: admin.BindTransmitter,
		SourceTON: &ton, EnquireLinkSeconds: 15})
	require.NoError(t, err)
	require.False(t, backup.PasswordSet)
	require.Equal(t, 1, backup.Binds, "the default binds")
	require.Equal(t, &ton, backup.SourceTON)
	require.Equal(t, 15, backup.EnquireLinkSeconds)
	_, err = e.a.CreateConnector(ctx, admin.ConnectorInput{Name: "backup", Addr: "10.0.0.3:2775"})
	invalid(t, err, "name")
	_, err = e.a.CreateConnector(ctx, admin.ConnectorInput{Name: "x", Addr: "a:1", Binds: 99})
	invalid(t, err, "binds")

	// Every connector runs in the server's router: its live state shows.
	eventually(t, "eu-main bound", func() bool {
		c, err := e.a.GetConnector(ctx, "eu-main")
		require.NoError(t, err)
		return c.State != nil && c.State.BindsUp == 2
	})
	got, err := e.a.GetConnector(ctx, "eu-main")
	require.NoError(t, err)
	require.Equal(t, &admin.ConnectorState{Binds: 2, BindsUp: 2, Healthy: true}, got.State)
	_, err = e.a.GetConnector(ctx, "nope")
	apiError(t, err, http.StatusNotFound, "Not Found")
	list, err := e.a.ListConnectors(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"backup", "eu-main"}, []string{list[0].Name, list[1].Name}, "by name")

	rt, err := e.a.CreateRoute(ctx, admin.RouteInput{Position: 10, Prefixes: []string{"44"}, CompanyIDs: []string{acme.id},
		Connectors: []admin.RouteTarget{{Name: "eu-main"}, {Name: "backup"}}})
	require.NoError(t, err)
	require.Positive(t, rt.ID)
	require.Equal(t, admin.StrategyFailover, rt.Strategy, "the default strategy")
	require.Equal(t, []admin.RouteTarget{{Name: "eu-main", Weight: 1}, {Name: "backup", Weight: 1}}, rt.Connectors)
	require.Equal(t, []string{acme.id}, rt.CompanyIDs)
	require.Equal(t, []string{}, rt.SenderIDs)
	_, err = e.a.CreateRoute(ctx, admin.RouteInput{Connectors: []admin.RouteTarget{{Name: "ghost"}}})
	invalid(t, err, "connectors[0].name")
	_, err = e.a.CreateRoute(ctx, admin.RouteInput{Prefixes: []string{"+44"}, Connectors: []admin.RouteTarget{{Name: "backup"}}})
	invalid(t, err, "prefixes[0]")
	rest, err := e.a.CreateRoute(ctx, admin.RouteInput{Position: 100, Prefixes: []string{"1"}, Strategy: admin.StrategyRoundRobin,
		Connectors: []admin.RouteTarget{{Name: "backup"}}})
	require.NoError(t, err)
	routes, err := e.a.ListRoutes(ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{rt.ID, rest.ID}, []int64{routes[0].ID, routes[1].ID}, "in the order they are tried")

	// An update keeps the password when none is given, and binds again;
	// once the router shows the new binds it has read the routes too
	// (it reads the connectors, then the routes).
	up, err := e.a.UpdateConnector(ctx, "eu-main", admin.ConnectorInput{Addr: "smsc2.example.com:2775", SystemID: "herald", Binds: 3})
	require.NoError(t, err)
	require.True(t, up.PasswordSet, "kept")
	require.Equal(t, 3, up.Binds)
	require.Equal(t, 100, up.Window, "a field left out takes its default")
	_, err = e.a.UpdateConnector(ctx, "nope", admin.ConnectorInput{Addr: "a:1"})
	apiError(t, err, http.StatusNotFound, "Not Found")
	_, err = e.a.UpdateConnector(ctx, "eu-main", admin.ConnectorInput{Addr: "nowhere"})
	invalid(t, err, "addr")
	eventually(t, "eu-main bound again with 3 binds", func() bool {
		c, err := e.a.GetConnector(ctx, "eu-main")
		require.NoError(t, err)
		return c.State != nil && c.State.BindsUp == 3
	})

	// SMS to +44 go through eu-main; those no route takes fail NO_ROUTE
	// (there is no default connector here).
	res, err := acme.c.SendSMS(ctx, client.DirectSMS{MessageContent: "Hello", SMSSenderID: acme.sender,
		Recipients: []client.DirectRecipient{{PhoneNumber: "+447700900123"}, {PhoneNumber: "+33612345678"}}})
	require.NoError(t, err)
	byPhone := map[string]client.Message{}
	eventually(t, "both SMS settled", func() bool {
		p, err := acme.c.ListMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID})
		require.NoError(t, err)
		for _, m := range p.Items {
			byPhone[m.PhoneNumber] = m
		}
		return byPhone["447700900123"].Status == client.MessageSent && byPhone["33612345678"].Status == client.MessageFailed
	})
	require.Equal(t, "eu-main", byPhone["447700900123"].Route)
	require.Equal(t, "NO_ROUTE", byPhone["33612345678"].Details)
	got, err = e.a.GetConnector(ctx, "eu-main")
	require.NoError(t, err)
	require.Equal(t, uint64(1), got.State.Submits)

	up, err = e.a.UpdateConnector(ctx, "eu-main", admin.ConnectorInput{Addr: "smsc2.example.com:2775", Password: new(string)})
	require.NoError(t, err)
	require.False(t, up.PasswordSet, "an empty password clears it")

	upRoute, err := e.a.UpdateRoute(ctx, rt.ID, admin.RouteInput{Position: 200, Strategy: admin.StrategyWeighted,
		Connectors: []admin.RouteTarget{{Name: "eu-main", Weight: 3}, {Name: "backup", Weight: 1}}})
	require.NoError(t, err)
	require.Equal(t, []admin.RouteTarget{{Name: "eu-main", Weight: 3}, {Name: "backup", Weight: 1}}, upRoute.Connectors)
	require.Empty(t, upRoute.Prefixes, "the whole route is replaced")
	routes, err = e.a.ListRoutes(ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{rest.ID, rt.ID}, []int64{routes[0].ID, routes[1].ID}, "moved after the other")
	_, err = e.a.UpdateRoute(ctx, 9999, admin.RouteInput{Connectors: []admin.RouteTarget{{Name: "backup"}}})
	require.True(t, client.IsNotFound(err))

	err = e.a.DeleteConnector(ctx, "eu-main")
	apiError(t, err, http.StatusConflict, "Conflict")
	require.True(t, client.IsConflict(err), "a route names it")
	require.NoError(t, e.a.DeleteRoute(ctx, rt.ID))
	err = e.a.DeleteRoute(ctx, rt.ID)
	apiError(t, err, http.StatusNotFound, "Not Found")
	require.NoError(t, e.a.DeleteConnector(ctx, "eu-main"))
	_, err = e.a.GetConnector(ctx, "eu-main")
	require.True(t, client.IsNotFound(err))
	err = e.a.DeleteConnector(ctx, "eu-main")
	require.True(t, client.IsNotFound(err))
	list, err = e.a.ListConnectors(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
}
