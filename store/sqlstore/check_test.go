package sqlstore_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/heraldhq/herald/messaging"
)

// rawDB opens the database at rawURL on a connection of its own, for
// changes made behind the store's back.
func rawDB(t *testing.T, rawURL string) *sql.DB {
	t.Helper()
	var db *sql.DB
	if path, ok := strings.CutPrefix(rawURL, "sqlite://"); ok {
		var err error
		db, err = sql.Open("sqlite", path)
		require.NoError(t, err)
	} else {
		db = sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(rawURL)))
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestCheckCountersFindsDrift: counters and rows changed behind the
// store's back show as drift, named by counter, with both values.
func TestCheckCountersFindsDrift(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			url := db.url(t)
			s := open(t, url)
			ids := messaging.NewIDGenerator(nil)
			msgs := bulkFixture(t, s, ids, 5, nil)
			require.NoError(t, s.InsertMessages(t.Context(), msgs))
			drift, err := s.CheckCounters(t.Context())
			require.NoError(t, err)
			require.Empty(t, drift)

			raw := rawDB(t, url)
			// A message moved without its counters, and a company's pending
			// count off by two.
			_, err = raw.ExecContext(t.Context(), "UPDATE messages SET status = 'Sent' WHERE phone = '447900000003'")
			require.NoError(t, err)
			_, err = raw.ExecContext(t.Context(), "UPDATE companies SET pending_count = pending_count + 2")
			require.NoError(t, err)

			drift, err = s.CheckCounters(t.Context())
			require.NoError(t, err)
			co, c := msgs[0].CompanyID, msgs[0].CampaignID
			require.Equal(t, []messaging.Drift{
				{CompanyID: co, Counter: "companyPending", Stored: 7, Counted: 4},
				{CompanyID: co, CampaignID: c, Counter: "pending", Stored: 5, Counted: 4},
				{CompanyID: co, CampaignID: c, Counter: "sent", Stored: 0, Counted: 1},
			}, drift)
		})
	}
}
