package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/messaging"
)

// Config tunes a Store. The zero value is ready to use.
type Config struct {
	// MaxOpenConns bounds the Postgres connection pool and the SQLite
	// reader pool. Zero means 4 per CPU, at least 4.
	MaxOpenConns int
	// BusyTimeout is how long a SQLite connection waits for a lock held by
	// another process before it fails. Zero means 10 seconds.
	BusyTimeout time.Duration
	// ReadOnly opens an existing Herald database for reading only: no
	// file is created and no migration runs (SQLite opens the file with
	// mode=ro; Postgres sessions default to read-only transactions). Open
	// fails when the database does not exist, is not a Herald database,
	// or lacks migrations this version has. Every write fails.
	ReadOnly bool
	// Secrets encrypts the secrets the store keeps (SMPP connector
	// passwords, webhook secrets, chat service credentials) and decrypts
	// them. With it, Open
	// encrypts the secrets stored in clear by earlier versions and fails
	// when a stored secret is sealed under a key it does not hold.
	// Without it, the store refuses to write a secret
	// (messaging.SecretKeyMissing) and still reads those stored in clear.
	Secrets *secretbox.Box
	// PartitionSpan is the range of creation times each partition of
	// messages holds on Postgres: the store makes them two spans ahead of
	// the clock, and retention drops an old one whole. Zero means
	// DefaultPartitionSpan; less than MinPartitionSpan means
	// MinPartitionSpan. SQLite ignores it.
	PartitionSpan time.Duration
}

func (c Config) maxOpenConns() int {
	if c.MaxOpenConns > 0 {
		return c.MaxOpenConns
	}
	return max(4, 4*runtime.GOMAXPROCS(0))
}

func (c Config) busyTimeout() time.Duration {
	if c.BusyTimeout > 0 {
		return c.BusyTimeout
	}
	return 10 * time.Second
}

// dialect tells the two databases apart where their SQL differs.
type dialect int

const (
	dialectSQLite dialect = iota + 1
	dialectPostgres
)

// Store implements campaign.Store, delivery.Store and survey.Store on a
// SQL database. It is safe for concurrent use.
type Store struct {
	dialect dialect
	// db runs writes: on SQLite its pool is the one writer connection.
	db *bun.DB
	// read runs reads: on SQLite a pool of read-only connections, on
	// Postgres the same pool as db.
	read *bun.DB
	// checkpointer copies SQLite's write-ahead log into the database file
	// in the background (nil on Postgres).
	checkpointer *checkpointer
	// stmts are the prepared statements of the delivery and admission
	// paths on the writer.
	stmts stmtCache
	// readStmts are the prepared statements of the hot reads.
	readStmts readStmts
	// describeEvents is set once a write of message.status events found an
	// endpoint subscribed, an endpoint was registered or a lease found
	// endpoints, and cleared when a lease finds none: the messages a status
	// update locks are read with what the events' data needs while it is
	// set (lockMessages).
	describeEvents atomic.Bool
	// ids makes the ids of webhook events and deliveries.
	idGen *messaging.IDGenerator
	// pg connects to Postgres (nil on SQLite): the listener of key
	// changes opens its own connection with it.
	pg *pgdriver.Connector
	// keyChannel is the Postgres channel key changes are notified on, one
	// per database and schema.
	keyChannel string
	// secrets seals and opens stored secrets; nil: none is written.
	secrets *secretbox.Box
	// partitionSpan is Config.PartitionSpan with its default.
	partitionSpan time.Duration
	// partitions makes the partitions of messages in the background
	// (Postgres, not read-only; nil otherwise).
	partitions *partitioner
	// inserted marks the partitions of messages that took many rows
	// since their statistics (AnalyzeGrownPartitions).
	inserted insertMarks
	// replays groups the callback keys of concurrent SeenAll calls into
	// one transaction.
	replays *groupcommit.Committer[replayItem, []bool]
	// floors are the claim floors of this process (Postgres).
	floors claimFloors
}

