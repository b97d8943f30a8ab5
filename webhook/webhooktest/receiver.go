// Package webhooktest provides a webhook endpoint for tests and load runs
// of Herald's events, in the manner of net/http/httptest: an http.Handler
// that checks each request as a receiver should and hands the events over.
package webhooktest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
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
// when the body is neither an event whose id is Herald-Event-Id nor a batch
// of Herald-Event-Count events, and 204 otherwise. It hands each event to
// its handler once, in the order of the body: an id it took before is
// skipped and counted in Duplicates (Herald sends at least once, and a
// batch is sent again whole).
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

// Duplicates is how many events came again after they were taken.
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
	evs, err := webhook.ParseEvents(body)
	if err != nil || !consistent(req, body, evs) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range evs {
		if r.seen[e.ID] {
			r.dups++
			continue
		}
		r.seen[e.ID] = true
		r.handle(Event{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt, Data: e.Data, Received: now})
	}
	w.WriteHeader(http.StatusNoContent)
}

// consistent reports whether the headers agree with the body: a single
// event's id is Herald-Event-Id, a batch's length Herald-Event-Count.
func consistent(req *http.Request, body []byte, evs []webhook.ReceivedEvent) bool {
	if n := req.Header.Get(webhook.EventCountHeader); n != "" {
		return n == strconv.Itoa(len(evs)) && bytes.HasPrefix(body, []byte(`{"events":`))
	}
	return len(evs) == 1 && evs[0].ID == req.Header.Get(webhook.EventIDHeader)
}
