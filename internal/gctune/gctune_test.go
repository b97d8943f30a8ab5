package gctune_test

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/gctune"
)

// TestApply: Herald's collector settings apply unless GOGC or
// GOMEMLIMIT is set, each on its own.
func TestApply(t *testing.T) {
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}

	gctune.Apply(env(nil))
	require.Equal(t, "GOGC=200 GOMEMLIMIT=200MiB", gctune.Describe())
	require.Equal(t, 200, debug.SetGCPercent(100))
	require.Equal(t, int64(200<<20), debug.SetMemoryLimit(math.MaxInt64))

	gctune.Apply(env(map[string]string{"GOGC": "50"}))
	require.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: the percent is the runtime's")
	require.Equal(t, int64(200<<20), debug.SetMemoryLimit(math.MaxInt64))

	gctune.Apply(env(map[string]string{"GOMEMLIMIT": "1GiB"}))
	require.Equal(t, "GOGC=200 GOMEMLIMIT=off", gctune.Describe())
	require.Equal(t, 200, debug.SetGCPercent(100))
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(math.MaxInt64), "GOMEMLIMIT set: the limit is the runtime's")
}
