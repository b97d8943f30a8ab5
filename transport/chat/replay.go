package chat

import (
	"context"
	"sync"
	"time"
)

// ReplayHold is how long a callback's key is kept to refuse its replay.
const ReplayHold = 24 * time.Hour

// defaultGuardKeys bounds the keys the memory guard holds; beyond, the
// expired go first, then any.
const defaultGuardKeys = 1 << 20

// memoryGuard is the callback handler's own chatprovider.ReplayForgetter
// when it is given none: keys in a map, each until its time.
type memoryGuard struct {
	mu   sync.Mutex
	now  func() time.Time
	max  int
	keys map[string]time.Time
}

func newMemoryGuard(now func() time.Time, max int) *memoryGuard {
	return &memoryGuard{now: now, max: max, keys: map[string]time.Time{}}
}

// Seen implements chatprovider.ReplayGuard.
func (g *memoryGuard) Seen(_ context.Context, key string, until time.Time) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if t, ok := g.keys[key]; ok && t.After(now) {
		return true, nil
	}
	if len(g.keys) >= g.max {
		g.prune(now)
	}
	g.keys[key] = until
	return false, nil
}

// Forget implements chatprovider.ReplayForgetter.
func (g *memoryGuard) Forget(_ context.Context, key string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.keys, key)
	return nil
}

// prune drops the expired keys, then any until a tenth of max is free.
func (g *memoryGuard) prune(now time.Time) {
	for k, t := range g.keys {
		if !t.After(now) {
			delete(g.keys, k)
		}
	}
	for k := range g.keys {
		if len(g.keys) < g.max-g.max/10 {
			return
		}
		delete(g.keys, k)
	}
}
