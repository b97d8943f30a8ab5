package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// checkpointInterval is how often the checkpointer copies the SQLite
// write-ahead log into the database file.
const checkpointInterval = 250 * time.Millisecond

// checkpointer runs SQLite WAL checkpoints in the background, on a
// connection of its own, so that the writer's commits only append to the
// log: on a bulk insert the copy then runs beside the writer on another
// core instead of inside its commits. It uses PASSIVE checkpoints, which
// never block the writer or the readers; the log file is reused from its
// start once a checkpoint has caught up with it.
type checkpointer struct {
	db     *sql.DB
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func startCheckpointer(ctx context.Context, path, pragmas string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", path+"?"+pragmas)
	if err != nil {
		return nil, fmt.Errorf("open the SQLite checkpointer: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open the SQLite checkpointer: %w", err)
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &checkpointer{db: db, cancel: cancel}
	c.done.Add(1)
	go c.run(bg)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer c.done.Done()
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A failed checkpoint (the database busy, say) is retried on
			// the next tick; the log only grows meanwhile.
			_, _ = c.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}

// close stops the checkpointer after a last checkpoint.
func (c *checkpointer) close() error {
	c.cancel()
	c.done.Wait()
	_, err := c.db.Exec("PRAGMA wal_checkpoint(PASSIVE)")
	if cerr := c.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sqlstore: close SQLite checkpointer: %w", err)
	}
	return nil
}