// Open connects to the database named by rawURL (sqlite://path or
// postgres://...), creates or migrates its schema (unless cfg.ReadOnly),
// and returns the store. Its errors name the database, the password of a
// URL masked.
func Open(ctx context.Context, rawURL string, cfg Config) (*Store, error) {
	var s *Store
	var err error
	switch {
	case strings.HasPrefix(rawURL, "sqlite://"):
		s, err = openSQLite(ctx, strings.TrimPrefix(rawURL, "sqlite://"), cfg)
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		s, err = openPostgres(ctx, rawURL, cfg)
	default:
		return nil, fmt.Errorf("sqlstore: unsupported database URL %q: want sqlite://path or postgres://...", redact(rawURL))
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", redact(rawURL), err)
	}
	s.replays = s.newReplays()
	s.secrets = cfg.Secrets
	if cfg.Secrets != nil && !cfg.ReadOnly {
		if _, err := s.SealSecrets(ctx, false); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("sqlstore: open %s: encrypt the secrets stored in clear: %w", redact(rawURL), err)
		}
	}
	if cfg.Secrets != nil {
		if err := s.checkSecretKeys(ctx); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("sqlstore: open %s: %w", redact(rawURL), err)
		}
	}
	return s, nil
}

// Close closes every connection of the store.
func (s *Store) Close() error {
	var err error
	if s.checkpointer != nil {
		err = s.checkpointer.close()
	}
	if s.partitions != nil {
		s.partitions.close()
	}
	s.closeStmts()
	s.closeReadStmts()
	err = errors.Join(err, s.db.Close())
	if s.read != s.db {
		err = errors.Join(err, s.read.Close())
	}
	if err != nil {
		return fmt.Errorf("sqlstore: close: %w", err)
	}
	return nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) (err error) {
	defer keepUnavailable(&err)
	if err := s.read.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlstore: ping: %w", err)
	}
	return nil
}

func openSQLite(ctx context.Context, path string, cfg Config) (*Store, error) {
	switch {
	case path == "":
		return nil, errors.New("sqlite:// needs a file path")
	case path == ":memory:" || strings.Contains(path, "mode=memory"):
		return nil, errors.New("in-memory SQLite databases are not supported (each pooled connection would get its own); use a file in a temporary directory")
	case strings.ContainsAny(path, "?#"):
		return nil, fmt.Errorf("the SQLite path %q must not contain '?' or '#'", path)
	}
	busy := strconv.FormatInt(cfg.busyTimeout().Milliseconds(), 10)
	common := "_pragma=busy_timeout(" + busy + ")&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(0)"
	if cfg.ReadOnly {
		return openSQLiteReadOnly(ctx, path, common, cfg)
	}
	if dir := filepath.Dir(path); dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("the directory %q of the database file does not exist", dir)
		}
	}

	// The writer: one connection, IMMEDIATE transactions, a page cache of
	// 16 MiB for bulk inserts into the message indexes (64 MiB inserted
	// 200,000 messages no faster and cost the process 90 MiB more at its
	// peak). It never
	// checkpoints on commit: the checkpointer does, on its own connection,
	// so a commit does not also pay for copying the log.
	wsql, err := sql.Open("sqlite", path+"?"+common+"&_pragma=journal_mode(WAL)&_pragma=cache_size(-16384)&_pragma=wal_autocheckpoint(0)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open the SQLite writer: %w", err)
	}
	wsql.SetMaxOpenConns(1)
	wsql.SetMaxIdleConns(1)
	wsql.SetConnMaxLifetime(0)
	wsql.SetConnMaxIdleTime(0)
	s := &Store{dialect: dialectSQLite, db: bun.NewDB(wsql, sqlitedialect.New()), idGen: messaging.NewIDGenerator(time.Now)}
	if err := migrateDB(ctx, s.db, dialectSQLite); err != nil {
		_ = s.db.Close()
		return nil, err
	}

	// The readers: WAL lets them read the last committed state while the
	// writer writes.
	n := cfg.maxOpenConns()
	rsql, err := sql.Open("sqlite", path+"?"+common+"&_pragma=cache_size(-8192)&_query_only=1")
	if err != nil {
		_ = s.db.Close()
		return nil, fmt.Errorf("open the SQLite readers: %w", err)
	}
	rsql.SetMaxOpenConns(n)
	rsql.SetMaxIdleConns(n)
	s.read = bun.NewDB(rsql, sqlitedialect.New())
	if err := s.read.PingContext(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open the SQLite readers: %w", err)
	}
	if s.checkpointer, err = startCheckpointer(ctx, path, common); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// openSQLiteReadOnly opens the existing database file at path with
