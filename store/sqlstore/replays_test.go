package sqlstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReplaysGroup: the keys of concurrent calls written in one
// transaction are each reported as a replay when they were there before,
// a key given twice for its second, whatever the order of the keys.
func TestReplaysGroup(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			s := open(t, db.url(t))
			until := time.Now().Add(time.Hour)
			seen, err := s.Seen(t.Context(), "c", until)
			require.NoError(t, err)
			require.False(t, seen)
			got, err := s.WriteReplays([][]string{{"d", "b"}, {"a", "b", "c"}, {"d"}}, until)
			require.NoError(t, err)
			require.Equal(t, [][]bool{{false, false}, {false, true, true}, {true}}, got)
			all, err := s.SeenAll(t.Context(), []string{"e", "a", "e"}, until)
			require.NoError(t, err)
			require.Equal(t, []bool{false, true, true}, all)
			seen, err = s.Seen(t.Context(), "a", until)
			require.NoError(t, err)
			require.True(t, seen, "recorded by the group")
		})
	}
}
