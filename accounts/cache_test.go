package accounts_test

import (
	"sync"
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

// TestKeyGraceExpires: a new key with a grace leaves the previous one
// working until the grace runs out, cached or not; without a grace it is
// revoked at once; a grace out of range is refused and changes nothing.
func TestKeyGraceExpires(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	svc := must(accounts.New(accounts.Config{Store: memstore.New(), Now: clock, CacheTTL: time.Hour}))
	c, err := svc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, svc.SetCompanyActive(ctx, c.ID, true))
	old, _, err := svc.CreateAPIKey(ctx, c.ID, "old", 0)
	require.NoError(t, err)

	for _, bad := range []time.Duration{-time.Second, accounts.MaxKeyGrace + time.Second} {
		_, _, err = svc.CreateAPIKey(ctx, c.ID, "bad", bad)
		require.True(t, messaging.IsCode(err, messaging.Invalid), "%v", err)
	}
	next, k, err := svc.CreateAPIKey(ctx, c.ID, "next", time.Hour)
	require.NoError(t, err)
	require.Nil(t, k.ExpiresAt)
	_, err = svc.Authenticate(ctx, old) // cached for an hour of wall time
	require.NoError(t, err, "the previous key works during its grace")
	keys, err := svc.ListAPIKeys(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, now.Add(time.Hour), *keys[0].ExpiresAt)

	advance(time.Hour - time.Millisecond)
	_, err = svc.Authenticate(ctx, old)
	require.NoError(t, err)
	advance(time.Millisecond)
	_, err = svc.Authenticate(ctx, old)
	require.True(t, messaging.IsCode(err, messaging.Unauthorized), "an expired key, cached or not: %v", err)
	_, err = svc.Authenticate(ctx, next)
	require.NoError(t, err)
	keys, err = svc.ListAPIKeys(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, keys, 1, "an expired key is not listed")

	last, _, err := svc.CreateAPIKey(ctx, c.ID, "last", 0)
	require.NoError(t, err)
	_, err = svc.Authenticate(ctx, next)
	require.True(t, messaging.IsCode(err, messaging.Unauthorized), "revoked at once: %v", err)
	_, err = svc.Authenticate(ctx, last)
	require.NoError(t, err)
}
