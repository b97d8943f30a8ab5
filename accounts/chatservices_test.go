package accounts_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// TestChatServiceBaseURL: a provider without a public endpoint needs each
// service's baseUrl; without Providers only Herald's own is known, and it
// takes a service without baseUrl or credentials.
func TestChatServiceBaseURL(t *testing.T) {
	ctx := t.Context()
	selfHosted := accounts.ProviderInfo{Name: "self", Channels: []string{"viber"}, NeedsBaseURL: true}
	svc := must(accounts.New(accounts.Config{Store: memstore.New(), Providers: func(name string) (accounts.ProviderInfo, bool) {
		return selfHosted, name == "self"
	}}))
	co, err := svc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	in := accounts.ChatServiceInput{BrandName: "Acme", ProviderServiceID: "acme", Provider: "self"}
	_, err = svc.CreateChatService(ctx, co.ID, in)
	requireField(t, err, "baseUrl")
	in.BaseURL = "https://chat.acme.example"
	cs, err := svc.CreateChatService(ctx, co.ID, in)
	require.NoError(t, err)
	require.Equal(t, "https://chat.acme.example", cs.BaseURL)
	in.BaseURL = ""
	_, err = svc.UpdateChatService(ctx, co.ID, cs.ID, in)
	requireField(t, err, "baseUrl")
	_, err = svc.AddChatService(ctx, co.ID, "Acme", "acme")
	requireField(t, err, "provider")

	def := must(accounts.New(accounts.Config{Store: memstore.New()}))
	co, err = def.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	cs, err = def.AddChatService(ctx, co.ID, "Acme", "acme")
	require.NoError(t, err)
	require.Equal(t, "herald", cs.Provider)
	require.Equal(t, "viber", cs.Channel)
	_, err = def.CreateChatService(ctx, co.ID, accounts.ChatServiceInput{BrandName: "Acme", ProviderServiceID: "acme", Channel: "whatsapp"})
	requireField(t, err, "channel")
	_, err = def.CreateChatService(ctx, co.ID, accounts.ChatServiceInput{BrandName: "Acme", ProviderServiceID: "acme",
		Credentials: json.RawMessage(`[1]`)})
	requireField(t, err, "credentials")
}

func requireField(t *testing.T, err error, field string) {
	t.Helper()
	var e *messaging.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, messaging.Invalid, e.Code, "%v", err)
	require.Contains(t, e.Fields, field, "%v", err)
}
