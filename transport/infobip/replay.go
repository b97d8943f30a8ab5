package infobip

import (
	"context"
	"sync"
	"time"
)

// replayWindow is how long a report is remembered: longer than
// Infobip's retry cycle of a webhook that keeps failing.
const replayWindow = 72 * time.Hour

// memoryGuard is the adapter's own chatprovider.ReplayForgetter: keys in
// a map with their expiry, swept as they are added.
type memoryGuard struct {
	now       func() time.Time
	mu        sync.Mutex
	keys      map[string]time.Time
	nextSweep time.Time
}

func newMemoryGuard(now func() time.Time) *memoryGuard {
	return &memoryGuard{now: now, keys: make(map[string]time.Time)}
}

// Seen records key until the time given and reports whether it was
// recorded (and not expired) before.
func (g *memoryGuard) Seen(_ context.Context, key string, until time.Time) (bool, error) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.After(g.nextSweep) {
		for k, exp := range g.keys {
			if now.After(exp) {
				delete(g.keys, k)
			}
		}
		g.nextSweep = now.Add(time.Minute)
	}
	if exp, ok := g.keys[key]; ok && !now.After(exp) {
		return true, nil
	}
	g.keys[key] = until
	return false, nil
}

// Forget drops key.
func (g *memoryGuard) Forget(_ context.Context, key string) error {
	g.mu.Lock()
	delete(g.keys, key)
	g.mu.Unlock()
	return nil
}

// take removes key and reports whether it was there (and not expired).
func (g *memoryGuard) take(key string) bool {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	exp, ok := g.keys[key]
	delete(g.keys, key)
	return ok && !now.After(exp)
}

func (g *memoryGuard) reset() {
	g.mu.Lock()
	g.keys = make(map[string]time.Time)
	g.mu.Unlock()
}
