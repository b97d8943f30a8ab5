package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
)

// keyChannelQuery names the Postgres channel of key changes: one per
// database and schema, so that deployments (and test schemas) sharing a
// server do not hear each other.
const keyChannelQuery = "SELECT 'herald_keys_' || left(md5(current_database() || '.' || current_schema()), 24)"

// keyProbe is the payload of the notification a quiet listener sends
// itself to check that its connection still hears; it changes nothing.
const keyProbe = "probe"

// keyProbeAfter is how long a listener hears nothing before it probes its
// connection.
const keyProbeAfter = 30 * time.Second

// notifyKeys tells the other processes, when tx commits, that keys or
// companies changed (Postgres only: a SQLite database has one process).
func (s *Store) notifyKeys(ctx context.Context, tx *txn) error {
	if s.dialect != dialectPostgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SELECT pg_notify(?, 'changed')", s.keyChannel); err != nil {
		return fmt.Errorf("notify key change: %w", err)
	}
	return nil
}

// SharedKeys implements accounts.KeyWatcher: true on Postgres, which
// several processes share.
func (s *Store) SharedKeys() bool { return s.dialect == dialectPostgres }

// WatchAPIKeys implements accounts.KeyWatcher with Postgres LISTEN on a
// connection of its own. A listener that hears nothing for 30 s notifies
// itself, and fails when that too goes unheard. On SQLite it calls
// changed once and waits for ctx.
func (s *Store) WatchAPIKeys(ctx context.Context, changed func()) error {
	if s.dialect != dialectPostgres {
		changed()
		<-ctx.Done()
		return nil
	}
	ldb := bun.NewDB(sql.OpenDB(s.pg), pgdialect.New())
	defer func() { _ = ldb.Close() }()
	ln := pgdriver.NewListener(ldb)
	// A read under way ends only with its deadline or its connection.
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer func() {
		if stop() {
			_ = ln.Close()
		}
	}()
	if err := ln.Listen(ctx, s.keyChannel); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("sqlstore: listen for key changes: %w", err)
	}
	changed()
	probing := false
	for {
		_, payload, err := ln.ReceiveTimeout(ctx, keyProbeAfter)
		if ctx.Err() != nil {
			return nil
		}
		var ne net.Error
		switch {
		case err == nil:
			probing = false
			if payload != keyProbe {
				changed()
			}
		case errors.As(err, &ne) && ne.Timeout() && !probing:
			if err := pgdriver.Notify(ctx, ldb, s.keyChannel, keyProbe); err != nil {
				return fmt.Errorf("sqlstore: probe the key listener: %w", err)
			}
			probing = true
		default:
			return fmt.Errorf("sqlstore: listen for key changes: %w", err)
		}
	}
}
