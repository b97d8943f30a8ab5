package accounts_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

func TestAuthenticate(t *testing.T) {
	ctx := t.Context()
	svc := must(accounts.New(accounts.Config{Store: memstore.New()}))
	company, err := svc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)

	key, err := svc.GenerateAPIKey(ctx, company.ID)
	require.NoError(t, err)
	require.True(t, accounts.WellFormedAPIKey(key), key)

	_, err = svc.Authenticate(ctx, key)
	require.True(t, messaging.IsCode(err, messaging.Unavailable), "a company not activated: %v", err)
	require.NoError(t, svc.SetCompanyActive(ctx, company.ID, true))
	got, err := svc.Authenticate(ctx, key)
	require.NoError(t, err)
	require.Equal(t, company.ID, got.ID)

	// The same selector with another secret part is refused.
	last := key[len(key)-1]
	forged := key[:len(key)-1] + string(map[bool]byte{true: 'b', false: 'a'}[last == 'a'])
	for name, k := range map[string]string{
		"forged secret part": forged,
		"empty":              "",
		"malformed":          "om_short",
		"wrong prefix":       "xx_" + key[3:],
	} {
		_, err := svc.Authenticate(ctx, k)
		require.True(t, messaging.IsCode(err, messaging.Unauthorized), "%s: %v", name, err)
	}

	// A new key revokes the previous one.
	next, err := svc.GenerateAPIKey(ctx, company.ID)
	require.NoError(t, err)
	require.NotEqual(t, key, next)
	_, err = svc.Authenticate(ctx, key)
	require.True(t, messaging.IsCode(err, messaging.Unauthorized), "revoked key: %v", err)
	_, err = svc.Authenticate(ctx, next)
	require.NoError(t, err)
}

func TestNewNeedsAStore(t *testing.T) {
	_, err := accounts.New(accounts.Config{})
	require.ErrorContains(t, err, "Store is required")
}
