package sqlstore_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
)

// pgProxy stands between a store and Postgres, to cut the database off:
// up, it forwards connections; down, it refuses new ones and has closed
// those it carried; starting, it answers every new connection as a
// Postgres that is starting up does (FATAL 57P03).
type pgProxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	mode  string
	conns []net.Conn
}

func newPGProxy(t *testing.T, target string) *pgProxy {
	p := &pgProxy{t: t, target: target, mode: "up"}
	p.listen("127.0.0.1:0")
	t.Cleanup(func() { p.set("down") })
	return p
}

func (p *pgProxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	require.NoError(p.t, err)
	p.ln, p.addr = ln, ln.Addr().String()
	go p.serve(ln)
}

func (p *pgProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		if mode == "starting" {
			go startingUp(c)
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, up)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

// set changes the mode: down and starting close every connection (a
// restarting server dropped them), down also the listener; up and
// starting listen again on the same address.
func (p *pgProxy) set(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.mode
	p.mode = mode
	if mode != "up" {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
	switch {
	case mode == "down":
		_ = p.ln.Close()
	case was == "down":
		p.listen(p.addr)
	}
}

// startingUp reads a startup message and answers it with the error of a
// Postgres server that is starting up, then closes the connection.
func startingUp(c net.Conn) {
	defer c.Close()
	var n [4]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return
	}
	if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(n[:]))-4); err != nil {
		return
	}
	var body []byte
	for _, f := range []string{"SFATAL", "VFATAL", "C57P03", "Mthe database system is starting up"} {
		body = append(append(body, f...), 0)
	}
	body = append(body, 0)
	msg := append([]byte{'E', 0, 0, 0, 0}, body...)
	binary.BigEndian.PutUint32(msg[1:], uint32(len(body)+4))
	_, _ = c.Write(msg)
}

// TestPostgresUnavailable: while Postgres cannot be reached, or answers
// that it is starting up, reads and writes fail with the Unavailable error
// of the store (a 503 with Retry-After at the HTTP edge), not an internal
// one; once it is back, the same store serves again, its dead pooled
// connections dropped.
func TestPostgresUnavailable(t *testing.T) {
	raw := pgtest.SchemaURL(t)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	proxy := newPGProxy(t, u.Host)
	u.Host = proxy.addr
	s := open(t, u.String())
	ids := messaging.NewIDGenerator(nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	co := messaging.Company{ID: ids.New(), Name: "Up", CreatedAt: now}
	require.NoError(t, s.CreateCompany(t.Context(), &co))
	_, err = s.GetCompany(t.Context(), co.ID)
	require.NoError(t, err)

	requireUnavailable := func(what string, err error) {
		t.Helper()
		var e *messaging.Error
		require.True(t, errors.As(err, &e), "%s: %v is not a messaging.Error", what, err)
		require.Equal(t, messaging.Unavailable, e.Code, "%s: %v", what, err)
		require.Equal(t, messaging.DefaultStoreRetryAfter, e.RetryAfter, what)
	}
	for _, mode := range []string{"down", "starting"} {
		proxy.set(mode)
		_, err = s.GetCompany(t.Context(), co.ID)
		requireUnavailable(mode+": read", err)
		other := messaging.Company{ID: ids.New(), Name: "Down", CreatedAt: now}
		requireUnavailable(mode+": write", s.CreateCompany(t.Context(), &other))
		_, err = s.PendingCount(t.Context(), co.ID)
		requireUnavailable(mode+": another read", err)

		proxy.set("up")
		got, err := s.GetCompany(t.Context(), co.ID)
		require.NoError(t, err, "after %s", mode)
		require.Equal(t, "Up", got.Name)
		back := messaging.Company{ID: ids.New(), Name: "Back " + mode, CreatedAt: now}
		require.NoError(t, s.CreateCompany(t.Context(), &back), "after %s", mode)
	}
}

// TestSQLiteBusyUnavailable: a SQLite database whose write lock another
// process holds past the busy timeout is Unavailable for writes (503 with
// Retry-After), not an internal error; reads go on.
func TestSQLiteBusyUnavailable(t *testing.T) {
	url := sqliteURL(t)
	s, err := sqlstore.Open(t.Context(), url, sqlstore.Config{BusyTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ids := messaging.NewIDGenerator(nil)
	co := messaging.Company{ID: ids.New(), Name: "Busy", CreatedAt: time.Now().UTC()}
	require.NoError(t, s.CreateCompany(t.Context(), &co))

	other := rawDB(t, url)
	conn, err := other.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.NoError(t, err)

	next := messaging.Company{ID: ids.New(), Name: "Blocked", CreatedAt: time.Now().UTC()}
	err = s.CreateCompany(t.Context(), &next)
	var e *messaging.Error
	require.True(t, errors.As(err, &e), "%v is not a messaging.Error", err)
	require.Equal(t, messaging.Unavailable, e.Code)
	_, err = s.GetCompany(t.Context(), co.ID)
	require.NoError(t, err, "readers are not blocked")

	_, err = conn.ExecContext(t.Context(), "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, s.CreateCompany(t.Context(), &next))
}
