package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// sender registers an approved (or not) sender of the company.
func (f *fixture) sender(companyID messaging.ID, senderID string, approved bool) {
	f.t.Helper()
	sd := messaging.SMSSender{CompanyID: companyID, SenderID: senderID, CreatedAt: base}
	require.NoError(f.t, f.s.CreateSMSSender(f.ctx, &sd))
	if approved {
		require.NoError(f.t, f.s.ApproveSMSSender(f.ctx, sd.ID))
	}
}

// part is an inbound part from phone to dest.
func part(phone, dest, text string, ref, count, seq, sec int) delivery.InboundPart {
	return delivery.InboundPart{From: phone, To: dest, Text: text, Ref: ref, Count: count, Seq: seq, At: at(sec)}
}

// testInbound: a message in one part is stored at once; one in several
// when its last part came, whatever the order, a part sent twice counted
// once; each is attributed to the company whose approved sender id is its
// destination (none when no approved sender has it), listed to that
// company latest first and by number, and reported by a message.inbound
// event to its subscribed endpoints.
func testInbound(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	f.sender(a.ID, "ACME", true)
	f.sender(b.ID, "GLOBEX", false)
	hook := f.endpoint(a.ID, webhook.MessageInbound)

	rec := func(p delivery.InboundPart) *messaging.InboundMessage {
		t.Helper()
		m, err := f.s.RecordInboundPart(f.ctx, p, f.id())
		require.NoError(t, err)
		return m
	}
	one := rec(part("447700900001", "ACME", "STOP", 0, 1, 1, 1))
	require.NotNil(t, one)
	require.Equal(t, a.ID, one.CompanyID)
	require.Equal(t, "STOP", one.Text)
	require.Equal(t, 1, one.Parts)

	require.Nil(t, rec(part("447700900002", "ACME", "world", 7, 3, 3, 2)))
	require.Nil(t, rec(part("447700900002", "ACME", "Hello ", 7, 3, 1, 3)))
	require.Nil(t, rec(part("447700900002", "ACME", "Hello ", 7, 3, 1, 3)), "a part sent again")
	require.Nil(t, rec(part("447700900003", "ACME", "other ", 7, 3, 2, 3)), "another number's part with the same reference")
	long := rec(part("447700900002", "ACME", "big ", 7, 3, 2, 4))
	require.NotNil(t, long)
	require.Equal(t, "Hello big world", long.Text)
	require.Equal(t, 3, long.Parts)
	requireTime(t, "ReceivedAt", at(4), long.ReceivedAt, nil)

	orphan := rec(part("447700900004", "GLOBEX", "hi", 0, 1, 1, 5))
	require.NotNil(t, orphan)
	require.True(t, orphan.CompanyID.IsZero(), "GLOBEX is not approved: no company")

	list, total, err := f.s.ListInbound(f.ctx, a.ID, messaging.InboundFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []messaging.ID{long.ID, one.ID}, []messaging.ID{list[0].ID, list[1].ID}, "latest first")
	requireSame(t, *long, list[0])
	list, total, err = f.s.ListInbound(f.ctx, a.ID, messaging.InboundFilter{Phone: "447700900001", PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	requireSame(t, *one, list[0])
	list, total, err = f.s.ListInbound(f.ctx, b.ID, messaging.InboundFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, list)

	ds, err := f.s.WaitingDeliveries(f.ctx, hook.ID, 10)
	require.NoError(t, err)
	require.Len(t, ds, 2)
	var texts []string
	for _, d := range ds {
		require.Equal(t, webhook.MessageInbound, d.Event.Type)
		var data webhook.InboundData
		require.NoError(t, json.Unmarshal(d.Event.Data, &data))
		texts = append(texts, fmt.Sprintf("%s %s %s", data.PhoneNumber, data.To, data.Text))
	}
	require.Equal(t, []string{"447700900001 ACME STOP", "447700900002 ACME Hello big world"}, texts)
}

// testInboundResent: a part the SMSC sends again after its message was
// assembled is ignored, whichever part it is; a handset reusing the
// reference for a new message (other texts) gets it assembled too.
func testInboundResent(f *fixture) {
	t := f.t
	a := f.company("A")
	f.sender(a.ID, "ACME", true)
	rec := func(p delivery.InboundPart) *messaging.InboundMessage {
		t.Helper()
		m, err := f.s.RecordInboundPart(f.ctx, p, f.id())
		require.NoError(t, err)
		return m
	}
	first := []delivery.InboundPart{
		part("447700900002", "ACME", "Привет, ", 9, 3, 1, 1),
		part("447700900002", "ACME", "как ", 9, 3, 2, 1),
		part("447700900002", "ACME", "дела?", 9, 3, 3, 2),
	}
	require.Nil(t, rec(first[0]))
	require.Nil(t, rec(first[1]))
	m := rec(first[2])
	require.NotNil(t, m)
	require.Equal(t, "Привет, как дела?", m.Text)
	for _, p := range []delivery.InboundPart{first[2], first[0], first[1], first[2]} {
		p.At = at(30)
		require.Nil(t, rec(p), "part %d sent again", p.Seq)
	}
	require.Nil(t, rec(part("447700900002", "ACME", "Second ", 9, 3, 1, 60)))
	require.Nil(t, rec(part("447700900002", "ACME", "message ", 9, 3, 2, 61)))
	again := rec(part("447700900002", "ACME", "here", 9, 3, 3, 62))
	require.NotNil(t, again, "a new message with the reference")
	require.Equal(t, "Second message here", again.Text)
	_, total, err := f.s.ListInbound(f.ctx, a.ID, messaging.InboundFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, 2, total)
}

// testInboundConcurrent: the parts of many messages, each part sent
// twice, arriving at once in any order from many goroutines, make exactly
// one message each, with its text; the same parts all sent again make
// none.
func testInboundConcurrent(f *fixture) {
	t := f.t
	a := f.company("A")
	f.sender(a.ID, "ACME", true)
	const messages, count, workers = 200, 3, 16
	type key struct {
		phone string
		ref   int
	}
	want := map[key]string{}
	var parts []delivery.InboundPart
	for i := range messages {
		// 20 numbers, each sending 10 messages; numbers share references.
		k := key{fmt.Sprintf("4477009%05d", i/10), i % 10}
		texts := []string{fmt.Sprintf("Сообщение %d: ", i), "всё хорошо, ", fmt.Sprintf("спасибо 👍 %d", i)}
		want[k] = strings.Join(texts, "")
		for seq, text := range texts {
			p := part(k.phone, "ACME", text, k.ref, count, seq+1, 10)
			parts = append(parts, p, p)
		}
	}
	deliver := func(seed uint64) map[key][]string {
		rng := rand.New(rand.NewPCG(seed, seed))
		order := slices.Clone(parts)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		feed := make(chan delivery.InboundPart)
		var mu sync.Mutex
		got := map[key][]string{}
		var errs []error
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for p := range feed {
					m, err := f.s.RecordInboundPart(f.ctx, p, f.id())
					mu.Lock()
					switch {
					case err != nil:
						errs = append(errs, err)
					case m != nil:
						k := key{p.From, p.Ref}
						got[k] = append(got[k], m.Text)
					}
					mu.Unlock()
				}
			})
		}
		for _, p := range order {
			feed <- p
		}
		close(feed)
		wg.Wait()
		require.NoError(t, errors.Join(errs...), "seed %d", seed)
		return got
	}
	got := deliver(1)
	require.Len(t, got, messages, "every message assembled (seed 1)")
	for k, text := range want {
		require.Equal(t, []string{text}, got[k], "message %v assembled once (seed 1)", k)
	}
	require.Empty(t, deliver(2), "parts sent again make no message (seed 2)")
	_, total, err := f.s.ListInbound(f.ctx, a.ID, messaging.InboundFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, messages, total)
}
