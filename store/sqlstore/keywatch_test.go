package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// keyCacheTTL is the cache of the services of TestKeyChangesReachEveryProcess:
// long, so that a key refused sooner was dropped by the notification.
const keyCacheTTL = 5 * time.Second

// keyChangeDeadline is how soon the other process must refuse a revoked key.
const keyChangeDeadline = 200 * time.Millisecond

// runService starts an accounts service on its own store of the database
// at rawURL, as another process would, and waits until it listens.
func runService(t *testing.T, rawURL string) *accounts.Service {
	t.Helper()
	svc, err := accounts.New(accounts.Config{Store: open(t, rawURL), CacheTTL: keyCacheTTL})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = svc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.Eventually(t, svc.Watching, 10*time.Second, time.Millisecond, "the service never listens")
	return svc
}

// refusedSoon asserts that svc refuses key within keyChangeDeadline,
// long before its cache would have forgotten it.
func refusedSoon(t *testing.T, svc *accounts.Service, key, what string) {
	t.Helper()
	start := time.Now()
	for {
		_, err := svc.Authenticate(t.Context(), key)
		if err != nil {
			require.True(t, messaging.IsCode(err, messaging.Unauthorized) || messaging.IsCode(err, messaging.Unavailable), "%s: %v", what, err)
			return
		}
		require.Less(t, time.Since(start), keyChangeDeadline, "%s: the other process still accepts the key", what)
		time.Sleep(2 * time.Millisecond)
	}
}

// TestKeyChangesReachEveryProcess: two processes on one Postgres schema;
// a key revoked, replaced or its company switched off in one is refused by
// the other at once, although the other had it cached; a key whose grace
// runs out is refused by the other process then.
func TestKeyChangesReachEveryProcess(t *testing.T) {
	rawURL := pgtest.SchemaURL(t)
	one, two := runService(t, rawURL), runService(t, rawURL)
	ctx := t.Context()
	c, err := one.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, one.SetCompanyActive(ctx, c.ID, true))
	cached := func(key string) {
		t.Helper()
		_, err := two.Authenticate(ctx, key)
		require.NoError(t, err)
	}

	// Revoked by id.
	key, k, err := one.CreateAPIKey(ctx, c.ID, "first", 0)
	require.NoError(t, err)
	cached(key)
	require.NoError(t, one.RevokeAPIKey(ctx, c.ID, k.ID))
	refusedSoon(t, two, key, "revoked")

	// Replaced by a new key without grace.
	key, _, err = one.CreateAPIKey(ctx, c.ID, "second", 0)
	require.NoError(t, err)
	cached(key)
	next, _, err := one.CreateAPIKey(ctx, c.ID, "third", 0)
	require.NoError(t, err)
	refusedSoon(t, two, key, "replaced")
	cached(next)

	// A grace: the previous key keeps working in the other process.
	last, _, err := one.CreateAPIKey(ctx, c.ID, "fourth", time.Hour)
	require.NoError(t, err)
	cached(next)
	cached(last)

	// A grace runs out by itself in the other process, its cache
	// notwithstanding.
	final, _, err := one.CreateAPIKey(ctx, c.ID, "fifth", 300*time.Millisecond)
	require.NoError(t, err)
	cached(last)
	cached(final)
	time.Sleep(300 * time.Millisecond)
	refusedSoon(t, two, last, "grace run out")
	cached(final)

	// The company switched off.
	require.NoError(t, one.SetCompanyActive(ctx, c.ID, false))
	refusedSoon(t, two, final, "company switched off")
}
