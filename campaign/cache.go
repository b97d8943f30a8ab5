package campaign

import (
	"sync"
	"time"
)

// DefaultCacheTTL is how long a Service reuses what it read of an API key
// or of a transactional campaign and its template.
const DefaultCacheTTL = time.Second

// maxCacheEntries bounds each cache; a full cache starts over.
const maxCacheEntries = 10_000

// ttlCache keeps values for a short time. The hot path of a busy
// deployment (authenticate, then add a message to a transactional
// campaign) reads the same few rows on every request; a cache of a second
// turns thousands of reads a second into one. What this Service changes
// (keys, activation, templates) it forgets at once; changes made by other
// processes sharing the database are seen within the TTL.
type ttlCache[K comparable, V any] struct {
	ttl time.Duration // zero or less: nothing is kept
	mu  sync.Mutex
	m   map[K]cacheEntry[V]
}

type cacheEntry[V any] struct {
	v       V
	expires time.Time
}

func (c *ttlCache[K, V]) get(k K, now time.Time) (V, bool) {
	var zero V
	if c.ttl <= 0 {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || !now.Before(e.expires) {
		return zero, false
	}
	return e.v, true
}

func (c *ttlCache[K, V]) put(k K, v V, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCacheEntries {
		c.m = make(map[K]cacheEntry[V])
	}
	c.m[k] = cacheEntry[V]{v: v, expires: now.Add(c.ttl)}
}

// clear forgets everything.
func (c *ttlCache[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}
