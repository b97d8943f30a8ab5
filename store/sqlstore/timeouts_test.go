package sqlstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// TestPostgresLongStatements: a statement that runs longer than the
// driver's own default read timeout of 10 s (a count over a very large
// table) completes; a read_timeout the URL sets is kept.
func TestPostgresLongStatements(t *testing.T) {
	base := pgtest.SchemaURL(t)
	s, err := Open(t.Context(), base, Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	_, err = s.db.ExecContext(context.Background(), "SELECT pg_sleep(11)")
	require.NoError(t, err, "an 11 s statement")

	short, err := Open(t.Context(), base+"&read_timeout=1s", Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, short.Close()) })
	_, err = short.db.ExecContext(context.Background(), "SELECT pg_sleep(2)")
	require.Error(t, err, "the URL's read_timeout of 1 s bounds a 2 s statement")
}
