// Package pgtest gives tests a Postgres database of their own: a fresh
// schema of the database HERALD_TEST_POSTGRES_URL names, dropped when the
// test ends.
package pgtest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"
)

// Env names the variable holding the URL of a Postgres database the tests
// may create schemas in.
const Env = "HERALD_TEST_POSTGRES_URL"

// SchemaURL returns the URL of a fresh, empty schema of the test database
// (its search_path set), dropped when the test ends. It skips the test
// when Env is not set.
func SchemaURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		t.Skipf("Postgres tests need %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", Env)
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	schema := "herald_test_" + hex.EncodeToString(suffix[:])
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(base)))
	t.Cleanup(func() { _ = admin.Close() })
	_, err := admin.ExecContext(t.Context(), "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		// t.Context is done by now.
		_, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		require.NoError(t, err)
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
