package ttlcache_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/ttlcache"
)

func TestCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := ttlcache.Cache[string, int]{TTL: time.Second}
	_, ok := c.Get("a", t0)
	require.False(t, ok)
	c.Put("a", 1, t0)
	v, ok := c.Get("a", t0.Add(999*time.Millisecond))
	require.True(t, ok)
	require.Equal(t, 1, v)
	_, ok = c.Get("a", t0.Add(time.Second))
	require.False(t, ok, "expired after TTL")
	c.Put("b", 2, t0)
	c.Clear()
	_, ok = c.Get("b", t0)
	require.False(t, ok, "cleared")

	var off ttlcache.Cache[string, int]
	off.Put("a", 1, t0)
	_, ok = off.Get("a", t0)
	require.False(t, ok, "a zero TTL keeps nothing")

	full := ttlcache.Cache[int, int]{TTL: time.Hour}
	for i := range ttlcache.MaxEntries + 1 {
		full.Put(i, i, t0)
	}
	_, ok = full.Get(0, t0)
	require.False(t, ok, "a full cache starts over")
	_, ok = full.Get(ttlcache.MaxEntries, t0)
	require.True(t, ok)
}

func TestCachePutSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := ttlcache.Cache[string, int]{TTL: time.Second}
	e := c.Epoch()
	c.PutSince(e, "a", 1, t0, 100*time.Millisecond)
	_, ok := c.Get("a", t0.Add(99*time.Millisecond))
	require.True(t, ok)
	_, ok = c.Get("a", t0.Add(100*time.Millisecond))
	require.False(t, ok, "kept for the shorter of TTL and ttl")
	c.PutSince(e, "b", 2, t0, time.Hour)
	_, ok = c.Get("b", t0.Add(time.Second))
	require.False(t, ok, "never beyond TTL")

	e = c.Epoch()
	c.Clear() // e.g. a key revoked while it was being read
	c.PutSince(e, "c", 3, t0, time.Hour)
	_, ok = c.Get("c", t0)
	require.False(t, ok, "a value read before a Clear is not kept after it")
	c.PutSince(c.Epoch(), "c", 3, t0, time.Hour)
	_, ok = c.Get("c", t0)
	require.True(t, ok)
}
