package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Defaults of the request body settings of Config.
const (
	// DefaultMaxSmallBodyBytes is the default limit of the bodies of the
	// routes that carry no recipients: a template with its largest
	// typeSpecificConfig fits many times over.
	DefaultMaxSmallBodyBytes = 1 << 20
	// DefaultBodyReadTimeout is the default time a body may take beyond
	// what its size earns at the minimum rate.
	DefaultBodyReadTimeout = 10 * time.Second
	// DefaultMinBodyRate is the default minimum rate, in bytes per second,
	// at which a body must arrive on average (512 kbit/s): a 25 MB bulk
	// send may take 6 minutes and a half.
	DefaultMinBodyRate = 64 << 10
	// DefaultBodyBudgetWait is how long a request waits by default for
	// room in the body budget before it is refused.
	DefaultBodyBudgetWait = time.Second
)

// budgetRetryAfter is the Retry-After of a request refused for want of
// room in the body budget.
const budgetRetryAfter = time.Second

// deadlineStep is how far the deadline of a body must have moved before
// it is set again: fewer calls, at the price of a deadline up to this much
// earlier than earned.
const deadlineStep = 250 * time.Millisecond

// budgetStep is how much of the budget a body of unknown length takes at a
// time, as it arrives.
const budgetStep = 64 << 10

// bodyLimits are the body settings of a server, defaults applied.
type bodyLimits struct {
	max      int64         // sending routes and Config.Extra
	maxSmall int64         // every other route
	grace    time.Duration // Config.BodyReadTimeout
	rate     int64         // Config.MinBodyRate
	wait     time.Duration // Config.BodyBudgetWait
}

// newBodyLimits applies the defaults to cfg's body settings and returns
// them with the body budget.
func newBodyLimits(cfg Config) (bodyLimits, *budget) {
	l := bodyLimits{max: cfg.MaxBodyBytes, maxSmall: cfg.MaxSmallBodyBytes, grace: cfg.BodyReadTimeout,
		rate: cfg.MinBodyRate, wait: cfg.BodyBudgetWait}
	if l.max <= 0 {
		l.max = DefaultMaxBodyBytes
	}
	if l.maxSmall <= 0 {
		l.maxSmall = min(DefaultMaxSmallBodyBytes, l.max)
	}
	if l.grace <= 0 {
		l.grace = DefaultBodyReadTimeout
	}
	if l.rate <= 0 {
		l.rate = DefaultMinBodyRate
	}
	if l.wait <= 0 {
		l.wait = DefaultBodyBudgetWait
	}
	size := cfg.BodyBudgetBytes
	if size <= 0 {
		size = 2 * l.max
	}
	size = max(size, l.max, l.maxSmall)
	return l, newBudget(size)
}

// budget is the server-wide count of request body bytes that requests in
// flight may hold.
type budget struct {
	mu      sync.Mutex
	size    int64
	free    int64
	peak    int64         // the most bytes held at once
	waiting int           // acquires waiting on freed
	freed   chan struct{} // closed, and replaced, when bytes are released while some wait
}

func newBudget(size int64) *budget {
	return &budget{size: size, free: size, freed: make(chan struct{})}
}

// maxHeld returns the most bytes held at once so far.
func (b *budget) maxHeld() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// acquire takes n bytes from the budget, waiting at most wait for them;
// false when they could not be had in time or ctx ended first.
func (b *budget) acquire(ctx context.Context, n int64, wait time.Duration) bool {
	var timer *time.Timer
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.peak = max(b.peak, b.size-b.free)
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return true
		}
		freed := b.freed
		b.waiting++
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		ok := true
		select {
		case <-freed:
		case <-timer.C:
			ok = false
		case <-ctx.Done():
			ok = false
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if !ok {
			return false
		}
	}
}

// release gives n bytes back.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.free += n
	if b.waiting > 0 {
		close(b.freed)
		b.freed = make(chan struct{})
	}
	b.mu.Unlock()
}

// errBusy refuses a body for want of room in the budget.
func errBusy() error {
	return &httpError{status: http.StatusServiceUnavailable, name: messaging.NameServiceUnavailable,
		message: "The server is receiving too many request bodies at once; retry shortly", retryAfter: budgetRetryAfter}
}

