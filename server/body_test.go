package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/transport/chat"
)

// guardLimit bounds every wait of these tests on the server, so that a
// regression fails instead of hanging; no test asserts a duration.
const guardLimit = 30 * time.Second

// chatCallbacks is the chat callback endpoint, mounted with Config.Extra
// as herald serve mounts it.
var chatCallbacks = chat.CallbackHandler(chat.CallbackConfig{Secret: "callback-secret", Reporter: nopReporter{}})

// nopReporter takes every report and stores nothing.
type nopReporter struct{ delivery.Reporter }

func (nopReporter) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	return make([]delivery.ChatEventOutcome, len(ss)), nil
}

func (nopReporter) ChatInbound(context.Context, delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	return delivery.ChatEventIgnored, nil
}

// rawConn is a client connection that writes requests byte by byte as the
// test says, and reads the answers.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	rd   *bufio.Reader
}

func dial(t testing.TB, srv *httptest.Server) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(guardLimit)))
	return &rawConn{t: t, conn: c, rd: bufio.NewReader(c)}
}

// head writes a request head; headers are "Name: value" lines.
func (c *rawConn) head(method, path string, headers ...string) {
	c.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: herald.test\r\nContent-Type: application/json\r\n", method, path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	c.write(b.String())
}

func (c *rawConn) write(s string) {
	c.t.Helper()
	_, err := io.WriteString(c.conn, s)
	require.NoError(c.t, err)
}

// answer reads one answer, with its body.
func (c *rawConn) answer(method string) (*http.Response, []byte) {
	c.t.Helper()
	res, err := http.ReadResponse(c.rd, &http.Request{Method: method})
	require.NoError(c.t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(c.t, err)
	return res, body
}

// requireClosed asserts that the server closed the connection: reading
// ends, and not because of the test's own deadline.
func (c *rawConn) requireClosed() {
	c.t.Helper()
	_, err := c.rd.ReadByte()
	require.Error(c.t, err)
	require.False(c.t, errors.Is(err, os.ErrDeadlineExceeded), "the server left the connection open")
}

// requireErrorBody asserts the error format and its name.
func requireErrorBody(t testing.TB, body []byte, name string) {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "body: %s", body)
	require.Equal(t, name, m["error"], "body: %s", body)
	require.NotEmpty(t, m["message"])
}

func TestStalledBodiesTimeOut(t *testing.T) {
	e := newEnv(t, func(c *envConfig) {
		c.quiet = true
		c.tune = func(sc *server.Config) {
			sc.BodyReadTimeout = 200 * time.Millisecond
			sc.Extra = map[string]http.Handler{"/callbacks/": chatCallbacks}
		}
	})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	key := "X-API-Key: " + e.key
	cases := []struct {
		name    string
		path    string
		headers []string
		partial string
		status  int
		error   string
	}{
		{"bulk send", "/api/v1/sms/promotional", []string{key, "Content-Length: 1000"}, `{"templateId":"`, 408, "Request Timeout"},
		{"bulk send, chunked", "/api/v1/chat/send", []string{key, "Transfer-Encoding: chunked"}, "5\r\n{\"rec\r\n", 408, "Request Timeout"},
		{"direct send, nothing of the body", "/api/v1/sms/send", []string{key, "Content-Length: 500"}, "", 408, "Request Timeout"},
		{"template", "/api/v1/templates/sms", []string{key, "Content-Length: 100"}, `{"name":`, 408, "Request Timeout"},
		{"add message", "/api/v1/sms/campaigns/0190f5c0-0000-7000-8000-000000000000/messages", []string{key, "Content-Length: 100"}, `{`, 408, "Request Timeout"},
		{"admin", "/admin/v1/companies", []string{"Authorization: Bearer " + adminToken, "Content-Length: 100"}, `{"na`, 408, "Request Timeout"},
		{"callback, no key needed", "/callbacks/chat", []string{"Content-Length: 1000"}, `{"event":`, 408, "Request Timeout"},
		{"callback, chunked", "/callbacks/chat", []string{"Transfer-Encoding: chunked"}, "3\r\n{\"e\r\n", 408, "Request Timeout"},
		{"no key: refused unread", "/api/v1/sms/promotional", []string{"Content-Length: 1000"}, `{"templateId":"`, 401, "Unauthorized"},
		{"no key, small body", "/api/v1/templates/sms", []string{"Content-Length: 100"}, `{"n`, 401, "Unauthorized"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := dial(t, srv)
			conn.head("POST", c.path, c.headers...)
			conn.write(c.partial)
			res, body := conn.answer("POST")
			require.Equal(t, c.status, res.StatusCode, "body: %s", body)
			if c.error != "" {
				requireErrorBody(t, body, c.error)
			}
			if c.status == http.StatusRequestTimeout {
				require.True(t, res.Close, "a timed-out body closes its connection")
			}
			conn.requireClosed()
		})
	}
}

