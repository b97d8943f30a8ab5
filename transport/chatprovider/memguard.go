package chatprovider

import (
	"context"
	"sync"
	"time"
)

// DefaultGuardKeys bounds the keys a MemoryGuard holds by default;
// beyond, the oldest are dropped first.
const DefaultGuardKeys = 1 << 20

// MemoryGuard is a ReplayForgetter in one process's memory, for an
// adapter given no guard of the store: keys in a map, and in a queue by
// arrival so that the expired and the oldest go first. Safe for
// concurrent use.
type MemoryGuard struct {
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

// NewMemoryGuard returns a guard holding at most max keys, its keys'
// times read from now.
func NewMemoryGuard(now func() time.Time, max int) *MemoryGuard {
	return &MemoryGuard{now: now, max: max, keys: map[string]time.Time{}}
}

// Seen implements ReplayGuard.
func (g *MemoryGuard) Seen(_ context.Context, key string, until time.Time) (bool, error) {
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

// Forget implements ReplayForgetter.
func (g *MemoryGuard) Forget(_ context.Context, key string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.keys, key)
	return nil
}

// prune drops expired keys from the front of the queue, and the oldest
// until there is room for one more under max. A queued entry whose key
// was forgotten or recorded again later leaves the map only when it is
// the key's last record.
func (g *MemoryGuard) prune(now time.Time) {
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
