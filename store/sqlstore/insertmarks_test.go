package sqlstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInsertMarks: a partition is due for statistics once it took
// analyzeMinRows inserts since the last analysis anyone made, whatever
// its updates; counts that went back (statistics reset) start again.
func TestInsertMarks(t *testing.T) {
	var m insertMarks
	names := func(stats ...partitionStats) []string {
		var out []string
		for _, st := range m.due(stats) {
			out = append(out, st.name)
		}
		return out
	}
	p := partitionStats{name: "p", inserts: analyzeMinRows, modified: analyzeMinRows}
	require.Equal(t, []string{"p"}, names(p), "first seen: its changes since statistics count as inserts")
	m.analyzed(p)
	p.analyses = 1
	p.modified = 3 * analyzeMinRows
	require.Empty(t, names(p), "updates alone")
	p.inserts += analyzeMinRows - 1
	require.Empty(t, names(p), "one insert short")
	p.analyses = 2 // another process analyzed it
	p.inserts++
	require.Empty(t, names(p), "counted from the other process's analysis")
	p.inserts += analyzeMinRows
	require.Equal(t, []string{"p"}, names(p))

	reset := partitionStats{name: "p", inserts: 10, analyses: 2}
	require.Empty(t, names(reset), "counts reset: start again from them")
	reset.inserts += analyzeMinRows
	require.Equal(t, []string{"p"}, names(reset), "not held back by the counts before the reset")
	require.Empty(t, names(partitionStats{name: "q"}), "p dropped, q new and empty")
	require.NotContains(t, m.marks, "p", "a dropped partition is forgotten")
}
