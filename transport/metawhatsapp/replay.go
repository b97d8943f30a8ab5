package metawhatsapp

import (
	"context"
	"sync"
	"time"
)

// ReplayHold is how long a webhook's key is kept to refuse its replay.
const ReplayHold = 24 * time.Hour

// defaultGuardKeys bounds the keys the memory guard holds; beyond, the
// oldest are dropped first.
const defaultGuardKeys = 1 << 20

// memoryGuard is the adapter's own chatprovider.ReplayForgetter: keys in
// a map, and in a queue by arrival so that the expired and the oldest go
// first.
type memoryGuard struct {
	mu    sync.Mutex
	now   func() time.Time
	max   int
	keys  map[string]time.Time
	queue []guardEntry // queue[head:] are live
	head  int
}

type guardEntry struct {
	key   string
	until time.Time
}

func newMemoryGuard(now func() time.Time, max int) *memoryGuard {
	return &memoryGuard{now: now, max: max, keys: map[string]time.Time{}}
}

// Seen implements chatprovider.ReplayGuard.
func (g *memoryGuard) Seen(_ context.Context, key string, until time.Time) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.prune(now)
	if t, ok := g.keys[key]; ok && t.After(now) {
		return true, nil
	}
	g.keys[key] = until
	g.queue = append(g.queue, guardEntry{key, until})
	return false, nil
}

// Forget implements chatprovider.ReplayForgetter.
func (g *memoryGuard) Forget(_ context.Context, key string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.keys, key)
	return nil
}

// prune drops expired keys from the front of the queue, and the oldest
// until there is room for one more under max. A queued entry whose key
// was forgotten or recorded again later leaves the map only when it is
// the key's last record.
func (g *memoryGuard) prune(now time.Time) {
	for g.head < len(g.queue) {
		e := g.queue[g.head]
		if e.until.After(now) && len(g.queue)-g.head < g.max {
			break
		}
		if t, ok := g.keys[e.key]; ok && t.Equal(e.until) {
			delete(g.keys, e.key)
		}
		g.queue[g.head] = guardEntry{}
		g.head++
	}
	if g.head > 1024 && g.head > len(g.queue)/2 {
		g.queue = append([]guardEntry(nil), g.queue[g.head:]...)
		g.head = 0
	}
}

// maxRetakes bounds the keys of failed webhooks an adapter remembers.
const maxRetakes = 1 << 14

// retakes are the keys of webhooks whose report failed, when the replay
// guard cannot forget them: the provider's resend of such a body is taken
// once by this adapter. A resend reaching another process is refused.
type retakes struct {
	mu   sync.Mutex
	keys map[string]time.Time
}

func (r *retakes) add(key string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[string]time.Time{}
	}
	if len(r.keys) >= maxRetakes {
		now := time.Now()
		for k, t := range r.keys {
			if t.Before(now) || len(r.keys) >= maxRetakes {
				delete(r.keys, k)
			}
		}
	}
	r.keys[key] = until
}

// take reports whether key was a failed webhook's, and forgets it.
func (r *retakes) take(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[key]; !ok {
		return false
	}
	delete(r.keys, key)
	return true
}
