package chaos_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"
)

// pgCluster is a throwaway PostgreSQL cluster of the suite's own, which it
// may stop and start: the Postgres scenarios never touch a server other
// tests share.
type pgCluster struct {
	bin   string // directory of initdb and pg_ctl
	dir   string // data directory
	port  int
	runAs []string // runuser -u postgres -- when the suite runs as root
	dbs   atomic.Int64
}

var cluster struct {
	once sync.Once
	c    *pgCluster
	err  error
	skip string
}

// pgBinDir finds the PostgreSQL server binaries: HERALD_CHAOS_PG_BIN, or
// the newest /usr/lib/postgresql/*/bin.
func pgBinDir() string {
	if d := os.Getenv("HERALD_CHAOS_PG_BIN"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	if len(dirs) == 0 {
		return ""
	}
	return dirs[len(dirs)-1]
}

// postgres returns the suite's cluster, started on first use. It skips
// the test when the server binaries are missing.
func postgres(t *testing.T) *pgCluster {
	t.Helper()
	cluster.once.Do(func() {
		bin := pgBinDir()
		if _, err := os.Stat(filepath.Join(bin, "initdb")); bin == "" || err != nil {
			cluster.skip = "the PostgreSQL server binaries (initdb, pg_ctl) are not installed; set HERALD_CHAOS_PG_BIN"
			return
		}
		cluster.c, cluster.err = newCluster(bin)
	})
	if cluster.skip != "" {
		t.Skip(cluster.skip)
	}
	require.NoError(t, cluster.err)
	return cluster.c
}

// newCluster runs initdb in a new directory and starts the cluster on a
// free port.
func newCluster(bin string) (*pgCluster, error) {
	dir, err := os.MkdirTemp("", "herald-chaos-pg-")
	if err != nil {
		return nil, err
	}
	c := &pgCluster{bin: bin, dir: dir}
	if os.Geteuid() == 0 { // initdb refuses to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, the cluster needs the user postgres: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		c.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	l, err := listenFree()
	if err != nil {
		return nil, err
	}
	c.port = l
	if out, err := c.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	return c, c.start()
}

// run runs one of the server's programs as the cluster's owner.
func (c *pgCluster) run(prog string, args ...string) ([]byte, error) {
	argv := append(append(append([]string(nil), c.runAs...), filepath.Join(c.bin, prog)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// start starts the cluster and waits until it accepts connections.
func (c *pgCluster) start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", c.port, c.dir)
	if out, err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-o", opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %w: %s", err, out)
	}
	return nil
}

// stop stops the cluster: mode immediate is a crash (no checkpoint, every
// connection cut), fast a clean shutdown.
func (c *pgCluster) stop(mode string) error {
	if out, err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", mode, "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// url is the URL of database db.
func (c *pgCluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// database creates a new database and returns its URL.
func (c *pgCluster) database(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("chaos_%d", c.dbs.Add(1))
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(c.url("postgres"))))
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := db.ExecContext(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	return c.url(name)
}

// stopCluster stops the suite's cluster, if one was started, and removes
// its files.
func stopCluster() {
	if cluster.c == nil {
		return
	}
	_ = cluster.c.stop("immediate")
	_ = os.RemoveAll(cluster.c.dir)
}

// listenFree returns a loopback port free a moment ago.
func listenFree() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
