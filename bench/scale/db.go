package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/heraldhq/herald/bench/internal/drive"
)

// database is the program's own connection to Herald's database, for the
// history's fast path and the sizes on disk (never for what is measured),
// and the SQL that differs between SQLite and Postgres.
type database struct {
	db   *sql.DB
	pg   bool
	path string // the SQLite file
}

// databaseURL is the HERALD_DATABASE_URL of db: a new SQLite file in dir
// for "sqlite", else db itself (a postgres:// URL).
func databaseURL(db, dir string) (string, error) {
	switch {
	case db == "sqlite":
		return "sqlite://" + dir + "/herald.db", nil
	case strings.HasPrefix(db, "postgres://"), strings.HasPrefix(db, "postgresql://"):
		return db, nil
	}
	return "", fmt.Errorf(`-db %q: want "sqlite" or a postgres:// URL`, drive.Redact(db))
}

// openDatabase connects to the database of dbURL with one connection.
// SQLite takes the write lock when a transaction begins and waits up to
// 30 s for it; like Herald's writer it leaves checkpoints to Herald's
// checkpointer while Herald runs.
func openDatabase(ctx context.Context, dbURL string) (*database, error) {
	d := &database{}
	if path, ok := strings.CutPrefix(dbURL, "sqlite://"); ok {
		d.path = path
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(30000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(0)"+
			"&_pragma=wal_autocheckpoint(0)&_txlock=immediate")
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		d.db = db
	} else {
		c, err := pgConnector(dbURL)
		if err != nil {
			return nil, err
		}
		d.db, d.pg = sql.OpenDB(c), true
	}
	d.db.SetMaxOpenConns(1)
	d.db.SetMaxIdleConns(1)
	d.db.SetConnMaxLifetime(0)
	d.db.SetConnMaxIdleTime(0)
	if err := d.db.PingContext(ctx); err != nil {
		d.db.Close()
		return nil, fmt.Errorf("connect to %s: %w", drive.Redact(dbURL), err)
	}
	return d, nil
}

// pgConnector parses a Postgres URL; pgdriver panics on a malformed one.
// Its statements may run for many minutes (a VACUUM of ten million
// messages), so reads and writes have no deadline of the driver's.
func pgConnector(dbURL string) (c *pgdriver.Connector, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid Postgres URL %q: %v", drive.Redact(dbURL), r)
		}
	}()
	return pgdriver.NewConnector(pgdriver.WithDSN(dbURL), pgdriver.WithReadTimeout(0), pgdriver.WithWriteTimeout(0)), nil
}

// close closes the connection.
func (d *database) close() error {
	if err := d.db.Close(); err != nil {
		return fmt.Errorf("close the database: %w", err)
	}
	return nil
}

// checkEmpty fails unless the Postgres database has no table of its own,
// and on the maintenance databases, which are no place for a run's schema.
func (d *database) checkEmpty(ctx context.Context) error {
	var name string
	var n int
	err := d.db.QueryRowContext(ctx, "SELECT current_database(), (SELECT COUNT(*) FROM information_schema.tables "+
		"WHERE table_schema NOT IN ('pg_catalog', 'information_schema'))").Scan(&name, &n)
	if err != nil {
		return fmt.Errorf("look for tables: %w", err)
	}
	if name == "postgres" || strings.HasPrefix(name, "template") {
		return fmt.Errorf("database %q is a maintenance database: give the run a new one", name)
	}
	if n > 0 {
		return fmt.Errorf("the database has %d tables: give the run an empty one", n)
	}
	return nil
}

// q is query with its ? placeholders numbered for Postgres ($1, $2, ...).
// The program's SQL has no ? in its literals.
func (d *database) q(query string) string {
	if !d.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// id is the argument that stands for the UUID s: 16 bytes on SQLite, the
// text on Postgres.
func (d *database) id(s string) (any, error) {
	if d.pg {
		return s, nil
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		return nil, fmt.Errorf("id %q is not a UUID", s)
	}
	return b, nil
}

// ts is the argument that stands for t: microseconds since the epoch on
// SQLite, a timestamptz on Postgres.
func (d *database) ts(t time.Time) any {
	if d.pg {
		return t
	}
	return t.UnixMicro()
}

// timeParam is a placeholder for a time argument (ts), typed for
// Postgres, where an untyped one makes its arithmetic ambiguous.
func (d *database) timeParam() string {
	if d.pg {
		return "CAST(? AS timestamptz)"
	}
	return "?"
}

// timeType is the column type of a time.
func (d *database) timeType() string {
	if d.pg {
		return "timestamptz"
	}
	return "INTEGER"
}

// idType is the column type of an id.
func (d *database) idType() string {
	if d.pg {
		return "uuid"
	}
	return "BLOB"
}

// plus is the time expression t later by the integer expression us of
// microseconds.
func (d *database) plus(t, us string) string {
	if d.pg {
		return "(" + t + " + (" + us + ") * interval '1 microsecond')"
	}
	return "(" + t + " + (" + us + "))"
}

// lastTwo is the integer of the last two digits of the text expression e.
func (d *database) lastTwo(e string) string {
	if d.pg {
		return "CAST(right(" + e + ", 2) AS integer)"
	}
	return "CAST(substr(" + e + ", -2) AS INTEGER)"
}

// hexOf is the lower-case hexadecimal text of the integer expression e.
func (d *database) hexOf(e string) string {
	if d.pg {
		return "to_hex(" + e + ")"
	}
	return "printf('%x', " + e + ")"
}

// uuidOf is a version 7 UUID of the millisecond time ms (an integer
// expression) whose random bits are the integer expression seq: unique
// for a unique seq.
func (d *database) uuidOf(ms, seq string) string {
	if d.pg {
		return "CAST(lpad(to_hex(CAST(" + ms + " AS bigint)), 12, '0') || '70008' || lpad(to_hex(" + seq + "), 15, '0') AS uuid)"
	}
	return "unhex(printf('%012x70008%015x', " + ms + ", " + seq + "))"
}

// idText is the canonical text of the id expression e.
func (d *database) idText(e string) string {
	if d.pg {
		return "CAST(" + e + " AS text)"
	}
	h := "hex(" + e + ")"
	return "lower(substr(" + h + ", 1, 8) || '-' || substr(" + h + ", 9, 4) || '-' || substr(" + h + ", 13, 4) || '-' || substr(" +
		h + ", 17, 4) || '-' || substr(" + h + ", 21, 12))"
}
