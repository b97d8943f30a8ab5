package admin_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSummary: every company's summary answers, with a row per company
// that has messages; a since more than seven days back is refused.
func TestSummary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	s, err := e.a.Summary(ctx, time.Time{})
	require.NoError(t, err)
	require.Zero(t, s.Total, "no message sent yet")
	require.Empty(t, s.Companies)
	require.Nil(t, s.DeliveryRate)
	_, err = e.a.Summary(ctx, time.Now().Add(-8*24*time.Hour))
	invalid(t, err, "since")
}
