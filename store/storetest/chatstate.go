package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/stretchr/testify/require"
)

// testChatContacts: the last time a person wrote to a service is kept per
// service and person; an earlier time does not move it back.
func testChatContacts(f *fixture) {
	t := f.t
	_, ok, err := f.s.LastInbound(f.ctx, 1, "447700900001")
	require.NoError(t, err)
	require.False(t, ok, "never wrote")

	require.NoError(t, f.s.RecordInbound(f.ctx, 1, "447700900001", at(10)))
	require.NoError(t, f.s.RecordInbound(f.ctx, 2, "447700900001", at(20)))
	require.NoError(t, f.s.RecordInbound(f.ctx, 1, "447700900002", at(30)))
	got, ok, err := f.s.LastInbound(f.ctx, 1, "447700900001")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, got.Equal(at(10)), "got %v", got)

	require.NoError(t, f.s.RecordInbound(f.ctx, 1, "447700900001", at(40)))
	require.NoError(t, f.s.RecordInbound(f.ctx, 1, "447700900001", at(5)), "an older report")
	got, _, err = f.s.LastInbound(f.ctx, 1, "447700900001")
	require.NoError(t, err)
	require.True(t, got.Equal(at(40)), "the latest stays: %v", got)

	got, _, err = f.s.LastInbound(f.ctx, 2, "447700900001")
	require.NoError(t, err)
	require.True(t, got.Equal(at(20)), "another service's: %v", got)
	_, ok, err = f.s.LastInbound(f.ctx, 2, "447700900002")
	require.NoError(t, err)
	require.False(t, ok, "wrote to another service only")
}

// testCallbackReplays: a key is new once, a replay after, also among
// concurrent callers; a forgotten key is new again, once; purging removes
// the keys whose time has passed only, the oldest first.
func testCallbackReplays(f *fixture) {
	t := f.t
	seen, err := f.s.Seen(f.ctx, "vonage:abc", at(100))
	require.NoError(t, err)
	require.False(t, seen, "first time")
	seen, err = f.s.Seen(f.ctx, "vonage:abc", at(100))
	require.NoError(t, err)
	require.True(t, seen, "a replay")

	require.NoError(t, f.s.Forget(f.ctx, "vonage:abc"))
	seen, err = f.s.Seen(f.ctx, "vonage:abc", at(100))
	require.NoError(t, err)
	require.False(t, seen, "forgotten: new again")
	seen, err = f.s.Seen(f.ctx, "vonage:abc", at(100))
	require.NoError(t, err)
	require.True(t, seen, "recorded again by the Seen after Forget")
	require.NoError(t, f.s.Forget(f.ctx, "never:seen"), "forgetting an unknown key")
	seen, err = f.s.Seen(f.ctx, "never:seen", at(100))
	require.NoError(t, err)
	require.False(t, seen)

	var wg sync.WaitGroup
	var fresh atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen, err := f.s.Seen(f.ctx, "infobip:race", at(100))
			if err == nil && !seen {
				fresh.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), fresh.Load(), "one concurrent caller sees the key first")

	for i := range 5 {
		_, err := f.s.Seen(f.ctx, fmt.Sprintf("old:%d", i), at(10+i))
		require.NoError(t, err)
	}
	n, err := f.s.PurgeReplays(f.ctx, at(13), 10)
	require.NoError(t, err)
	require.Equal(t, 3, n, "until 10, 11, 12")
	n, err = f.s.PurgeReplays(f.ctx, at(50), 1)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the limit")
	for key, want := range map[string]bool{"old:0": false, "old:3": false, "old:4": true, "vonage:abc": true} {
		seen, err := f.s.Seen(f.ctx, key, at(200))
		require.NoError(t, err)
		require.Equal(t, want, seen, "%s", key)
	}
}
