package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
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

// testApplyUpdatesOnce: the keys of callbacks are recorded with the
// updates they carry, in one write. An update whose key was recorded
// before, by an earlier call or earlier in the same call, is not
// applied; an update without a key applies as in ApplyUpdates, and a key
// without an update is recorded all the same. Of concurrent callers with
// the same key, one applies its update. A failed write records no key
// and applies nothing.
func testApplyUpdatesOnce(f *fixture) {
	t := f.t
	a := f.company("A")
	cc, chat := f.bulk(a.ID, messaging.ChannelChat, 4, at(0), messaging.CampaignInProgress)
	f.claim(messaging.ChannelChat, at(1), at(60), 4)
	for _, m := range chat {
		require.Equal(t, []bool{true}, f.apply(delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent, At: at(2)}))
	}
	up := func(m *messaging.Message, st messaging.MessageStatus, sec int) delivery.StatusUpdate {
		return delivery.StatusUpdate{MessageID: m.ID, Status: st, At: at(sec), Channel: messaging.ChannelChat, CompanyID: a.ID}
	}
	key := func(k string) delivery.ReplayKey { return delivery.ReplayKey{Key: k, Until: at(100)} }
	once := func(keys []delivery.ReplayKey, us []delivery.StatusUpdate, keyOf []int) ([]bool, []bool) {
		t.Helper()
		seen, applied, err := f.s.ApplyUpdatesOnce(f.ctx, keys, us, keyOf)
		require.NoError(t, err)
		return seen, applied
	}

	seen, applied := once([]delivery.ReplayKey{key("cb:1"), key("cb:2"), key("cb:1")},
		[]delivery.StatusUpdate{up(chat[0], messaging.StatusDelivered, 3), up(chat[1], messaging.StatusDelivered, 3),
			up(chat[0], messaging.StatusSeen, 4)}, []int{0, 1, 2})
	require.Equal(t, []bool{false, false, true}, seen, "cb:1 given twice: recorded before for its second")
	require.Equal(t, []bool{true, true, false}, applied)

	seen, applied = once([]delivery.ReplayKey{key("cb:1"), key("cb:3"), key("cb:4")},
		[]delivery.StatusUpdate{up(chat[0], messaging.StatusSeen, 5), up(chat[1], messaging.StatusSeen, 5),
			up(chat[2], messaging.StatusDelivered, 5)}, []int{0, 1, -1})
	require.Equal(t, []bool{true, false, false}, seen, "cb:1 a replay; cb:4 has no update")
	require.Equal(t, []bool{false, true, true}, applied, "the replay not applied; an update without a key applied")
	for k, want := range map[string]bool{"cb:2": true, "cb:3": true, "cb:4": true} {
		got, err := f.s.Seen(f.ctx, k, at(100))
		require.NoError(t, err)
		require.Equal(t, want, got, "%s", k)
	}
	require.Equal(t, messaging.StatusDelivered, f.getMessage(a.ID, chat[0].ID).Status)
	require.Equal(t, messaging.StatusSeen, f.getMessage(a.ID, chat[1].ID).Status)

	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	_, _, err := f.s.ApplyUpdatesOnce(ctx, []delivery.ReplayKey{key("cb:5")}, []delivery.StatusUpdate{up(chat[3], messaging.StatusDelivered, 6)}, []int{0})
	require.Error(t, err, "a write that fails")
	require.Equal(t, messaging.StatusSent, f.getMessage(a.ID, chat[3].ID).Status, "nothing applied")

	var wg sync.WaitGroup
	var fresh, moved atomic.Int32
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen, applied, err := f.s.ApplyUpdatesOnce(f.ctx, []delivery.ReplayKey{key("cb:5")},
				[]delivery.StatusUpdate{up(chat[3], messaging.StatusDelivered, 7)}, []int{0})
			if err == nil && !seen[0] {
				fresh.Add(1)
			}
			if err == nil && applied[0] {
				moved.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), fresh.Load(), "one concurrent caller records the key, and cb:5 was not kept by the failed write")
	require.Equal(t, int32(1), moved.Load())
	f.requireCounts(a.ID, cc.ID, messaging.StatusCounts{Delivered: 3, Seen: 1}, messaging.StatusCounts{})
	f.requireReconciled()
}
