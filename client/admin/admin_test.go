package admin_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/client/admin"
)

// TestNew: New checks its arguments; a wrong token is a 401 decoded into
// a *client.Error.
func TestNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := admin.New(e.URL, "")
	require.Error(t, err, "a token is required")
	_, err = admin.New("localhost:8080", adminToken)
	require.Error(t, err)

	a, err := admin.New(e.URL+"/admin/v1", adminToken, client.WithHTTPClient(e.hc))
	require.NoError(t, err)
	co, err := a.CreateCompany(e.ctx(), "Acme")
	require.NoError(t, err, "a base URL ending with /admin/v1 works too")

	bad, err := admin.New(e.URL, "wrong-token", client.WithHTTPClient(e.hc))
	require.NoError(t, err)
	_, err = bad.GetCompany(e.ctx(), co.ID)
	ae := apiError(t, err, http.StatusUnauthorized, "Unauthorized")
	require.Equal(t, "/admin/v1/companies/"+co.ID, ae.Path)
	require.True(t, client.IsUnauthorized(err))
	_, err = bad.ListConnectors(e.ctx())
	require.True(t, client.IsUnauthorized(err))
	_, err = bad.ListRoutes(e.ctx())
	require.True(t, client.IsUnauthorized(err))
}

// TestOnboarding: an operator onboards a company end to end through the
// admin API (created inactive, given a key, activated, a sender
// registered and approved both ways, a chat service, a rate, a second key
// and the first revoked), and the company's client sees each step; each
// call's typical error is decoded.
func TestOnboarding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	missing := "0190f5c0-0000-7000-8000-000000000000"

	me, err := e.a.WhoAmI(ctx)
	require.NoError(t, err)
	require.Equal(t, "operator", me.Role)
	wrong, err := admin.New(e.URL, "not-the-token", client.WithRetries(0), client.WithHTTPClient(e.hc))
	require.NoError(t, err)
	_, err = wrong.WhoAmI(ctx)
	require.True(t, client.IsUnauthorized(err), "a wrong token: %v", err)

	co, err := e.a.CreateCompany(ctx, "  Acme  ")
	require.NoError(t, err)
	require.Len(t, co.ID, 36)
	require.Equal(t, "Acme", co.Name, "trimmed")
	require.False(t, co.Active, "a new company is inactive")
	require.Zero(t, co.MaxPerSecond)
	require.False(t, co.CreatedAt.IsZero())
	_, err = e.a.CreateCompany(ctx, "")
	invalid(t, err, "name")
	_, err = e.a.CreateCompany(ctx, "ACME")
	apiError(t, err, http.StatusConflict, "Conflict")
	require.True(t, client.IsConflict(err), "names are unique whatever the case")
	got, err := e.a.GetCompany(ctx, co.ID)
	require.NoError(t, err)
	require.Equal(t, co, got)
	_, err = e.a.GetCompany(ctx, missing)
	apiError(t, err, http.StatusNotFound, "Not Found")
	require.True(t, client.IsNotFound(err))
	_, err = e.a.GetCompany(ctx, "acme")
	invalid(t, err, "id")

	key, err := e.a.CreateAPIKey(ctx, co.ID, "")
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^om_[A-Za-z0-9]{32}$`), key.APIKey)
	require.Equal(t, "default", key.Name)
	require.True(t, key.LastUsedAt.IsZero())
	_, err = e.a.CreateAPIKey(ctx, missing, "")
	require.True(t, client.IsNotFound(err))
	c, err := client.New(e.URL, key.APIKey, client.WithRetries(0), client.WithHTTPClient(e.hc))
	require.NoError(t, err)
	_, err = c.ListSMSSenders(ctx)
	ae := apiError(t, err, http.StatusServiceUnavailable, "Service Unavailable")
	require.Zero(t, ae.RetryAfter, "waiting will not help an inactive company")
	require.True(t, client.IsUnavailable(err))

	active, err := e.a.ActivateCompany(ctx, co.ID)
	require.NoError(t, err)
	require.True(t, active.Active)
	_, err = e.a.ActivateCompany(ctx, missing)
	require.True(t, client.IsNotFound(err))
	senders, err := c.ListSMSSenders(ctx)
	require.NoError(t, err)
	require.Empty(t, senders)

	sd, err := e.a.RegisterSMSSender(ctx, co.ID, "ACME")
	require.NoError(t, err)
	require.Equal(t, admin.SMSSender{ID: sd.ID, SenderID: "ACME", Approved: false}, *sd)
	_, err = e.a.RegisterSMSSender(ctx, co.ID, "far too long a sender")
	invalid(t, err, "senderId")
	senders, err = c.ListSMSSenders(ctx)
	require.NoError(t, err)
	require.Empty(t, senders, "not approved yet")
	ok, err := e.a.ApproveSMSSender(ctx, sd.ID)
	require.NoError(t, err)
	require.True(t, ok.Approved)
	require.Equal(t, sd.ID, ok.ID)
	_, err = e.a.ApproveSMSSender(ctx, 99999)
	apiError(t, err, http.StatusNotFound, "Not Found")

	other, err := e.a.CreateCompany(ctx, "Other")
	require.NoError(t, err)
	sd2, err := e.a.RegisterSMSSender(ctx, co.ID, "ACME INFO")
	require.NoError(t, err)
	all, err := e.a.ListSMSSenders(ctx, co.ID)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, []bool{true, false}, []bool{all[0].Approved, all[1].Approved}, "approved or not")
	require.False(t, all[1].CreatedAt.IsZero())
	_, err = e.a.ApproveCompanySMSSender(ctx, other.ID, sd2.ID)
	require.True(t, client.IsNotFound(err), "another company's sender: %v", err)
	ok, err = e.a.ApproveCompanySMSSender(ctx, co.ID, sd2.ID)
	require.NoError(t, err)
	require.Equal(t, admin.SMSSender{ID: sd2.ID, SenderID: "ACME INFO", Approved: true}, *ok)
	senders, err = c.ListSMSSenders(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.SMSSender{{ID: sd.ID, SenderID: "ACME"}, {ID: sd2.ID, SenderID: "ACME INFO"}}, senders)
	_, err = e.a.ListSMSSenders(ctx, missing)
	require.True(t, client.IsNotFound(err))

	cs, err := e.a.AddChatService(ctx, co.ID, admin.ChatServiceInput{BrandName: "Acme", ProviderServiceID: "acme-1"})
	require.NoError(t, err)
	require.Equal(t, "Acme", cs.BrandName)
	require.Equal(t, "acme-1", cs.ProviderServiceID)
	_, err = e.a.AddChatService(ctx, co.ID, admin.ChatServiceInput{BrandName: "Acme"})
	invalid(t, err, "providerServiceId")
	services, err := c.ListChatServices(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.ChatService{{ID: cs.ID, BrandName: "Acme", Channel: "viber", Provider: "herald"}}, services)
	listed, err := e.a.ListChatServices(ctx, co.ID)
	require.NoError(t, err)
	require.Len(t, listed, 1)
	require.Equal(t, "acme-1", listed[0].ProviderServiceID)
	_, err = e.a.ListChatServices(ctx, missing)
	require.True(t, client.IsNotFound(err))

	// Provider, channel, endpoint and credentials: the credentials are
	// never shown, only whether the service has some.
	withCreds, err := e.a.AddChatService(ctx, co.ID, admin.ChatServiceInput{BrandName: "Acme 2", ProviderServiceID: "acme-2",
		BaseURL: "https://chat.example.com", Credentials: json.RawMessage(`{"token":"t-1"}`)})
	require.NoError(t, err)
	require.Equal(t, admin.ChatService{ID: withCreds.ID, BrandName: "Acme 2", ProviderServiceID: "acme-2", Provider: "herald",
		Channel: "viber", BaseURL: "https://chat.example.com", CredentialsSet: true, CreatedAt: withCreds.CreatedAt}, *withCreds)
	gotCS, err := e.a.GetChatService(ctx, co.ID, withCreds.ID)
	require.NoError(t, err)
	require.Equal(t, *withCreds, *gotCS)
	kept, err := e.a.UpdateChatService(ctx, co.ID, withCreds.ID, admin.ChatServiceInput{BrandName: "Acme 3", ProviderServiceID: "acme-3"})
	require.NoError(t, err)
	require.Equal(t, "Acme 3", kept.BrandName)
	require.Empty(t, kept.BaseURL)
	require.True(t, kept.CredentialsSet, "kept")
	removed, err := e.a.UpdateChatService(ctx, co.ID, withCreds.ID, admin.ChatServiceInput{BrandName: "Acme 3", ProviderServiceID: "acme-3",
		Credentials: json.RawMessage("null")})
	require.NoError(t, err)
	require.False(t, removed.CredentialsSet, "removed")
	_, err = e.a.UpdateChatService(ctx, co.ID, withCreds.ID, admin.ChatServiceInput{BrandName: "Acme 3", ProviderServiceID: "acme-3", Provider: "nope"})
	invalid(t, err, "provider")
	_, err = e.a.GetChatService(ctx, other.ID, withCreds.ID)
	require.True(t, client.IsNotFound(err), "another company's service: %v", err)

	rated, err := e.a.SetCompanyRate(ctx, co.ID, 50)
	require.NoError(t, err)
	require.Equal(t, 50.0, rated.MaxPerSecond)
	_, err = e.a.SetCompanyRate(ctx, co.ID, -1)
	invalid(t, err, "maxPerSecond")
	_, err = e.a.SetCompanyRate(ctx, missing, 1)
	require.True(t, client.IsNotFound(err))
	got, err = e.a.GetCompany(ctx, co.ID)
	require.NoError(t, err)
	require.Equal(t, 50.0, got.MaxPerSecond)

	off, err := e.a.DeactivateCompany(ctx, co.ID)
	require.NoError(t, err)
	require.False(t, off.Active)
	_, err = c.ListSMSSenders(ctx)
	require.True(t, client.IsUnavailable(err), "a deactivated company's key: %v", err)
	_, err = e.a.DeactivateCompany(ctx, missing)
	require.True(t, client.IsNotFound(err))
	_, err = e.a.ActivateCompany(ctx, co.ID)
	require.NoError(t, err)

	// A second key with a grace: the first keeps working until it
	// expires; then the first revoked by hand.
	crm, err := e.a.RollAPIKey(ctx, co.ID, "crm", time.Hour)
	require.NoError(t, err)
	require.Equal(t, "crm", crm.Name)
	require.True(t, crm.ExpiresAt.IsZero(), "the new key does not expire")
	_, err = c.ListSMSSenders(ctx)
	require.NoError(t, err, "the first key keeps working during its grace")
	keys, err := e.a.ListAPIKeys(ctx, co.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, []int64{key.ID, crm.ID}, []int64{keys[0].ID, keys[1].ID}, "oldest first")
	require.Empty(t, keys[0].APIKey, "never the keys themselves")
	require.False(t, keys[0].LastUsedAt.IsZero(), "the first key was used")
	require.WithinDuration(t, time.Now().Add(time.Hour), keys[0].ExpiresAt, time.Minute, "the first key expires in an hour")
	require.True(t, keys[1].ExpiresAt.IsZero())
	_, err = e.a.RollAPIKey(ctx, co.ID, "x", 7*24*time.Hour+time.Second)
	invalid(t, err, "previousKeysExpireIn")
	require.NoError(t, e.a.RevokeAPIKey(ctx, co.ID, key.ID))
	_, err = c.ListSMSSenders(ctx)
	require.True(t, client.IsUnauthorized(err), "a revoked key: %v", err)
	err = e.a.RevokeAPIKey(ctx, co.ID, key.ID)
	require.True(t, client.IsNotFound(err), "revoked already: %v", err)

	// A new key without grace revokes the others at once.
	next, err := e.a.CreateAPIKey(ctx, co.ID, "next")
	require.NoError(t, err)
	crmClient, err := client.New(e.URL, crm.APIKey, client.WithRetries(0), client.WithHTTPClient(e.hc))
	require.NoError(t, err)
	_, err = crmClient.ListSMSSenders(ctx)
	require.True(t, client.IsUnauthorized(err), "the key replaced at once: %v", err)
	keys, err = e.a.ListAPIKeys(ctx, co.ID)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, next.ID, keys[0].ID)
	_, err = e.a.ListAPIKeys(ctx, missing)
	require.True(t, client.IsNotFound(err))

	// Companies, by name, a page at a time.
	page, err := e.a.ListCompanies(ctx, client.PageOptions{PageSize: 1})
	require.NoError(t, err)
	require.Equal(t, 2, page.TotalCount)
	require.Equal(t, "Acme", page.Items[0].Name)
	var names []string
	for co, err := range e.a.AllCompanies(ctx, client.PageOptions{PageSize: 1}) {
		require.NoError(t, err)
		names = append(names, co.Name)
	}
	require.Equal(t, []string{"Acme", "Other"}, names)
	_, err = e.a.ListCompanies(ctx, client.PageOptions{PageSize: 500})
	invalid(t, err, "pageSize")
}
