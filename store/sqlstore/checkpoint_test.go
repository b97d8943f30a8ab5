package sqlstore_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// TestSQLiteCheckpointsInBackground: the writer never checkpoints on
// commit, so what it commits reaches the database file only through the
// background checkpointer, while the store is open.
func TestSQLiteCheckpointsInBackground(t *testing.T) {
	rawURL := sqliteURL(t)
	path := strings.TrimPrefix(rawURL, "sqlite://")
	s := open(t, rawURL)
	ctx := t.Context()

	size := func() int64 {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		return fi.Size()
	}
	// Let the checkpointer catch up with the migrations first.
	before := size()
	require.Eventually(t, func() bool { now := size(); defer func() { before = now }(); return now == before && now > 0 },
		10*time.Second, 300*time.Millisecond)

	ids := messaging.NewIDGenerator(nil)
	for i := range 2000 {
		c := messaging.Company{ID: ids.New(), Name: fmt.Sprintf("%s%05d", strings.Repeat("x", 190), i), CreatedAt: time.Now()}
		require.NoError(t, s.CreateCompany(ctx, &c))
	}
	require.Eventually(t, func() bool { return size() > before+200*2000/2 },
		10*time.Second, 50*time.Millisecond, "the committed rows must reach the database file while the store is open")
}
