// Package ttlcache holds Cache, a small map whose entries expire: the
// hot paths of a busy deployment (authenticate, then add a message to a
// transactional campaign) read the same few rows on every request, and a
// cache of a second turns thousands of reads a second into one.
package ttlcache

import (
	"sync"
	"time"
)

// MaxEntries bounds a Cache; a full cache starts over.
const MaxEntries = 10_000

// Cache keeps values for TTL. Its zero value keeps nothing (TTL zero or
// less); it is safe for concurrent use.
type Cache[K comparable, V any] struct {
	// TTL is how long a value is kept; zero or less keeps nothing.
	TTL time.Duration

	mu sync.Mutex
	m  map[K]entry[V]
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// Get returns the value of k if it was put less than TTL before now.
func (c *Cache[K, V]) Get(k K, now time.Time) (V, bool) {
	var zero V
	if c.TTL <= 0 {
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

// Put keeps v for k from now on.
func (c *Cache[K, V]) Put(k K, v V, now time.Time) {
	if c.TTL <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= MaxEntries {
		c.m = make(map[K]entry[V])
	}
	c.m[k] = entry[V]{v: v, expires: now.Add(c.TTL)}
}

// Clear forgets everything.
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}
