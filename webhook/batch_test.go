package webhook_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// recordingPoster keeps every request and answers with answer(n), n the
// request's number at its URL from 1.
type recordingPoster struct {
	mu     sync.Mutex
	got    map[string][]request
	answer func(url string, n int) int
}

func (p *recordingPoster) Post(_ context.Context, url string, header map[string]string, body []byte) (int, error) {
	p.mu.Lock()
	if p.got == nil {
		p.got = map[string][]request{}
	}
	p.got[url] = append(p.got[url], request{url: url, header: header, body: body})
	n := len(p.got[url])
	p.mu.Unlock()
	if p.answer == nil {
		return 204, nil
	}
	return p.answer(url, n), nil
}

func (p *recordingPoster) requests(url string) []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]request(nil), p.got[url]...)
}

// labelsOf returns the labels of a request's events, in order.
func labelsOf(t *testing.T, r request) []string {
	t.Helper()
	evs, err := webhook.ParseEvents(r.body)
	require.NoError(t, err)
	var out []string
	for _, e := range evs {
		var d struct{ Label string }
		require.NoError(t, json.Unmarshal(e.Data, &d))
		out = append(out, d.Label)
	}
	return out
}

// A batched endpoint gets each subject's events in order, several a
// request, each request signed over its whole body; an endpoint beside it
// without batches gets one event a request.
func TestSenderBatchesInOrderBesideSingles(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	batched := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/batched", Secret: "whsec_b",
		Batch: webhook.Batch{MaxEvents: 4}}
	single := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/single", Secret: "whsec_s"}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{batched, single}}
	subjects := []messaging.ID{ids.New(), ids.New(), ids.New()}
	for _, step := range []string{"1", "2", "3", "4", "5"} {
		for i, s := range subjects {
			out.add(ids, s, string(rune('a'+i))+step)
		}
	}
	p := &recordingPoster{}
	stop := runSender(t, out, p, nil)
	defer stop()
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	stop()

	var all []string
	reqs := p.requests(batched.URL)
	require.Less(t, len(reqs), 15)
	for _, r := range reqs {
		require.NoError(t, webhook.Verify("whsec_b", r.header[webhook.SignatureHeader], r.body, time.Now(), webhook.DefaultTolerance))
		require.ErrorIs(t, webhook.Verify("whsec_s", r.header[webhook.SignatureHeader], r.body, time.Now(), 0), webhook.ErrBadSignature)
		require.Empty(t, r.header[webhook.EventIDHeader], "a batch has no one event id")
		got := labelsOf(t, r)
		require.LessOrEqual(t, len(got), 4)
		require.Equal(t, strconv.Itoa(len(got)), r.header[webhook.EventCountHeader])
		require.Contains(t, string(r.body), `{"events":[{"id":"`)
		all = append(all, got...)
	}
	require.Len(t, all, 15, "each event once")
	for _, s := range []string{"a", "b", "c"} {
		for step := 1; step < 5; step++ {
			require.Less(t, indexOf(all, s+strconv.Itoa(step)), indexOf(all, s+strconv.Itoa(step+1)), "subject %s in order", s)
		}
	}

	singles := p.requests(single.URL)
	require.Len(t, singles, 15)
	for _, r := range singles {
		require.NoError(t, webhook.Verify("whsec_s", r.header[webhook.SignatureHeader], r.body, time.Now(), webhook.DefaultTolerance))
		evs, err := webhook.ParseEvents(r.body)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Equal(t, r.header[webhook.EventIDHeader], evs[0].ID)
		require.Empty(t, r.header[webhook.EventCountHeader])
	}
}

// A batch that fails is sent again whole: the same events, the same ids,
// in the same order; each delivery records both attempts.
func TestSenderRetriesABatchWhole(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/b", Secret: "whsec_b", Batch: webhook.Batch{MaxEvents: 10}}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	x, y := ids.New(), ids.New()
	for _, l := range []string{"x1", "y1", "x2", "y2", "x3"} {
		s := x
		if l[0] == 'y' {
			s = y
		}
		out.add(ids, s, l)
	}
	p := &recordingPoster{answer: func(_ string, n int) int {
		if n == 1 {
			return 503
		}
		return 200
	}}
	stop := runSender(t, out, p, nil)
	defer stop()
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	stop()

	reqs := p.requests(ep.URL)
	require.Len(t, reqs, 2)
	first, err := webhook.ParseEvents(reqs[0].body)
	require.NoError(t, err)
	second, err := webhook.ParseEvents(reqs[1].body)
	require.NoError(t, err)
	require.Equal(t, first, second, "the same events and ids")
	require.Equal(t, []string{"x1", "y1", "x2", "y2", "x3"}, labelsOf(t, reqs[1]))
	require.Len(t, out.attempts, 10)
	for _, d := range out.deliveries {
		require.Equal(t, 2, d.Attempts)
		require.Equal(t, webhook.Delivered, d.State)
	}
	failed := 0
	for _, a := range out.attempts {
		if a.Error == "HTTP 503" {
			failed++
		}
	}
	require.Equal(t, 5, failed, "the whole batch failed once")
}