// mode=ro: SQLite creates nothing, and every connection only reads.
func openSQLiteReadOnly(ctx context.Context, path, pragmas string, cfg Config) (*Store, error) {
	if fi, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("no database file at this path")
		}
		return nil, err
	} else if fi.IsDir() {
		return nil, errors.New("the path is a directory, not a database file")
	}
	// A file: URI, so that SQLite reads mode=ro; % is its escape.
	uri := "file:" + strings.ReplaceAll(path, "%", "%25") + "?mode=ro&" + pragmas + "&_query_only=1"
	rsql, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, fmt.Errorf("open the SQLite readers: %w", err)
	}
	n := cfg.maxOpenConns()
	rsql.SetMaxOpenConns(n)
	rsql.SetMaxIdleConns(n)
	db := bun.NewDB(rsql, sqlitedialect.New())
	if err := checkSchema(ctx, db, dialectSQLite); err != nil {
		_ = db.Close()
		return nil, err
	}
	return &Store{dialect: dialectSQLite, db: db, read: db, idGen: messaging.NewIDGenerator(time.Now)}, nil
}

func openPostgres(ctx context.Context, rawURL string, cfg Config) (*Store, error) {
	connector, err := pgConnector(rawURL, cfg.ReadOnly)
	if err != nil {
		return nil, err
	}
	if cfg.ReadOnly {
		return openPostgresReadOnly(ctx, connector, cfg)
	}
	// Migrations run on a connection of their own: the migrator's
	// statements and the transaction that locks them must share it.
	msql := sql.OpenDB(unavailableConnector{connector})
	msql.SetMaxOpenConns(1)
	mdb := bun.NewDB(msql, pgdialect.New())
	err = migrateDB(ctx, mdb, dialectPostgres)
	if cerr := mdb.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close the migration connection: %w", cerr)
	}
	if err != nil {
		return nil, err
	}

	s, err := postgresStore(ctx, connector, cfg, nil)
	if err != nil {
		return nil, err
	}
	if err := s.startPartitioner(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// openPostgresReadOnly opens a pool whose sessions begin read-only
// transactions, without migrating.
func openPostgresReadOnly(ctx context.Context, connector *pgdriver.Connector, cfg Config) (*Store, error) {
	return postgresStore(ctx, connector, cfg, func(db *bun.DB) error {
		return checkSchema(ctx, db, dialectPostgres)
	})
}

// postgresStore opens the pool of a Postgres store through connector,
// checks it answers, runs check on it when not nil, and names the store's
// key channel.
func postgresStore(ctx context.Context, connector *pgdriver.Connector, cfg Config, check func(*bun.DB) error) (*Store, error) {
	n := cfg.maxOpenConns()
	psql := sql.OpenDB(unavailableConnector{connector})
	psql.SetMaxOpenConns(n)
	psql.SetMaxIdleConns(n)
	db := bun.NewDB(psql, pgdialect.New())
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	if check != nil {
		if err := check(db); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	s := &Store{dialect: dialectPostgres, db: db, read: db, idGen: messaging.NewIDGenerator(time.Now), pg: connector,
		partitionSpan: cfg.partitionSpan()}
	if err := db.QueryRowContext(ctx, keyChannelQuery).Scan(&s.keyChannel); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlstore: connect to Postgres: name the key channel: %w", err)
	}
	return s, nil
}

// pgConnector parses a Postgres URL; pgdriver panics on a malformed one.
// A read-only connector's sessions default to read-only transactions.
func pgConnector(rawURL string, readOnly bool) (c *pgdriver.Connector, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid Postgres URL: %v", r)
		}
	}()
	opts := []pgdriver.Option{pgdriver.WithDSN(rawURL), pgdriver.WithTracing(false), withCustomPlans,
		pgdriver.WithResetSessionFunc(pgConnAlive)}
	if readOnly {
		opts = append(opts, withReadOnly)
	}
	return pgdriver.NewConnector(append(opts, withIOTimeouts(rawURL)...)...), nil
}

