package sqlstore_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
	"github.com/heraldhq/herald/store/storetest"
	"github.com/heraldhq/herald/survey"
)

var (
	_ campaign.Store  = (*sqlstore.Store)(nil)
	_ delivery.Store  = (*sqlstore.Store)(nil)
	_ survey.Store    = (*sqlstore.Store)(nil)
	_ storetest.Store = (*sqlstore.Store)(nil)
)

// sqliteURL returns the URL of a fresh SQLite database file.
func sqliteURL(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "herald.db")
}

// open opens a store on rawURL, with a secret key, closed when the test
// ends.
func open(t testing.TB, rawURL string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), rawURL, sqlstore.Config{Secrets: newBox(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// databases lists the databases the tests run on, by name, each with a
// function making the URL of a fresh one.
var databases = []struct {
	name string
	url  func(testing.TB) string
}{
	{"sqlite", sqliteURL},
	{"postgres", pgtest.SchemaURL},
}

func TestConformance(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) storetest.Store { return open(t, db.url(t)) })
		})
	}
}

// TestConcurrentOpen: processes opening the same fresh database at once
// all succeed, and the schema is migrated once.
func TestConcurrentOpen(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			u := db.url(t)
			const n = 4
			stores := make([]*sqlstore.Store, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { stores[i], errs[i] = sqlstore.Open(t.Context(), u, sqlstore.Config{}) })
			}
			wg.Wait()
			for i := range n {
				require.NoError(t, errs[i], "open %d", i)
				t.Cleanup(func() { require.NoError(t, stores[i].Close()) })
			}
			// Each store sees what another one wrote.
			ids := messaging.NewIDGenerator(nil)
			co := messaging.Company{ID: ids.New(), Name: "Shared", Active: true, CreatedAt: time.Now()}
			require.NoError(t, stores[0].CreateCompany(t.Context(), &co))
			for i := range n {
				got, err := stores[i].GetCompany(t.Context(), co.ID)
				require.NoError(t, err, "store %d", i)
				require.Equal(t, "Shared", got.Name)
			}
			// Opening again finds nothing to migrate and keeps the data.
			again := open(t, u)
			got, err := again.GetCompany(t.Context(), co.ID)
			require.NoError(t, err)
			require.Equal(t, co.ID, got.ID)
			require.Equal(t, migrationFiles(t), appliedMigrations(t, u), "each migration is recorded once")
		})
	}
}

// migrationFiles counts the migrations shipped for one dialect.
func migrationFiles(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "sqlite", "*.up.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	pg, err := filepath.Glob(filepath.Join("migrations", "postgres", "*.up.sql"))
	require.NoError(t, err)
	require.Len(t, pg, len(files), "both dialects have the same migrations")
	return len(files)
}

// appliedMigrations counts the migrations recorded in the database at
// rawURL.
func appliedMigrations(t *testing.T, rawURL string) int {
	t.Helper()
	db := rawDB(t, rawURL)
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM herald_migrations").Scan(&n))
	return n
}

func TestOpenRejects(t *testing.T) {
	for _, u := range []string{
		"",
		"mysql://localhost/herald",
		"sqlite://",
		"sqlite://:memory:",
		"sqlite://file.db?mode=memory",
		"postgres://%zz",
	} {
		s, err := sqlstore.Open(t.Context(), u, sqlstore.Config{})
		require.Error(t, err, u)
		require.Nil(t, s, u)
	}
}
