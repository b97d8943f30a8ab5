package main

import (
	"bytes"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"release with revision", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-24T10:00:00Z"},
				{Key: "vcs.modified", Value: "false"}}},
			true, "herald v1.2.0 revision abc123 (2026-11-24T10:00:00Z) go1.26.8\n"},
		{"development tree with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}},
			true, "herald (devel) revision abc123+dirty go1.26.8\n"},
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.26.8"}, true, "herald (devel) go1.26.8\n"},
		{"no build information", nil, false, "herald (no build information)\n"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		version(&out, tt.info, tt.ok)
		require.Equal(t, tt.want, out.String(), tt.name)
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"version"}, env(nil), &out, &errOut))
	require.Regexp(t, `^herald \S+.* go\d`, out.String())
}

func TestServeHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"serve", "-h"}, env(nil), &out, &errOut))
	require.Contains(t, out.String(), "--demo   try Herald on one machine")
	require.Contains(t, out.String(), "ending 0001, 0002, 0003 get SMS receipts")
	require.Empty(t, errOut.String())
}