func TestStalledBodiesLeaveNoGoroutines(t *testing.T) {
	e := newEnv(t, func(c *envConfig) {
		c.quiet = true
		c.tune = func(sc *server.Config) {
			sc.BodyReadTimeout = 200 * time.Millisecond
			sc.Extra = map[string]http.Handler{"/callbacks/": chatCallbacks}
		}
	})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	baseline := runtime.NumGoroutine()

	const n = 60
	paths := []string{"/callbacks/chat", "/api/v1/sms/promotional", "/api/v1/templates/sms"}
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		conn := dial(t, srv)
		conn.head("POST", paths[i%len(paths)], "X-API-Key: "+e.key, "Content-Length: 100000")
		conn.write(`{"recipients":[`)
		wg.Go(func() {
			res, err := http.ReadResponse(conn.rd, &http.Request{Method: "POST"})
			if err == nil {
				statuses[i] = res.StatusCode
				_, _ = io.Copy(io.Discard, res.Body)
				_, err = conn.rd.ReadByte() // the server closes the connection
			}
			if !errors.Is(err, io.EOF) {
				statuses[i] = -1
			}
			_ = conn.conn.Close()
		})
	}
	wg.Wait()
	for i, st := range statuses {
		require.Equal(t, http.StatusRequestTimeout, st, "connection %d to %s", i, paths[i%len(paths)])
	}
	// The server's goroutines end after the answers; wait for them.
	var now int
	for end := time.Now().Add(guardLimit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if now = runtime.NumGoroutine(); now <= baseline {
			break
		}
	}
	require.LessOrEqual(t, now, baseline, "goroutines left behind by %d stalled bodies", n)
}

// slowReader hands out a body in pieces, pausing between them, so that it
// takes longer than the deadline's grace: only the bytes it delivers keep
// the deadline moving.
type slowReader struct {
	data  []byte
	piece int // bytes between pauses
	pause time.Duration
	left  int // bytes before the next pause
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.left == 0 {
		time.Sleep(r.pause)
		r.left = r.piece
	}
	n := copy(p[:min(len(p), r.left)], r.data)
	r.data, r.left = r.data[n:], r.left-n
	return n, nil
}

