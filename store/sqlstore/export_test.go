package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strings"
	"testing/fstest"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/migrate"

	"github.com/heraldhq/herald/messaging"
)

// MigrateBefore applies to the database at rawURL (Postgres, or a
// sqlite:// file) the migrations whose names sort before name: the schema
// of an earlier version, for the tests of a migration on a database
// holding data.
func MigrateBefore(ctx context.Context, rawURL, name string) error {
	d := dialectPostgres
	var msql *sql.DB
	if path, ok := strings.CutPrefix(rawURL, "sqlite://"); ok {
		d = dialectSQLite
		var err error
		if msql, err = sql.Open("sqlite", path); err != nil {
			return err
		}
	} else {
		connector, err := pgConnector(rawURL, false)
		if err != nil {
			return err
		}
		msql = sql.OpenDB(connector)
	}
	msql.SetMaxOpenConns(1)
	var db *bun.DB
	if d == dialectSQLite {
		db = bun.NewDB(msql, sqlitedialect.New())
	} else {
		db = bun.NewDB(msql, pgdialect.New())
	}
	defer db.Close()
	sub, err := fs.Sub(migrationFiles, d.migrationDir())
	if err != nil {
		return err
	}
	files, err := fs.ReadDir(sub, ".")
	if err != nil {
		return err
	}
	older := fstest.MapFS{}
	for _, f := range files {
		if f.Name() < name {
			b, err := fs.ReadFile(sub, f.Name())
			if err != nil {
				return err
			}
			older[f.Name()] = &fstest.MapFile{Data: b}
		}
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(older); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	m := migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithTableName("herald_migrations"), migrate.WithLocksTableName("herald_migration_locks"))
	return migrateLocked(ctx, db, d, m)
}

// WriteReplays records the keys of several SeenAll calls as one group
// does, in one transaction, and reports for each key whether it was there
// before.
func (s *Store) WriteReplays(calls [][]string, until time.Time) ([][]bool, error) {
	items := make([]replayItem, len(calls))
	for i, keys := range calls {
		items[i] = replayItem{keys: keys, until: until}
	}
	return s.writeReplays(items)
}

// ForgetEndpoints makes the next status changes lock their messages
// without what the events' data needs, as a process does before it found
// an endpoint: their message.status events are written with their status
// only.
func (s *Store) ForgetEndpoints() { s.describeEvents.Store(false) }

// SetClaimFloorSpan sets how long a claim floor of s serves (Postgres).
func SetClaimFloorSpan(s *Store, d time.Duration) {
	s.floors.mu.Lock()
	s.floors.span = d
	s.floors.mu.Unlock()
}

// ExplainClaim returns the plan, with its buffers, of the Postgres SMS
// claim of limit messages due at now as ClaimDue would run it, with s's
// claim floors or with none; the claim is rolled back.
func ExplainClaim(ctx context.Context, s *Store, now time.Time, limit int, withFloors bool) (string, error) {
	floors := "[]"
	if withFloors {
		var err error
		if floors, _, err = s.floors.current(messaging.ChannelSMS, time.Now()); err != nil {
			return "", err
		}
	}
	tx, err := s.db.DB.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback() }()
	q := s.placeholders("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) " + s.queries().claimPostgres[0])
	rows, err := tx.QueryContext(ctx, q, floors, s.ts(now), limit, limit, s.ts(now.Add(time.Hour)), "explain", s.ts(now))
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		b.WriteString(line + "\n")
	}
	return b.String(), rows.Err()
}
