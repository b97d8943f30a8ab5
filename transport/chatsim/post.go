package chatsim

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// poster posts signed callbacks for one worker.
type poster interface {
	// post sends one callback body and reports whether it was answered
	// 200.
	post(body []byte) bool
	// close releases the poster's connection, if any.
	close()
}

// newPoster returns the poster of one worker: a connPoster for a plain
// http CallbackURL and no CallbackHTTP, else an httpPoster.
func (c *callbacks) newPoster() poster {
	mac := hmac.New(sha256.New, []byte(c.cfg.CallbackSecret))
	if c.target == nil {
		return &httpPoster{c: c, mac: mac}
	}
	p := &connPoster{c: c, mac: mac, addr: c.target.Host,
		dialer: net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}}
	if c.target.Port() == "" {
		p.addr = net.JoinHostPort(c.target.Hostname(), "80")
	}
	p.head = fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: herald-chatsim\r\nContent-Type: application/json\r\n"+
		"X-Content-Signature: ", c.target.RequestURI(), c.target.Host)
	p.stop = context.AfterFunc(c.ctx, p.shutdown)
	return p
}

// signature appends the hex HMAC-SHA256 of body keyed with the secret.
func signature(b []byte, mac hash.Hash, body []byte) []byte {
	mac.Reset()
	mac.Write(body)
	var sum [sha256.Size]byte
	return hex.AppendEncode(b, mac.Sum(sum[:0]))
}

// httpPoster posts through an http.Client (Config.CallbackHTTP, or one of
// the simulator's own for an https CallbackURL).
type httpPoster struct {
	c   *callbacks
	mac hash.Hash
	sig []byte
}

func (p *httpPoster) post(body []byte) bool {
	c := p.c
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.CallbackTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.CallbackURL, bytes.NewReader(body))
	if err != nil {
		c.log.Error("chatsim: callback request", "err", err)
		return false
	}
	p.sig = signature(p.sig[:0], p.mac, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Content-Signature", string(p.sig))
	resp, err := c.client.Do(req)
	if err != nil {
		c.log.Debug("chatsim: callback failed", "err", err)
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (p *httpPoster) close() {}

// connPoster posts over a keep-alive HTTP/1.1 connection of its own: a
// callback is one write of the whole request and the read of its answer,
// with no goroutine between the worker and the connection.
type connPoster struct {
	c      *callbacks
	mac    hash.Hash
	addr   string
	dialer net.Dialer
	head   []byte // the request line and fixed headers, up to the signature
	req    []byte
	br     *bufio.Reader
	stop   func() bool

	mu     sync.Mutex
	conn   net.Conn
	closed bool
}

// errPosterClosed is returned once the simulator closes.
var errPosterClosed = errors.New("chatsim: closed")

func (p *connPoster) post(body []byte) bool {
	for {
		conn, reused, err := p.connect()
		if err != nil {
			p.c.log.Debug("chatsim: callback failed", "err", err)
			return false
		}
		ok, err := p.exchange(conn, body)
		if err == nil {
			return ok
		}
		p.drop(conn)
		// A kept connection the server closed meanwhile fails before any
		// answer: the callback goes again at once on a new one.
		if !reused || !errors.Is(err, errNoAnswer) {
			p.c.log.Debug("chatsim: callback failed", "err", err)
			return false
		}
	}
}

// errNoAnswer marks a failure before any byte of the answer was read.
var errNoAnswer = errors.New("no answer")

// exchange writes the request of body and reads its answer.
func (p *connPoster) exchange(conn net.Conn, body []byte) (bool, error) {
	if err := conn.SetDeadline(time.Now().Add(p.c.cfg.CallbackTimeout)); err != nil {
		return false, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	b := append(p.req[:0], p.head...)
	b = signature(b, p.mac, body)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	p.req = b
	if _, err := conn.Write(b); err != nil {
		return false, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	if _, err := p.br.Peek(1); err != nil {
		return false, fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	resp, err := http.ReadResponse(p.br, nil)
	if err != nil {
		return false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return false, err
	}
	if resp.Close {
		p.drop(conn)
	}
	return resp.StatusCode == http.StatusOK, nil
}

// connect returns the poster's connection, dialled if need be, and
// whether it was kept from a previous callback.
func (p *connPoster) connect() (net.Conn, bool, error) {
	p.mu.Lock()
	closed, conn := p.closed, p.conn
	p.mu.Unlock()
	switch {
	case closed:
		return nil, false, errPosterClosed
	case conn != nil:
		return conn, true, nil
	}
	ctx, cancel := context.WithTimeout(p.c.ctx, p.c.cfg.CallbackTimeout)
	defer cancel()
	conn, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = conn.Close()
		return nil, false, errPosterClosed
	}
	p.conn = conn
	if p.br == nil {
		p.br = bufio.NewReaderSize(conn, 4<<10)
	} else {
		p.br.Reset(conn)
	}
	return conn, false, nil
}

// drop closes conn; the next callback dials again.
func (p *connPoster) drop(conn net.Conn) {
	_ = conn.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == conn {
		p.conn = nil
	}
}

// shutdown closes the connection for good, ending an exchange in
// progress: the simulator is closing.
func (p *connPoster) shutdown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn = nil
	}
}

func (p *connPoster) close() {
	p.stop()
	p.shutdown()
}
