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
	// epoch counts the Clears.
	epoch uint64
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
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(k, v, now, c.TTL)
}

// Epoch returns a number that changes with every Clear. A value read
// from its source after Epoch is put with PutSince, so that a Clear made
// while it was read is not undone by it.
func (c *Cache[K, V]) Epoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// PutSince keeps v for k from now on, for TTL or ttl, whichever is
// shorter, unless the cache was cleared since epoch (a value of Epoch).
func (c *Cache[K, V]) PutSince(epoch uint64, k K, v V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return
	}
	c.put(k, v, now, min(ttl, c.TTL))
}

func (c *Cache[K, V]) put(k K, v V, now time.Time, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	if c.m == nil || len(c.m) >= MaxEntries {
		c.m = make(map[K]entry[V])
	}
	c.m[k] = entry[V]{v: v, expires: now.Add(ttl)}
}

// Clear forgets everything.
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
	c.epoch++
}
