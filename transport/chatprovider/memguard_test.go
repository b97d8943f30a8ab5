package chatprovider

import (
	"context"
	"testing"
	"time"
)

func TestMemoryGuard(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := NewMemoryGuard(func() time.Time { return now }, 3)
	ctx := context.Background()
	seen := func(k string) bool {
		s, err := g.Seen(ctx, k, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if seen("a") || !seen("a") {
		t.Fatal("a second Seen is not a replay")
	}
	_ = g.Forget(ctx, "a")
	if seen("a") {
		t.Fatal("a forgotten key is still seen")
	}
	now = now.Add(2 * time.Hour)
	if seen("a") {
		t.Fatal("an expired key is still seen")
	}
	for _, k := range []string{"b", "c", "d", "e"} {
		seen(k)
	}
	if len(g.keys) > 3 {
		t.Fatalf("the guard holds %d keys, beyond its 3", len(g.keys))
	}
	if !seen("e") {
		t.Fatal("the newest key was dropped")
	}
}
