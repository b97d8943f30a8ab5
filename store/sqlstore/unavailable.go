package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/heraldhq/herald/messaging"
)

// unavailable returns err as a messaging.StoreUnavailable (a 503 with
// Retry-After at the HTTP edge) when it says that the database cannot be
// reached or is not taking work for now: a connection refused or lost,
// Postgres starting up, shutting down or out of connections, SQLite still
// locked by another process after the busy timeout or its disk full. Any
// other error, nil included, is returned as it is.
func unavailable(err error) error {
	if err == nil || messaging.IsCode(err, messaging.Unavailable) || !isUnavailable(err) {
		return err
	}
	return messaging.StoreUnavailable(err)
}

// isUnavailable reports whether err is one of those unavailable maps.
func isUnavailable(err error) bool {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		code := pgErr.Field('C')
		switch {
		case strings.HasPrefix(code, "08"): // connection exception
			return true
		case code == "57P01", code == "57P02", code == "57P03": // admin or crash shutdown, cannot connect now
			return true
		case code == "53300": // too many connections
			return true
		}
		return false
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL:
			return true
		}
		return false
	}
	var opErr *net.OpError
	switch {
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
		return true
	case errors.As(err, &opErr):
		return true
	}
	return false
}

// unavailableConnector makes the errors of new connections that
// unavailable recognises StoreUnavailable errors: while Postgres is down or
// starting, every request fails there, before any statement.
type unavailableConnector struct {
	driver.Connector
}

// Connect implements driver.Connector.
func (c unavailableConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	return cn, nil
}

// pgConnAlive is the check made before a pooled Postgres connection is
// used again: a server that restarted or shut down has written its last
// error on the connection and closed it, so anything to read, or the end
// of the stream, means the connection is gone (driver.ErrBadConn: the pool
// drops it and takes or opens another). A read that finds nothing waiting
// costs one system call.
func pgConnAlive(_ context.Context, cn *pgdriver.Conn) error {
	nc := cn.Conn()
	if err := nc.SetReadDeadline(time.Now()); err != nil {
		return driver.ErrBadConn
	}
	var b [1]byte
	n, err := nc.Read(b[:])
	if derr := nc.SetReadDeadline(time.Time{}); derr != nil {
		return driver.ErrBadConn
	}
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		return driver.ErrBadConn
	}
	return nil
}

// keepUnavailable makes *err a StoreUnavailable error when unavailable
// recognises it: every exported method of the Store defers it, so that
// an unreachable database is reported the same way by reads and writes.
func keepUnavailable(err *error) {
	*err = unavailable(*err)
}