// Events a store keeps as one delivery (sharing its ID) go whole in one
// request, each subject in order, and one attempt records them.
func TestSenderKeepsADeliveryOfSeveralEventsWhole(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/b", Secret: "whsec_b", Batch: webhook.Batch{MaxEvents: 4}}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	a, b, c, d := ids.New(), ids.New(), ids.New(), ids.New()
	out.addWrite(ids, []messaging.ID{a, b}, []string{"a1", "b1"})
	out.addWrite(ids, []messaging.ID{a, c, d}, []string{"a2", "c1", "d1"})
	out.addWrite(ids, []messaging.ID{b}, []string{"b2"})
	out.addWrite(ids, []messaging.ID{c, d}, []string{"c2", "d2"})
	p := &recordingPoster{answer: func(_ string, n int) int {
		if n == 1 {
			return 503
		}
		return 200
	}}
	stop := runSender(t, out, p, func(c *webhook.SenderConfig) {
		c.Backoff = messaging.Backoff{Min: time.Millisecond, Max: time.Millisecond}
	})
	defer stop()
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	stop()

	writes := [][]string{{"a1", "b1"}, {"a2", "c1", "d1"}, {"b2"}, {"c2", "d2"}}
	var all []string
	units := 0
	for _, r := range p.requests(ep.URL) {
		got := labelsOf(t, r)
		require.LessOrEqual(t, len(got), 4)
		for i := 0; i < len(got); {
			var w []string
			for _, x := range writes {
				if x[0] == got[i] {
					w = x
				}
			}
			require.NotNil(t, w, "a request starts each delivery with its first event: %v", got)
			require.Equal(t, w, got[i:min(i+len(w), len(got))], "a delivery goes whole: %v", got)
			i += len(w)
			units++
		}
		all = append(all, got...)
	}
	require.Len(t, out.attempts, units, "one attempt a delivery a request")
	for _, s := range []string{"a", "b", "c", "d"} {
		require.Less(t, indexOf(all[len(all)-8:], s+"1"), indexOf(all[len(all)-8:], s+"2"), "subject %s in order", s)
	}
}

// A batch that cannot grow because the events after it wait for it (they
// share a subject and would not fit) goes at once: with MaxEvents due in
// all, waiting fills nothing.
func TestSenderSendsABatchHeldByOrderAtOnce(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/b", Secret: "whsec_b",
		Batch: webhook.Batch{MaxEvents: 3, MaxWait: time.Minute}}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	a, b, c := ids.New(), ids.New(), ids.New()
	out.addWrite(ids, []messaging.ID{a, b}, []string{"a1", "b1"})
	out.addWrite(ids, []messaging.ID{a, c}, []string{"a2", "c1"})
	p := &recordingPoster{}
	stop := runSender(t, out, p, nil)
	defer stop()
	require.Eventually(t, func() bool { return len(p.requests(ep.URL)) > 0 }, 5*time.Second, 5*time.Millisecond,
		"four events are due: the first batch does not wait a minute to fill")
	stop()
	require.Equal(t, []string{"a1", "b1"}, labelsOf(t, p.requests(ep.URL)[0]))
}

// A batch smaller than MaxEvents waits until its oldest event has waited
// MaxWait; a full one goes at once.
func TestSenderWaitsForABatchToFill(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/b", Secret: "whsec_b",
		Batch: webhook.Batch{MaxEvents: 3, MaxWait: 400 * time.Millisecond}}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	p := &recordingPoster{}
	stop := runSender(t, out, p, nil)
	defer stop()
	start := time.Now()
	out.add(ids, ids.New(), "a")
	out.add(ids, ids.New(), "b")
	time.Sleep(150 * time.Millisecond)
	require.Empty(t, p.requests(ep.URL), "two of three wait")
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 350*time.Millisecond)
	reqs := p.requests(ep.URL)
	require.Len(t, reqs, 1)
	require.Equal(t, []string{"a", "b"}, labelsOf(t, reqs[0]))

	full := time.Now()
	for _, l := range []string{"c", "d", "e"} {
		out.add(ids, ids.New(), l)
	}
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	require.Less(t, time.Since(full), 300*time.Millisecond, "a full batch does not wait")
	stop()
	reqs = p.requests(ep.URL)
	require.Len(t, reqs, 2)
	require.Equal(t, []string{"c", "d", "e"}, labelsOf(t, reqs[1]))
}

func TestParseEvents(t *testing.T) {
	one := `{"id":"e1","type":"message.status","createdAt":"2026-11-27T10:00:00.000Z","data":{"status":"Sent"}}`
	got, err := webhook.ParseEvents([]byte(one))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "e1", got[0].ID)
	require.JSONEq(t, `{"status":"Sent"}`, string(got[0].Data))

	got, err = webhook.ParseEvents([]byte(`{"events":[` + one + `,{"id":"e2","type":"campaign.status","data":{}}]}`))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, []string{"e1", "e2"}, []string{got[0].ID, got[1].ID})
	require.Equal(t, "campaign.status", got[1].Type)

	for _, bad := range []string{`not json`, `{"type":"message.status"}`, `{"events":[{"type":"x"}]}`, `[]`} {
		_, err := webhook.ParseEvents([]byte(bad))
		require.ErrorIs(t, err, webhook.ErrNotEvents, bad)
	}
}
