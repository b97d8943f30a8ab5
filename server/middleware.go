package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// exchange is one request in flight: the response writer that records the
// status, and what the middleware learned about the request. It travels in
// the request context (one allocation per request for all of it).
type exchange struct {
	http.ResponseWriter
	status    int
	wrote     bool
	requestID string
	company   messaging.ID
	// closeConn asks to close the connection after the answer: its body
	// timed out, or was refused unread. Atomic, like bodyPending: a
	// handler of Config.Extra may read its body in another goroutine.
	closeConn atomic.Bool
	// bodyPending tells that the request's body has not been read to its
	// end (set by pace).
	bodyPending atomic.Bool
}

// start records the status of the answer as it starts.
func (e *exchange) start(status int) {
	if e.wrote {
		return
	}
	e.status, e.wrote = status, true
	// An answer given before the body was read to its end closes the
	// connection rather than reading, or waiting for, the rest.
	if e.closeConn.Load() || e.bodyPending.Load() {
		e.ResponseWriter.Header().Set("Connection", "close")
	}
}

// WriteHeader implements http.ResponseWriter.
func (e *exchange) WriteHeader(status int) {
	e.start(status)
	e.ResponseWriter.WriteHeader(status)
}

// Write implements http.ResponseWriter.
func (e *exchange) Write(b []byte) (int, error) {
	e.start(http.StatusOK)
	n, err := e.ResponseWriter.Write(b)
	if err != nil {
		return n, fmt.Errorf("write response: %w", err)
	}
	return n, nil
}

// Flush implements http.Flusher for the handlers mounted with
// Config.Extra that stream.
func (e *exchange) Flush() {
	if f, ok := e.ResponseWriter.(http.Flusher); ok {
		e.start(http.StatusOK)
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (e *exchange) Unwrap() http.ResponseWriter { return e.ResponseWriter }

type exchangeKey struct{}

// exchangeOf returns the request's exchange, nil outside the server.
func exchangeOf(ctx context.Context) *exchange {
	e, _ := ctx.Value(exchangeKey{}).(*exchange)
	return e
}

// requestID returns the id of the request of ctx.
func requestID(ctx context.Context) string {
	if e := exchangeOf(ctx); e != nil {
		return e.requestID
	}
	return ""
}

// companyOf returns the authenticated company of the request.
func companyOf(r *http.Request) messaging.ID {
	if e := exchangeOf(r.Context()); e != nil {
		return e.company
	}
	return messaging.NilID
}

// goodRequestID tells whether a caller's X-Request-Id can be reused: 1 to
// 64 letters, digits, '.', '_' or '-'.
func goodRequestID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// newRequestID makes a request id: the server's random prefix and a
// sequence number.
func (s *server) newRequestID() string {
	n := s.seq.Add(1)
	b := make([]byte, 0, len(s.idPrefix)+14)
	b = append(b, s.idPrefix...)
	b = append(b, '-')
	b = strconv.AppendUint(b, n, 36)
	return string(b)
}

// ServeHTTP is the outermost layer: it gives the request its id, sets the
// read deadline of its body (pace), records the status, recovers from
// panics (a 500) and writes the access log line.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ex := &exchange{ResponseWriter: w, status: http.StatusOK}
	if id := r.Header.Get("X-Request-Id"); goodRequestID(id) {
		ex.requestID = id
	} else {
		ex.requestID = s.newRequestID()
	}
	w.Header().Set("X-Request-Id", ex.requestID)
	r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, ex))
	s.pace(w, ex, r)
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			err := fmt.Errorf("panic: %v", p)
			if ex.wrote {
				s.log.LogAttrs(r.Context(), slog.LevelError, "panic after the response started",
					slog.String("requestId", ex.requestID), slog.String("err", err.Error()))
			} else {
				s.writeError(ex, r, err)
			}
		}
		// Every request at debug; those that failed on the server's side
		// at warn, so that they show at the default level.
		level := slog.LevelDebug
		if ex.status >= http.StatusInternalServerError {
			level = slog.LevelWarn
		}
		s.log.LogAttrs(r.Context(), level, "http request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", ex.status), slog.Duration("duration", time.Since(start)),
			slog.String("requestId", ex.requestID))
	}()
	s.router.ServeHTTP(ex, r)
}

// apiKeyAuth authenticates every public API request by its X-API-Key and
// records the company in the request's exchange.
func (s *server) apiKeyAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.accounts.Authenticate(r.Context(), r.Header.Get("X-API-Key"))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if ex := exchangeOf(r.Context()); ex != nil {
			ex.company = c.ID
		}
		next.ServeHTTP(w, r)
	})
}

// adminAuth guards the admin API: `Authorization: Bearer <token>`,
// compared in constant time (hashes of equal length are compared, so the
// token's length does not leak either).
func (s *server) adminAuth(next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(s.adminToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		const scheme = "bearer "
		ok := false
		if len(h) > len(scheme) && strings.EqualFold(h[:len(scheme)], scheme) {
			got := sha256.Sum256([]byte(strings.TrimSpace(h[len(scheme):])))
			ok = subtle.ConstantTimeCompare(got[:], want[:]) == 1
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald-admin"`)
			s.writeError(w, r, messaging.Errorf(messaging.Unauthorized, messaging.NameUnauthorized,
				"The Authorization header is missing or does not carry the admin token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
