// Package webhooktest provides a webhook endpoint for tests and load runs
// of Herald's events, in the manner of net/http/httptest: an http.Handler
// that checks each request as a receiver should and hands the events over.
package webhooktest

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// Event is an event as the receiver took it.
type Event struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt string          `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
	// Received is when the request came.
	Received time.Time `json:"-"`
}

// Receiver is a webhook endpoint: it verifies each request's signature
// against the secret (SetSecret), answers 401 when it does not verify, 400
// when the body is not an event or its id differs from Herald-Event-Id, and
// 204 otherwise. It hands each event to its handler once: an id it took
// before is answered 204 and counted in Duplicates (Herald sends at least
// once).
type Receiver struct {
	handle func(Event)

	mu     sync.Mutex
	secret string
	seen   map[string]bool
	dups   int
	bad    int
}

// NewReceiver returns a Receiver that calls handle with each new event,
// one call at a time.
func NewReceiver(handle func(Event)) *Receiver {
	return &Receiver{handle: handle, seen: map[string]bool{}}
}

// SetSecret sets the endpoint's secret, as its registration answered it.
func (r *Receiver) SetSecret(secret string) {
	r.mu.Lock()
	r.secret = secret
	r.mu.Unlock()
}

// Duplicates is how many requests carried an event already taken.
func (r *Receiver) Duplicates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dups
}

// BadSignatures is how many requests did not verify.
func (r *Receiver) BadSignatures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

// ServeHTTP implements http.Handler.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	secret := r.secret
	r.mu.Unlock()
	if webhook.Verify(secret, req.Header.Get(webhook.SignatureHeader), body, now, webhook.DefaultTolerance) != nil {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || ev.ID != req.Header.Get(webhook.EventIDHeader) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	ev.Received = now
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[ev.ID] {
		r.dups++
	} else {
		r.seen[ev.ID] = true
		r.handle(ev)
	}
	w.WriteHeader(http.StatusNoContent)
}