// bigBulk returns a bulk send body of n recipients with placeholders, about
// 110 bytes each.
func bigBulk(t testing.TB, template string, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	b.Grow(n * 120)
	fmt.Fprintf(&b, `{"templateId":%q,"recipients":[`, template)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"phoneNumber":"+44770%07d","externalUserId":"user-%07d","placeholders":{"name":"Customer %07d","code":"ABCDEFGH"}}`, i, i, i)
	}
	b.WriteString("]}")
	return b.Bytes()
}

func TestLargeBulkBodyArrivesWithinItsDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 200,000 recipients")
	}
	e := newEnv(t, withLimits(campaignLimits(450_000, 200_000)), func(c *envConfig) {
		c.quiet = true
		c.noVerify = true
		c.tune = func(sc *server.Config) { sc.BodyReadTimeout = 200 * time.Millisecond }
	})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	tpl := e.smsTemplate("big", "Hi {{name}}, {{code}}")
	body := bigBulk(t, tpl, 200_000)
	t.Logf("body: %d bytes", len(body))
	require.Greater(t, len(body), 15<<20)

	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			// About a second in all, five times the grace: the body is
			// in time only because the deadline follows it.
			var rd io.Reader = &slowReader{data: body, piece: 256 << 10, pause: 12 * time.Millisecond}
			req, err := http.NewRequest("POST", srv.URL+"/api/v1/sms/promotional", rd)
			require.NoError(t, err)
			if !chunked {
				req.ContentLength = int64(len(body))
			}
			req.Header.Set("X-API-Key", e.key)
			res, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			out, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusAccepted, res.StatusCode, "body: %s", out)
			var m map[string]any
			require.NoError(t, json.Unmarshal(out, &m))
			require.Equal(t, float64(200_000), m["messageCount"])
			e.wait()
			id := m["campaignId"].(string)
			r := e.do("POST", "/api/v1/campaigns/"+id+"/start", nil)
			require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
			r = e.do("GET", "/api/v1/campaigns/"+id, nil)
			require.Equal(t, float64(200_000), r.obj()["totalMessages"])
		})
	}
}

// recipientsBody returns a direct SMS send body of about size bytes.
func recipientsBody(sender int64, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"messageContent":"hi","smsSenderId":%d,"recipients":[`, sender)
	for i := 0; b.Len() < size-40; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"phoneNumber":"+44770%07d"}`, i)
	}
	b.WriteString("]}")
	return b.String()
}

func TestBodyBudget(t *testing.T) {
	const budget = 1 << 20
	e := newEnv(t, withLimits(campaignLimits(1_000_000, 200_000)), func(c *envConfig) {
		c.quiet = true
		c.tune = func(sc *server.Config) {
			sc.MaxBodyBytes = budget
			sc.BodyBudgetBytes = budget
			sc.BodyBudgetWait = 50 * time.Millisecond
			sc.BodyReadTimeout = guardLimit // bodies held on purpose stay held
		}
	})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	key := "X-API-Key: " + e.key

	t.Run("a body announced over the limit is refused unread", func(t *testing.T) {
		for _, path := range []string{"/api/v1/sms/send", "/api/v1/templates/sms"} {
			conn := dial(t, srv)
			conn.head("POST", path, key, fmt.Sprintf("Content-Length: %d", budget+1))
			res, body := conn.answer("POST")
			require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%s: %s", path, body)
			requireErrorBody(t, body, "Request Entity Too Large")
			require.True(t, res.Close)
		}
	})

	// holder announces 700 KB and sends 10 bytes: the body is read (so its
	// length is taken from the budget) once the server asks for the rest
	// with 100 Continue.
	holder := dial(t, srv)
	holder.head("POST", "/api/v1/sms/send", key, "Content-Length: 700000", "Expect: 100-continue")
	line, err := holder.rd.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "100 Continue")
	_, err = holder.rd.ReadString('\n') // the empty line after it
	require.NoError(t, err)
	holder.write(`{"messageC`)

	t.Run("a body that does not fit is refused with Retry-After", func(t *testing.T) {
		conn := dial(t, srv)
		conn.head("POST", "/api/v1/sms/send", key, "Content-Length: 400000")
		res, body := conn.answer("POST")
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "body: %s", body)
		requireErrorBody(t, body, "Service Unavailable")
		require.Equal(t, "1", res.Header.Get("Retry-After"))
		require.True(t, res.Close)
	})

	t.Run("a body of unknown length is refused once it outgrows the room left", func(t *testing.T) {
		conn := dial(t, srv)
		conn.head("POST", "/api/v1/sms/send", key, "Transfer-Encoding: chunked")
		body := recipientsBody(e.sender, 600_000)
		go func() { // the server may stop reading half-way
			_, _ = fmt.Fprintf(conn.conn, "%x\r\n%s\r\n0\r\n\r\n", len(body), body)
		}()
		res, out := conn.answer("POST")
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "body: %s", out)
		requireErrorBody(t, out, "Service Unavailable")
		require.Equal(t, "1", res.Header.Get("Retry-After"))
	})

	t.Run("a body that fits is served", func(t *testing.T) {
		r := e.do("POST", "/api/v1/templates/sms", map[string]any{"name": "fits", "templateContent": "x"})
		require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
		body := recipientsBody(e.sender, 200_000)
		res, err := srv.Client().Do(newPost(t, srv.URL+"/api/v1/sms/send", e.key, body))
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusAccepted, res.StatusCode)
	})

	t.Run("the budget comes back when the holder leaves", func(t *testing.T) {
		require.NoError(t, holder.conn.Close())
		body := recipientsBody(e.sender, 900_000)
		status := 0
		for end := time.Now().Add(guardLimit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			res, err := srv.Client().Do(newPost(t, srv.URL+"/api/v1/sms/send", e.key, body))
			require.NoError(t, err)
			_ = res.Body.Close()
			if status = res.StatusCode; status != http.StatusServiceUnavailable {
				break
			}
		}
		require.Equal(t, http.StatusAccepted, status)
	})

	t.Run("concurrent bodies share the budget", func(t *testing.T) {
		body := recipientsBody(e.sender, 600_000)
		const n = 8
		type answer struct {
			res  *http.Response
			body []byte
			err  error
		}
		var wg sync.WaitGroup
		answers := make([]answer, n)
		for i := range n {
			wg.Go(func() {
				a := &answers[i]
				if a.res, a.err = srv.Client().Do(newPost(t, srv.URL+"/api/v1/sms/send", e.key, body)); a.err == nil {
					a.body, a.err = io.ReadAll(a.res.Body)
					_ = a.res.Body.Close()
				}
			})
		}
		wg.Wait()
		statuses := map[int]int{}
		for _, a := range answers {
			require.NoError(t, a.err)
			statuses[a.res.StatusCode]++
			if a.res.StatusCode == http.StatusServiceUnavailable {
				requireErrorBody(t, a.body, "Service Unavailable")
				require.Equal(t, "1", a.res.Header.Get("Retry-After"))
			}
		}
		require.Equal(t, n, statuses[http.StatusAccepted]+statuses[http.StatusServiceUnavailable], "statuses: %v", statuses)
		require.Positive(t, statuses[http.StatusAccepted], "statuses: %v", statuses)
		require.LessOrEqual(t, server.BodyBudgetPeak(e.h), int64(budget), "bytes held at once")
		require.GreaterOrEqual(t, server.BodyBudgetPeak(e.h), int64(len(body)), "bodies are charged to the budget")
	})
}

func newPost(t testing.TB, url, key, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	return req
}
