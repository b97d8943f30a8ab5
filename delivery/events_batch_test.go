package delivery_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// countingStore holds the first ApplyUpdates until release is closed and
// records the size of each.
type countingStore struct {
	*memstore.Store
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	sizes   []int
}

func (c *countingStore) ApplyUpdates(ctx context.Context, us []delivery.StatusUpdate) ([]bool, error) {
	c.mu.Lock()
	c.sizes = append(c.sizes, len(us))
	c.mu.Unlock()
	first := false
	c.once.Do(func() { first = true })
	if first {
		close(c.entered)
		<-c.release
	}
	return c.Store.ApplyUpdates(ctx, us)
}

// TestChatEventsGroupUpdates: the status updates of callbacks that arrive
// while one is being written are written together, each applied once,
// forward only.
func TestChatEventsGroupUpdates(t *testing.T) {
	ctx := t.Context()
	st := &countingStore{Store: memstore.New(), entered: make(chan struct{}), release: make(chan struct{})}
	f := newEventsFixture(t, st.Store, messaging.TypeSimpleText, nil)
	co, c, ids, now := f.co, f.c, f.ids, f.now
	const n = 20
	msgs := make([]*messaging.Message, n)
	for i := range msgs {
		msgs[i] = f.message(fmt.Sprintf("9989012%05d", i), messaging.StatusSent)
	}
	require.NoError(t, st.AdmitMessages(ctx, co.ID, msgs, 1000))

	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st, Answers: answers(t, st), Now: func() time.Time { return now }})
	at := now.Add(time.Second)
	var wg sync.WaitGroup
	report := func(s delivery.ChatStatus) {
		defer wg.Done()
		_, err := handle(ctx, ev, s)
		require.NoError(t, err)
	}
	wg.Add(1)
	go report(delivery.ChatStatus{MessageID: msgs[0].ID, Status: messaging.StatusDelivered, At: at})
	<-st.entered
	// While the first is held: a seen and a repeated delivered for every
	// other message, and an event of an unknown message.
	for _, m := range msgs[1:] {
		wg.Add(2)
		go report(delivery.ChatStatus{MessageID: m.ID, Status: messaging.StatusSeen, At: at.Add(time.Second)})
		go report(delivery.ChatStatus{MessageID: m.ID, Status: messaging.StatusDelivered, At: at})
	}
	wg.Add(1)
	go report(delivery.ChatStatus{MessageID: ids.New(), Status: messaging.StatusDelivered, At: at})
	// Every callback is queued before the first write ends.
	require.Eventually(t, func() bool { return delivery.QueuedEvents(ev) == 2*(n-1)+1 }, 10*time.Second, time.Millisecond)
	close(st.release)
	wg.Wait()

	st.mu.Lock()
	sizes := append([]int(nil), st.sizes...)
	st.mu.Unlock()
	require.Equal(t, []int{1, 2*(n-1) + 1}, sizes, "the held write, then everything queued meanwhile in one")
	got, err := st.GetMessage(ctx, co.ID, msgs[0].ID)
	require.NoError(t, err)
	require.Equal(t, messaging.StatusDelivered, got.Status)
	for _, m := range msgs[1:] {
		got, err := st.GetMessage(ctx, co.ID, m.ID)
		require.NoError(t, err)
		require.Equal(t, messaging.StatusSeen, got.Status, "seen wins, whatever the order; a delivered after it changes nothing")
	}
	camp, err := st.GetCampaign(ctx, co.ID, c.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.StatusCounts{Delivered: 1, Seen: n - 1}, camp.Counts)
}

// TestChatStatusesOnce: the keys of the reports are recorded with them
// when the guard is the store of ChatEvents: a report whose key was taken
// before is not applied. Another guard, or a failure that may fall back,
// leaves the reports to ChatStatuses (ok false, nothing recorded).
func TestChatStatusesOnce(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: s})
	id := messaging.ID{7}
	ss := []delivery.ChatStatus{{MessageID: id, Status: messaging.StatusDelivered, At: time.Now()}}
	keys := []delivery.ReplayKey{{Key: "k:1", Until: time.Now().Add(time.Hour)}}

	_, _, ok, err := ev.ChatStatusesOnce(ctx, memstore.New(), keys, ss, nil)
	require.NoError(t, err)
	require.False(t, ok, "another store's guard")
	fb := []delivery.ChatStatus{{MessageID: id, Status: messaging.StatusFailed, Reason: delivery.ReasonNotOnChannel}}
	_, _, ok, err = ev.ChatStatusesOnce(ctx, s, keys, fb, nil)
	require.NoError(t, err)
	require.False(t, ok, "a failure that falls back")

	seen2, out, ok, err := delivery.Reports{Chat: ev}.ChatStatusesOnce(ctx, s, keys, ss, nil)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []bool{false}, seen2, "not recorded by the calls refused")
	require.Equal(t, []delivery.ChatEventOutcome{delivery.ChatEventIgnored}, out, "an unknown message")
	seen2, _, ok, err = ev.ChatStatusesOnce(ctx, s, keys, ss, nil)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []bool{true}, seen2, "taken before")

	two := append(ss, delivery.ChatStatus{MessageID: messaging.ID{8}, Status: messaging.StatusSeen, At: time.Now()})
	shared := []delivery.ReplayKey{{Key: "k:2", Until: time.Now().Add(time.Hour)}}
	seen2, out, ok, err = ev.ChatStatusesOnce(ctx, s, shared, two, []int{0, 0})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []bool{false}, seen2, "one key for both reports")
	require.Len(t, out, 2)
	seen2, _, _, err = ev.ChatStatusesOnce(ctx, s, shared, two, []int{0, 0})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, seen2)
}
