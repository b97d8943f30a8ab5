package accounts_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// testWait bounds how long a test waits for a change to show.
const (
	testWait  = 10 * time.Second
	pollEvery = time.Millisecond
)

func TestCachedKeyForgottenOnChange(t *testing.T) {
	ctx := t.Context()
	svc := must(accounts.New(accounts.Config{Store: memstore.New()}))
	c, err := svc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, svc.SetCompanyActive(ctx, c.ID, true))
	company := c.ID
	key, err := svc.GenerateAPIKey(ctx, company)
	require.NoError(t, err)
	_, err = svc.Authenticate(ctx, key) // now cached
	require.NoError(t, err)

	require.NoError(t, svc.SetCompanyActive(ctx, company, false))
	_, err = svc.Authenticate(ctx, key)
	require.True(t, messaging.IsCode(err, messaging.Unavailable), "%v", err)
	require.NoError(t, svc.SetCompanyActive(ctx, company, true))
	_, err = svc.Authenticate(ctx, key)
	require.NoError(t, err)

	next, err := svc.GenerateAPIKey(ctx, company)
	require.NoError(t, err)
	_, err = svc.Authenticate(ctx, key)
	require.True(t, messaging.IsCode(err, messaging.Unauthorized), "the previous key still works: %v", err)
	got, err := svc.Authenticate(ctx, next)
	require.NoError(t, err)
	require.Equal(t, company, got.ID)
}

func TestCachedKeyOtherProcessWithinTTL(t *testing.T) {
	st := memstore.New()
	ctx := t.Context()
	setup := must(accounts.New(accounts.Config{Store: st, CacheTTL: -1}))
	company, err := setup.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, setup.SetCompanyActive(ctx, company.ID, true))
	key, err := setup.GenerateAPIKey(ctx, company.ID)
	require.NoError(t, err)

	// Two services on one store stand for two processes on one database.
	cached := must(accounts.New(accounts.Config{Store: st, CacheTTL: 50 * time.Millisecond}))
	uncached := must(accounts.New(accounts.Config{Store: st, CacheTTL: -1}))
	_, err = cached.Authenticate(ctx, key)
	require.NoError(t, err)

	_, err = setup.GenerateAPIKey(ctx, company.ID) // revokes key elsewhere
	require.NoError(t, err)
	_, err = uncached.Authenticate(ctx, key)
	require.True(t, messaging.IsCode(err, messaging.Unauthorized), "%v", err)
	require.Eventually(t, func() bool {
		_, err := cached.Authenticate(ctx, key)
		return messaging.IsCode(err, messaging.Unauthorized)
	}, testWait, pollEvery, "the revocation never shows past the TTL")
}
