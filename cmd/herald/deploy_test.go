package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestComposeFile: deploy/compose.yaml runs Postgres, with a health check,
// and two read-only replicas of the image on it, started once it is
// healthy, each with an HERALD_INSTANCE of its own and the same database.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "compose.yaml"))
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Image       string
			ReadOnly    bool `yaml:"read_only"`
			Environment map[string]string
			DependsOn   map[string]struct{ Condition string } `yaml:"depends_on"`
			Healthcheck struct{ Test []string }
		}
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	pg, ok := compose.Services["postgres"]
	require.True(t, ok, "a postgres service")
	require.Contains(t, pg.Image, "postgres")
	require.NotEmpty(t, pg.Healthcheck.Test, "postgres has a health check")

	instances := map[string]bool{}
	dbURL := ""
	for name, s := range compose.Services {
		if name == "postgres" {
			continue
		}
		require.Contains(t, s.Image, "herald", name)
		require.True(t, s.ReadOnly, "%s runs read-only", name)
		require.Equal(t, "service_healthy", s.DependsOn["postgres"].Condition, "%s waits for postgres", name)
		inst := s.Environment["HERALD_INSTANCE"]
		require.NotEmpty(t, inst, "%s names its instance", name)
		require.False(t, instances[inst], "%s: instance %s taken twice", name, inst)
		instances[inst] = true
		url := s.Environment["HERALD_DATABASE_URL"]
		require.True(t, strings.HasPrefix(url, "postgres://") && strings.Contains(url, "@postgres:5432/"), "%s: %s", name, url)
		require.True(t, dbURL == "" || dbURL == url, "the replicas share one database")
		dbURL = url
		require.NotEmpty(t, s.Environment["HERALD_SECRET_KEY"], name)
	}
	require.Len(t, instances, 2, "two replicas")
}

// TestSystemdUnit: systemd-analyze verify finds nothing wrong with
// deploy/herald.service (its ExecStart pointed at an executable here),
// and the unit runs herald serve as a user of its own. It skips where
// systemd-analyze is missing.
func TestSystemdUnit(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "herald.service"))
	require.NoError(t, err)
	unit := string(raw)
	for _, line := range []string{"ExecStart=/usr/local/bin/herald serve", "DynamicUser=yes", "EnvironmentFile=/etc/herald/herald.env",
		"StateDirectory=herald", "Restart=on-failure"} {
		require.Contains(t, strings.Split(unit, "\n"), line)
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skipf("systemd-analyze is not installed (apt-get install systemd): %v", err)
	}
	self, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "herald.service")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(unit, "ExecStart=/usr/local/bin/herald", "ExecStart="+self, 1)), 0o644))
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	require.NoError(t, err, "systemd-analyze verify: %s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify has nothing to say")
}
