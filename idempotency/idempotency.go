package idempotency

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Defaults of Config.
const (
	// DefaultWindow is how long a key's answer is kept and replayed.
	DefaultWindow = 24 * time.Hour
	// DefaultWait is how long a request waits for the first request with
	// its key to finish before it is refused as in progress.
	DefaultWait = 10 * time.Second
	// DefaultAbandoned is how long a request may hold its key unfinished
	// before a retry takes the key over (its process died while it ran).
	DefaultAbandoned = 2 * time.Minute
	// MaxKeyLength is the longest key accepted.
	MaxKeyLength = 255
)

// Request is one request made under a key: Hash is a digest of what the
// request asks (method, path and body), as Digest makes it.
type Request struct {
	CompanyID messaging.ID
	Key       string
	Hash      [sha256.Size]byte
}

// Response is the answer kept for a key.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Record is what a Store keeps of a key.
type Record struct {
	Request
	// Done is set once the first request finished; Response is its answer.
	Done     bool
	Response Response
	// CreatedAt is when the first request took the key, UpdatedAt when it
	// last changed.
	CreatedAt, UpdatedAt time.Time
}

// Store keeps the keys.
type Store interface {
	// ClaimIdempotencyKey takes r's key for a request starting at now,
	// recording it unfinished, unless the company holds the key already:
	// then it returns the record held, and claimed false. A record created
	// before expiredBefore, or left unfinished since before
	// abandonedBefore, is replaced (claimed true).
	ClaimIdempotencyKey(ctx context.Context, r Request, now, expiredBefore, abandonedBefore time.Time) (held Record, claimed bool, err error)
	// GetIdempotencyKey returns the company's record of key, or NotFound.
	GetIdempotencyKey(ctx context.Context, companyID messaging.ID, key string) (Record, error)
	// CompleteIdempotencyKey stores the answer of the request holding key
	// (with hash) and marks it done at now.
	CompleteIdempotencyKey(ctx context.Context, r Request, resp Response, now time.Time) error
	// ReleaseIdempotencyKey forgets the unfinished record of r's key, so
	// that a retry runs.
	ReleaseIdempotencyKey(ctx context.Context, r Request) error
	// PurgeIdempotencyKeys removes up to limit records created before
	// before, and returns how many it removed.
	PurgeIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error)
}

// Config configures a Service. Store is required; every other field has
// a documented zero-value default.
type Config struct {
	// Store keeps the keys. Required.
	Store Store
	// Window is how long a key's answer is replayed. Default
	// DefaultWindow.
	Window time.Duration
	// Wait is how long a request waits for the first request with its key
	// to finish. Default DefaultWait.
	Wait time.Duration
	// Abandoned is how long an unfinished key holds before a retry takes
	// it over. Default DefaultAbandoned.
	Abandoned time.Duration
	// Poll is how often a waiting request looks again. Default 50 ms.
	Poll time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Service runs requests under idempotency keys.
type Service struct {
	store                   Store
	window, wait, abandoned time.Duration
	poll                    time.Duration
	now                     func() time.Time
}

// New returns a Service for cfg.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("idempotency: Config.Store is required")
	}
	s := &Service{store: cfg.Store, window: cfg.Window, wait: cfg.Wait, abandoned: cfg.Abandoned, poll: cfg.Poll, now: cfg.Now}
	if s.window <= 0 {
		s.window = DefaultWindow
	}
	if s.wait <= 0 {
		s.wait = DefaultWait
	}
	if s.abandoned <= 0 {
		s.abandoned = DefaultAbandoned
	}
	if s.poll <= 0 {
		s.poll = 50 * time.Millisecond
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// CheckKey checks a key as a client sent it: 1 to MaxKeyLength
// characters, printable ASCII (an Invalid error on Idempotency-Key).
func CheckKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyLength {
		return messaging.Invalidf("Idempotency-Key", "Idempotency-Key must be 1 to %d characters", MaxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return messaging.Invalidf("Idempotency-Key", "Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}

// Digest returns the hash of a request: its method, its path and its
// body.
func Digest(method, path string, body []byte) [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", method, path)
	h.Write(body)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// Outcome is what Begin decided.
type Outcome struct {
	// Replay, when not nil, is the first request's answer: give it again
	// and do nothing.
	Replay *Response
	// Run: the request holds the key; run it, then call Finish.
	Run bool
}

// Begin decides what becomes of request r: it runs (Outcome.Run: the
// caller then calls Finish with its answer), or its key's first answer is
// replayed. The key used for another request is a Mismatch error named
// NameMismatch (422); a first request still running after Wait
// is a Conflict (409).
func (s *Service) Begin(ctx context.Context, r Request) (Outcome, error) {
	// The wait is in real time, whatever the clock says.
	deadline := time.NewTimer(s.wait)
	defer deadline.Stop()
	poll := time.NewTicker(s.poll)
	defer poll.Stop()
	for {
		now := s.now()
		held, claimed, err := s.store.ClaimIdempotencyKey(ctx, r, now, now.Add(-s.window), now.Add(-s.abandoned))
		if err != nil {
			return Outcome{}, fmt.Errorf("idempotency key: %w", err)
		}
		switch {
		case claimed:
			return Outcome{Run: true}, nil
		case held.Hash != r.Hash:
			return Outcome{}, messaging.Errorf(messaging.Mismatch, NameMismatch,
				"Idempotency-Key %q was used for another request; use a new key for a new request", r.Key)
		case held.Done:
			resp := held.Response
			return Outcome{Replay: &resp}, nil
		}
		select {
		case <-ctx.Done():
			return Outcome{}, fmt.Errorf("idempotency key: %w", ctx.Err())
		case <-deadline.C:
			return Outcome{}, messaging.Errorf(messaging.Conflict, messaging.NameConflict,
				"A request with Idempotency-Key %q is still in progress; retry later", r.Key)
		case <-poll.C:
		}
	}
}

// NameMismatch is the error name of a key reused for another request.
const NameMismatch = "Unprocessable Entity"

// Keeps tells whether an answer with this HTTP status is kept for the
// key: not a 5xx (the server failed) nor a 429 (come back later), which
// decided nothing and leave the retry free to run.
func Keeps(status int) bool { return status < 500 && status != 429 }

// Finish records the answer of a request Begin let run; an answer that
// Keeps refuses releases the key instead. It uses a context of its own
// when ctx has ended (the client went away after the request did its
// work: the answer must still be kept).
func (s *Service) Finish(ctx context.Context, r Request, resp Response) error {
	ctx = context.WithoutCancel(ctx)
	if !Keeps(resp.Status) {
		if err := s.store.ReleaseIdempotencyKey(ctx, r); err != nil {
			return fmt.Errorf("release idempotency key: %w", err)
		}
		return nil
	}
	if err := s.store.CompleteIdempotencyKey(ctx, r, resp, s.now()); err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// Purge removes the keys older than the window, limit at a time until
// none is left, and returns how many it removed.
func (s *Service) Purge(ctx context.Context, limit int) (int, error) {
	total := 0
	for {
		n, err := s.store.PurgeIdempotencyKeys(ctx, s.now().Add(-s.window), limit)
		total += n
		if err != nil {
			return total, fmt.Errorf("purge idempotency keys: %w", err)
		}
		if n < limit {
			return total, nil
		}
	}
}
