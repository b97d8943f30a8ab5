package sqlstore_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"
)

// backendCPU measures the CPU that the Postgres backends of one store's
// connections use, read from /proc: the server must run on this machine.
// The connections are told apart by their application_name.
type backendCPU struct {
	admin *sql.DB
	name  string
	start map[int]time.Duration
}

// withBackendCPU returns rawURL with an application_name of its own, and
// the meter of its backends.
func withBackendCPU(tb testing.TB, rawURL string) (string, *backendCPU) {
	tb.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(tb, err)
	q := u.Query()
	name := fmt.Sprintf("herald_bench_%d_%d", os.Getpid(), time.Now().UnixNano())
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(rawURL)))
	tb.Cleanup(func() { _ = admin.Close() })
	return u.String(), &backendCPU{admin: admin, name: name}
}

// cpus reads the CPU used so far by each backend of the store.
func (m *backendCPU) cpus(tb testing.TB) map[int]time.Duration {
	tb.Helper()
	rows, err := m.admin.QueryContext(tb.Context(), "SELECT pid FROM pg_stat_activity WHERE application_name = $1", m.name)
	require.NoError(tb, err)
	defer rows.Close()
	out := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		require.NoError(tb, rows.Scan(&pid))
		if d, err := processCPU(pid); err == nil {
			out[pid] = d
		}
	}
	require.NoError(tb, rows.Err())
	return out
}

// begin takes the backends' CPU at the start of the measure.
func (m *backendCPU) begin(tb testing.TB) { m.start = m.cpus(tb) }

// since returns the CPU the backends used since begin; a backend that
// connected since counts from zero, one that ended is lost (a store's
// pool keeps its connections).
func (m *backendCPU) since(tb testing.TB) time.Duration {
	var d time.Duration
	for pid, c := range m.cpus(tb) {
		d += c - m.start[pid]
	}
	return d
}

// processCPU is the user and system CPU time of process pid.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat of %d", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed stat of %d", pid)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100, nil // USER_HZ
}
