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
		return fmt.Errorf("migrations: %w", err)
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(sub); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	m := migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true),
		migrate.WithTableName("herald_migrations"), migrate.WithLocksTableName("herald_migration_locks"))
	for attempt := 1; ; attempt++ {
		err = migrateLocked(ctx, db, d, m)
		if err == nil {
			return nil
		}
		if attempt == maxTxAttempts || !retryable(err) {
			return fmt.Errorf("migrate: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("migrate: %w", errors.Join(err, ctx.Err()))
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

// checkSchema tells whether db holds a Herald schema with every migration
// of this version applied: a read-only open cannot migrate, so it refuses
// a database that is not Herald's (no migration table) or is older.
func checkSchema(ctx context.Context, db *bun.DB, d dialect) error {
	sub, err := fs.Sub(migrationFiles, d.migrationDir())
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	ms := migrate.NewMigrations()
	if err := ms.Discover(sub); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	exists := "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'herald_migrations'"
	if d == dialectPostgres {
		exists = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'herald_migrations'"
	}
	var n int
	if err := db.QueryRowContext(ctx, exists).Scan(&n); err != nil {
		return fmt.Errorf("read the schema: %w", err)
	}
	if n == 0 {
		return errors.New("not a Herald database (it has no herald_migrations table)")
	}
	rows, err := db.QueryContext(ctx, "SELECT name FROM herald_migrations")
	if err != nil {
		return fmt.Errorf("read the applied migrations: %w", err)
	}
	applied := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("read the applied migrations: %w", err)
		}
		applied[name] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read the applied migrations: %w", err)
	}
	missing := 0
	for _, m := range ms.Sorted() {
		if !applied[m.Name] {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("the schema lacks %d migrations of this version of Herald (herald serve applies them)", missing)
	}
	return nil
}
