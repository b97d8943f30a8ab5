package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
	"github.com/uptrace/bun/driver/pgdriver"
)

// pgSampler sums the CPU of a local Postgres server's processes while a
// run lasts, read from /proc every few milliseconds: the backends
// connected to one database (what Herald's statements cost), and the
// server's own processes (WAL writer, checkpointer, background writer,
// autovacuum), which serve every database of the server. A backend that
// ends between two samples loses its CPU since the last one; Herald keeps
// its connections open, so that loss is small.
type pgSampler struct {
	db       string
	interval time.Duration

	mu sync.Mutex
	// first and last CPU seen of each process, by pid; a process first
	// seen after the start counts from zero.
	first, last map[int]time.Duration
	backend     map[int]bool
	started     bool
	stop        chan struct{}
	done        chan struct{}
}

// newPGSampler returns a sampler of the database of dbURL, or nil when
// dbURL is not a Postgres URL.
func newPGSampler(dbURL string) (*pgSampler, error) {
	if !strings.HasPrefix(dbURL, "postgres://") && !strings.HasPrefix(dbURL, "postgresql://") {
		return nil, nil
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" {
		return nil, fmt.Errorf("database URL %s names no database", drive.Redact(dbURL))
	}
	return &pgSampler{db: db, interval: 50 * time.Millisecond}, nil
}

// pgCPU is what a sampler measured.
type pgCPU struct {
	backends, server time.Duration
	processes        int // backends of the database seen
}

// start takes the first sample and keeps sampling until end.
func (s *pgSampler) start() error {
	s.first, s.last, s.backend = map[int]time.Duration{}, map[int]time.Duration{}, map[int]bool{}
	if err := s.sample(true); err != nil {
		return err
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				_ = s.sample(false)
			}
		}
	}()
	return nil
}

// end takes the last sample and returns the CPU used since start.
func (s *pgSampler) end() (pgCPU, error) {
	close(s.stop)
	<-s.done
	if err := s.sample(false); err != nil {
		return pgCPU{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var c pgCPU
	for pid, last := range s.last {
		d := last - s.first[pid]
		if s.backend[pid] {
			c.backends += d
			c.processes++
		} else {
			c.server += d
		}
	}
	return c, nil
}

// sample reads the CPU of every Postgres process: at the start each
// process's CPU is its baseline, later a new process starts from zero.
func (s *pgSampler) sample(atStart bool) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("read /proc: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || string(bytes.TrimSpace(comm)) != "postgres" {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		backend, ours := classifyPostgres(string(cmdline), s.db)
		if backend && !ours {
			continue // another database's backend
		}
		cpu, err := drive.CPUTime(pid)
		if err != nil {
			continue // ended since the listing
		}
		if _, seen := s.first[pid]; !seen {
			if atStart {
				s.first[pid] = cpu
			} else {
				s.first[pid] = 0
			}
			s.backend[pid] = backend
		}
		s.last[pid] = cpu
	}
	return nil
}

// classifyPostgres reads a Postgres process's title ("postgres: [cluster:]
// user database host(port) activity" for a backend): whether it is a
// client backend and whether it is connected to db. The postmaster and the
// server's own processes (checkpointer, walwriter, ...) are not backends;
// autovacuum workers count as server processes.
func classifyPostgres(cmdline, db string) (backend, ours bool) {
	title := strings.TrimRight(strings.ReplaceAll(cmdline, "\x00", " "), " ")
	rest, ok := strings.CutPrefix(title, "postgres: ")
	if !ok {
		return false, false // the postmaster
	}
	f := strings.Fields(rest)
	if len(f) > 0 && strings.HasSuffix(f[0], ":") {
		f = f[1:] // cluster name
	}
	// A backend's title names user, database and client address (host(port)
	// or [local]); the server's processes have none.
	if len(f) < 3 || !(strings.HasSuffix(f[2], ")") || f[2] == "[local]") {
		return false, false
	}
	return true, f[1] == db
}

// freshDatabase creates a new database herald_product_<suffix> on the
// server of dbURL, connected to through the database dbURL names, and
// returns its URL and a function dropping it.
func freshDatabase(ctx context.Context, dbURL, suffix string) (string, func(), error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", nil, fmt.Errorf("parse database URL: %w", err)
	}
	name := "herald_product_" + suffix
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dbURL)))
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close()
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		_ = admin.Close()
	}, nil
}

// tableWrites is how many rows a table got, how many of its updates
// were heap-only (no new index entries), and how many times autovacuum
// cleaned it (a partitioned table's partitions summed), from
// pg_stat_user_tables. Until autovacuum runs, the claim index keeps the
// entries of every message claimed, which each claim steps over.
type tableWrites struct {
	name                string
	inserts, updates    int64
	hotUpdates, deletes int64
	autovacuums         int64
}

// pgTableWrites reads the writes of the hot tables of the database of
// dbURL, a partitioned table's summed over its partitions. The server publishes a backend's counts within about a second of
// its transactions, so it waits that long first.
func pgTableWrites(ctx context.Context, dbURL string) ([]tableWrites, error) {
	time.Sleep(1500 * time.Millisecond)
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dbURL)))
	defer db.Close()
	// A partitioned table's rows are counted in its partitions.
	rows, err := db.QueryContext(ctx, "SELECT t, sum(n_tup_ins), sum(n_tup_upd), sum(n_tup_hot_upd), sum(n_tup_del), sum(autovacuum_count) FROM ("+
		"SELECT coalesce(pg_partition_root(relid), relid)::regclass::text AS t, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, autovacuum_count "+
		"FROM pg_stat_user_tables) s WHERE t IN ('messages', 'sms_parts', 'campaigns', 'companies') GROUP BY t ORDER BY t")
	if err != nil {
		return nil, fmt.Errorf("table statistics: %w", err)
	}
	defer rows.Close()
	var out []tableWrites
	for rows.Next() {
		var t tableWrites
		if err := rows.Scan(&t.name, &t.inserts, &t.updates, &t.hotUpdates, &t.deletes, &t.autovacuums); err != nil {
			return nil, fmt.Errorf("table statistics: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("table statistics: %w", err)
	}
	return out, nil
}