// errBodyTimeout answers a body that did not arrive in time. It is
// os.ErrDeadlineExceeded to errors.Is, so that a handler mounted with
// Config.Extra can answer 408 too.
func errBodyTimeout() error {
	return &httpError{status: http.StatusRequestTimeout, name: nameRequestTimeout,
		message: "The request body did not arrive in time", cause: os.ErrDeadlineExceeded}
}

// errTooLarge answers a body over limit bytes.
func errTooLarge(limit int64) error {
	return &httpError{status: http.StatusRequestEntityTooLarge, name: nameTooLarge,
		message: fmt.Sprintf("The request body is larger than %d bytes", limit)}
}

// hasBody tells whether a request comes with a body to read.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// pacedBody is a request body with a read deadline that grows as the body
// arrives: the body may take grace plus the time its bytes take at rate.
// A read past the deadline fails with errBodyTimeout. Until the body has
// been read to its end, an answer closes the connection (see
// exchange.start).
type pacedBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	ex    *exchange
	start time.Time
	grace time.Duration
	rate  float64
	read  int64
	set   time.Time // the deadline last set
}

// pace sets the first read deadline of r's body and wraps it so that the
// deadline follows the bytes read. Writers that cannot set deadlines
// (httptest.ResponseRecorder) leave the body as it is.
func (s *server) pace(w http.ResponseWriter, ex *exchange, r *http.Request) {
	if !hasBody(r) {
		return
	}
	rc := http.NewResponseController(w)
	start := time.Now()
	dl := start.Add(s.limits.grace)
	if err := rc.SetReadDeadline(dl); err != nil {
		return
	}
	r.Body = &pacedBody{ReadCloser: r.Body, rc: rc, ex: ex, start: start, grace: s.limits.grace,
		rate: float64(s.limits.rate), set: dl}
	ex.bodyPending.Store(true)
}

// Read implements io.Reader. Once the body has ended the deadline is left
// alone: the server clears it itself to watch the connection while the
// handler works.
func (b *pacedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil && n > 0:
		b.read += int64(n)
		earned := time.Duration(float64(b.read) / b.rate * float64(time.Second))
		if dl := b.start.Add(b.grace + earned); dl.Sub(b.set) >= deadlineStep {
			b.set = dl
			_ = b.rc.SetReadDeadline(dl)
		}
	case errors.Is(err, io.EOF):
		b.ex.bodyPending.Store(false)
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.ex.closeConn.Store(true)
		err = errBodyTimeout()
	}
	return n, err
}

// budgetedBody is a body of unknown length that takes its bytes from the
// budget as it arrives, budgetStep at a time; held is released by the
// caller.
type budgetedBody struct {
	io.ReadCloser
	ctx    context.Context
	budget *budget
	wait   time.Duration
	ex     *exchange
	held   int64 // taken from the budget
	used   int64 // read
}

// Read implements io.Reader.
func (b *budgetedBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return b.ReadCloser.Read(p)
	}
	if b.used == b.held {
		if !b.budget.acquire(b.ctx, budgetStep, b.wait) {
			if b.ex != nil {
				b.ex.closeConn.Store(true)
			}
			return 0, errBusy()
		}
		b.held += budgetStep
	}
	if room := b.held - b.used; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.ReadCloser.Read(p)
	b.used += int64(n)
	return n, err
}

// guard enforces a route's body limit and the body budget around next: a
// body announced larger than limit is a 413 before anything is read; an
// announced length is taken from the budget before next runs (a 503 with
// Retry-After when there is no room after a brief wait), a body of unknown
// length as it arrives; either is released when next returns.
func (s *server) guard(limit int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasBody(r) {
			next.ServeHTTP(w, r)
			return
		}
		ex := exchangeOf(r.Context())
		refuse := func(err error) {
			if ex != nil {
				ex.closeConn.Store(true)
			}
			s.writeError(w, r, err)
		}
		if r.ContentLength > limit {
			refuse(errTooLarge(limit))
			return
		}
		body := r.Body
		if n := r.ContentLength; n > 0 {
			if !s.budget.acquire(r.Context(), n, s.limits.wait) {
				refuse(errBusy())
				return
			}
			defer s.budget.release(n)
		} else {
			bb := &budgetedBody{ReadCloser: body, ctx: r.Context(), budget: s.budget, wait: s.limits.wait, ex: ex}
			defer func() { s.budget.release(bb.held) }()
			body = bb
		}
		r.Body = http.MaxBytesReader(w, body, limit)
		next.ServeHTTP(w, r)
	})
}