// pgIOTimeout bounds one read or one write on a Postgres connection when
// the URL sets no bound of its own (read_timeout, write_timeout or
// timeout) and the caller's context has no earlier deadline. The
// driver's default of 10 s cut off statements that run longer for good
// reasons on large tables (herald check counting tens of millions of
// messages, a purge batch waiting beside delivery); five minutes still
// ends a connection to a server that stopped answering.
const pgIOTimeout = 5 * time.Minute

// withIOTimeouts is pgIOTimeout for reads and writes, each unless the URL
// sets its own.
func withIOTimeouts(rawURL string) []pgdriver.Option {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	q := u.Query()
	var opts []pgdriver.Option
	if !q.Has("timeout") && !q.Has("read_timeout") {
		opts = append(opts, pgdriver.WithReadTimeout(pgIOTimeout))
	}
	if !q.Has("timeout") && !q.Has("write_timeout") {
		opts = append(opts, pgdriver.WithWriteTimeout(pgIOTimeout))
	}
	return opts
}

// withCustomPlans sets plan_cache_mode to force_custom_plan on every
// connection, unless the URL sets it. The delivery and admission
// statements are prepared once per connection and run for the life of
// the process. A plan kept for good (a generic plan) is made from the
// table sizes of its moment: one made while sms_parts was small scanned
// the whole table for each receipt batch once it had grown, and with
// force_generic_plan that came back whenever autoanalyze replanned the
// receipt lookups on a small table (64 % of the backends' CPU in a
// profile). Planned on each run, they cost some 0.1 ms more each and
// follow the tables as they grow.
func withCustomPlans(c *pgdriver.Config) {
	if _, ok := c.ConnParams["plan_cache_mode"]; ok {
		return
	}
	params := make(map[string]any, len(c.ConnParams)+1)
	maps.Copy(params, c.ConnParams)
	params["plan_cache_mode"] = "force_custom_plan"
	c.ConnParams = params
}

// withReadOnly makes every transaction of the session read-only by
// default (default_transaction_read_only).
func withReadOnly(c *pgdriver.Config) {
	params := make(map[string]any, len(c.ConnParams)+1)
	maps.Copy(params, c.ConnParams)
	params["default_transaction_read_only"] = "on"
	c.ConnParams = params
}

// redact hides the password of a database URL.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	return u.Redacted()
}

// txn is a write transaction and the connection it runs on (Postgres COPY
// needs the connection itself).
type txn struct {
	bun.Tx
	conn bun.Conn
	// after runs once the transaction is committed.
	after []func()
}

// afterCommit runs fn once the transaction is committed; not at all when
// it is rolled back.
func (tx *txn) afterCommit(fn func()) { tx.after = append(tx.after, fn) }

// maxTxAttempts bounds how often a transaction that lost a deadlock, a
// serialisation conflict or a busy lock is run again.
const maxTxAttempts = 5

// write runs fn in a write transaction and commits it. fn may run more
// than once when the database asks for a retry; it must not keep state
// from one run to the next.
func (s *Store) write(ctx context.Context, op string, fn func(tx *txn) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = s.writeOnce(ctx, fn)
		if err == nil || attempt == maxTxAttempts || !retryable(err) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", op, errors.Join(err, ctx.Err()))
		case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func (s *Store) writeOnce(ctx context.Context, fn func(tx *txn) error) (err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("get a connection: %w", err)
	}
	defer func() {
		if cerr := conn.Close(); cerr != nil && !errors.Is(cerr, sql.ErrConnDone) && err == nil {
			err = fmt.Errorf("release the connection: %w", cerr)
		}
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	t := &txn{Tx: tx, conn: conn}
	if err := fn(t); err != nil {
		// A SQLite INSERT OR ROLLBACK that failed has already ended the
		// transaction; the rollback error then says so and adds nothing.
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for _, fn := range t.after {
		fn()
	}
	return nil
}
