package sqlstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// migrationFiles holds the schema migrations, one folder per dialect. The
// files are plain (not transactional) bun SQL migrations: the whole run
// happens in one transaction opened by migrateDB.
//
//go:embed migrations
var migrationFiles embed.FS

func (d dialect) migrationDir() string {
	if d == dialectSQLite {
		return "migrations/sqlite"
	}
	return "migrations/postgres"
}

// migrateDB applies the migrations not applied yet. db must have exactly
// one connection: the transaction opened here with a plain BEGIN spans the
// migrator's own statements, and holds a lock that serialises processes
// migrating the same database at once (SQLite: BEGIN IMMEDIATE takes the
// write lock, waiting within the busy timeout; Postgres: a
// transaction-level advisory lock keyed by the schema). A process that
// gets the lock after another one migrated finds nothing left to do.
func migrateDB(ctx context.Context, db *bun.DB, d dialect) error {
	sub, err := fs.Sub(migrationFiles, d.migrationDir())
	if err != nil {
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(sub); err != nil {
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	m := migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithTableName("herald_migrations"), migrate.WithLocksTableName("herald_migration_locks"))
	for attempt := 1; ; attempt++ {
		err = migrateLocked(ctx, db, d, m)
		if err == nil {
			return nil
		}
		if attempt == maxTxAttempts || !retryable(err) {
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sqlstore: migrate: %w", errors.Join(err, ctx.Err()))
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
}

func migrateLocked(ctx context.Context, db *bun.DB, d dialect, m *migrate.Migrator) (err error) {
	begin := []string{"BEGIN IMMEDIATE"}
	if d == dialectPostgres {
		begin = []string{"BEGIN", "SELECT pg_advisory_xact_lock(hashtext('herald.migrate.' || COALESCE(current_schema(), '')))"}
	}
	for i, q := range begin {
		if _, err := db.ExecContext(ctx, q); err != nil {
			if i > 0 {
				_, _ = db.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			}
			return fmt.Errorf("lock: %w", err)
		}
	}
	defer func() {
		if err != nil {
			_, _ = db.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("create the migration tables: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
