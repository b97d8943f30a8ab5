package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// fakeOutbox is an in-memory outbox for the sender's unit tests.
type fakeOutbox struct {
	mu         sync.Mutex
	endpoints  []webhook.Endpoint
	deliveries []*webhook.Delivery
	attempts   []webhook.Attempt
	purges     []time.Time
}

func (o *fakeOutbox) WaitingDeliveries(_ context.Context, endpointID messaging.ID, limit int) ([]webhook.Delivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []webhook.Delivery
	for _, d := range o.deliveries {
		if d.EndpointID == endpointID && d.State == webhook.Waiting && len(out) < limit {
			out = append(out, *d)
		}
	}
	return out, nil
}

func (o *fakeOutbox) LeaseWebhooks(context.Context, string, time.Time, time.Time) ([]webhook.Endpoint, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []webhook.Endpoint
	for _, e := range o.endpoints {
		if e.DisabledAt == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

func (o *fakeOutbox) RecordAttempts(_ context.Context, as []webhook.Attempt) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range as {
		for _, d := range o.deliveries {
			if d.ID == a.DeliveryID {
				d.Attempts++
				d.State, d.NextAt, d.LastStatus, d.LastError = a.State, a.NextAt, a.Status, a.Error
			}
		}
	}
	o.attempts = append(o.attempts, as...)
	return nil
}

func (o *fakeOutbox) DisableWebhook(_ context.Context, id messaging.ID, at time.Time, reason string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.endpoints {
		if o.endpoints[i].ID == id {
			o.endpoints[i].DisabledAt, o.endpoints[i].DisabledReason = &at, reason
			return nil
		}
	}
	return webhook.NotFound(id)
}

func (o *fakeOutbox) PurgeEvents(_ context.Context, before time.Time, limit int) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.purges = append(o.purges, before)
	return 0, nil
}

// add writes an event about subject for every endpoint.
func (o *fakeOutbox) add(ids *messaging.IDGenerator, subject messaging.ID, label string) webhook.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	data, _ := json.Marshal(map[string]string{"label": label})
	ev := webhook.Event{ID: ids.New(), Type: webhook.MessageStatus, Subject: subject, CreatedAt: time.Now(), Data: data}
	for _, e := range o.endpoints {
		o.deliveries = append(o.deliveries, &webhook.Delivery{ID: ids.New(), EndpointID: e.ID, Event: ev, NextAt: ev.CreatedAt})
	}
	return ev
}

// addWrite writes events about subjects, labelled, as a store keeping one
// write's events for an endpoint as one delivery does: for each endpoint,
// the events share one delivery ID.
func (o *fakeOutbox) addWrite(ids *messaging.IDGenerator, subjects []messaging.ID, labels []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	evs := make([]webhook.Event, len(labels))
	for i, l := range labels {
		data, _ := json.Marshal(map[string]string{"label": l})
		evs[i] = webhook.Event{ID: ids.New(), Type: webhook.MessageStatus, Subject: subjects[i], CreatedAt: time.Now(), Data: data}
	}
	for _, e := range o.endpoints {
		id := ids.New()
		for _, ev := range evs {
			o.deliveries = append(o.deliveries, &webhook.Delivery{ID: id, EndpointID: e.ID, Event: ev, NextAt: ev.CreatedAt})
		}
	}
}

func (o *fakeOutbox) waiting() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, d := range o.deliveries {
		if d.State == webhook.Waiting {
			n++
		}
	}
	return n
}

// request is what a fake endpoint received.
type request struct {
	url    string
	header map[string]string
	body   []byte
}

// fakePoster answers with answer(request number for its label, label).
type fakePoster struct {
	mu     sync.Mutex
	got    []request
	tries  map[string]int
	answer func(label string, try int) (int, error)
}

func (p *fakePoster) Post(_ context.Context, url string, header map[string]string, body []byte) (int, error) {
	var ev struct {
		Data struct {
			Label string `json:"label"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return 0, err
	}
	p.mu.Lock()
	if p.tries == nil {
		p.tries = map[string]int{}
	}
	p.tries[ev.Data.Label]++
	try := p.tries[ev.Data.Label]
	p.got = append(p.got, request{url: url, header: header, body: body})
	p.mu.Unlock()
	if p.answer == nil {
		return 204, nil
	}
	return p.answer(ev.Data.Label, try)
}

// labels returns the labels of the requests the endpoint got, in order.
func (p *fakePoster) labels() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, r := range p.got {
		var ev struct {
			Data struct {
				Label string `json:"label"`
			} `json:"data"`
		}
		_ = json.Unmarshal(r.body, &ev)
		out = append(out, ev.Data.Label)
	}
	return out
}

func runSender(t *testing.T, out *fakeOutbox, p webhook.Poster, tune func(*webhook.SenderConfig)) (stop func()) {
	t.Helper()
	cfg := webhook.SenderConfig{Store: out, Poster: p, Backoff: messaging.Backoff{Min: 20 * time.Millisecond, Max: 20 * time.Millisecond},
		Idle: 5 * time.Millisecond, Lease: 300 * time.Millisecond}
	if tune != nil {
		tune(&cfg)
	}
	s, err := webhook.NewSender(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		require.NoError(t, s.Run(ctx))
	}()
	return func() { cancel(); <-done }
}

func TestSenderDeliversSignedEventsInOrder(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/h", Secret: "whsec_now", PreviousSecret: "whsec_before",
		PreviousUntil: time.Now().Add(time.Hour), Events: []webhook.EventType{webhook.MessageStatus}}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	subjects := []messaging.ID{ids.New(), ids.New(), ids.New()}
	var events []webhook.Event
	for _, step := range []string{"Sent", "Delivered", "Seen"} {
		for i, s := range subjects {
			events = append(events, out.add(ids, s, string(rune('a'+i))+"-"+step))
		}
	}
	p := &fakePoster{}
	stop := runSender(t, out, p, nil)
	defer stop()
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	stop()

	got := p.labels()
	require.Len(t, got, 9, "each event once")
	require.NotEmpty(t, out.purges, "old events are purged when the sender starts")
	require.WithinDuration(t, time.Now().Add(-webhook.DefaultKeep), out.purges[0], time.Minute)
	for _, s := range []string{"a", "b", "c"} {
		require.Less(t, indexOf(got, s+"-Sent"), indexOf(got, s+"-Delivered"))
		require.Less(t, indexOf(got, s+"-Delivered"), indexOf(got, s+"-Seen"))
	}
	for _, r := range p.got {
		require.Equal(t, ep.URL, r.url)
		require.Equal(t, "application/json", r.header["Content-Type"])
		id := r.header[webhook.EventIDHeader]
		require.NotEmpty(t, id)
		require.NoError(t, webhook.Verify("whsec_now", r.header[webhook.SignatureHeader], r.body, time.Now(), webhook.DefaultTolerance))
		require.NoError(t, webhook.Verify("whsec_before", r.header[webhook.SignatureHeader], r.body, time.Now(), webhook.DefaultTolerance),
			"both secrets sign during a rotation")
		var body map[string]any
		require.NoError(t, json.Unmarshal(r.body, &body))
		require.Equal(t, id, body["id"])
		require.Equal(t, "message.status", body["type"])
		require.NotEmpty(t, body["createdAt"])
	}
}

// A failed attempt is tried again after the backoff; the subject's later
// events wait for it, other subjects do not.
func TestSenderRetriesAndKeepsASubjectInOrder(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/h", Secret: "whsec_x"}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	x, y := ids.New(), ids.New()
	out.add(ids, x, "x1")
	out.add(ids, y, "y1")
	out.add(ids, x, "x2")
	out.add(ids, y, "y2")
	p := &fakePoster{answer: func(label string, try int) (int, error) {
		if label == "x1" && try <= 2 {
			if try == 1 {
				return 500, nil
			}
			return 0, errors.New("connection refused")
		}
		return 200, nil
	}}
	stop := runSender(t, out, p, nil)
	defer stop()
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	stop()
	got := p.labels()
	require.Equal(t, 3, countOf(got, "x1"), "two failures, then delivered")
	require.Equal(t, 1, countOf(got, "x2"))
	require.Greater(t, indexOf(got, "x2"), lastIndexOf(got, "x1"), "x2 only once x1 was taken")
	require.Less(t, indexOf(got, "y2"), lastIndexOf(got, "x1"), "y goes on while x waits")
	var errs []string
	for _, a := range out.attempts {
		if a.Error != "" {
			errs = append(errs, a.Error)
		}
	}
	require.ElementsMatch(t, []string{"HTTP 500", "connection refused"}, errs)
}

// 410 Gone disables the endpoint: nothing more is sent to it.
func TestSenderDisablesAGoneEndpoint(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/h", Secret: "whsec_x"}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	for i := range 20 {
		out.add(ids, ids.New(), "e"+string(rune('a'+i)))
	}
	p := &fakePoster{answer: func(string, int) (int, error) { return 410, nil }}
	stop := runSender(t, out, p, func(c *webhook.SenderConfig) { c.Concurrency = 1 })
	defer stop()
	require.Eventually(t, func() bool {
		out.mu.Lock()
		defer out.mu.Unlock()
		return out.endpoints[0].DisabledAt != nil
	}, 5*time.Second, 5*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	stop()
	require.Len(t, p.labels(), 1, "the first 410 stops the endpoint")
	require.Equal(t, "answered 410 Gone", out.endpoints[0].DisabledReason)
	require.Equal(t, webhook.GaveUp, out.deliveries[0].State)
}

// After RetryFor a delivery is given up and the subject's next event goes.
func TestSenderGivesUpAfterTheRetryPeriod(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/h", Secret: "whsec_x"}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	x := ids.New()
	out.add(ids, x, "x1")
	out.add(ids, x, "x2")
	p := &fakePoster{answer: func(label string, _ int) (int, error) {
		if label == "x1" {
			return 503, nil
		}
		return 204, nil
	}}
	stop := runSender(t, out, p, func(c *webhook.SenderConfig) { c.RetryFor = 100 * time.Millisecond })
	defer stop()
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	stop()
	got := p.labels()
	require.GreaterOrEqual(t, countOf(got, "x1"), 2)
	require.Equal(t, "x2", got[len(got)-1])
	require.Equal(t, webhook.GaveUp, out.deliveries[0].State)
	require.Equal(t, webhook.Delivered, out.deliveries[1].State)
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func lastIndexOf(list []string, s string) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] == s {
			return i
		}
	}
	return -1
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// Refresh makes a new secret sign from the next request, without waiting
// for the lease renewal.
func TestSenderRefreshTakesANewSecret(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/h", Secret: "whsec_old"}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	p := &fakePoster{}
	var s *webhook.Sender
	cfg := webhook.SenderConfig{Store: out, Poster: p, Idle: 5 * time.Millisecond, Lease: time.Hour}
	s, err := webhook.NewSender(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	out.add(ids, ids.New(), "before")
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	out.mu.Lock()
	out.endpoints[0].Secret = "whsec_new"
	out.mu.Unlock()
	s.Refresh()
	require.Eventually(t, func() bool {
		out.add(ids, ids.New(), "after")
		require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
		p.mu.Lock()
		defer p.mu.Unlock()
		last := p.got[len(p.got)-1]
		return webhook.Verify("whsec_new", last.header[webhook.SignatureHeader], last.body, time.Now(), 0) == nil
	}, 5*time.Second, 20*time.Millisecond, "the lease renews only hourly: Refresh brought the new secret")
}

// countingObserver adds up what a Sender reports of its attempts.
type countingObserver struct {
	mu                       sync.Mutex
	requests                 int
	delivered, retry, gaveUp int
	lags                     []time.Duration
}

func (o *countingObserver) WebhookAttempt(delivered, retry, gaveUp int, latency, lag time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests++
	o.delivered, o.retry, o.gaveUp = o.delivered+delivered, o.retry+retry, o.gaveUp+gaveUp
	if delivered > 0 {
		o.lags = append(o.lags, lag)
	}
}

// TestSenderObservesAttempts: the observer hears of every request, with
// the events it delivered or left to be sent again, and for a delivered
// one how long its event waited since it was written.
func TestSenderObservesAttempts(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/h", Secret: "whsec_x"}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	x, y := ids.New(), ids.New()
	out.add(ids, x, "x1")
	out.add(ids, y, "y1")
	written := time.Now()
	p := &fakePoster{answer: func(label string, try int) (int, error) {
		if label == "x1" && try == 1 {
			return 503, nil
		}
		return 200, nil
	}}
	obs := &countingObserver{}
	stop := runSender(t, out, p, func(c *webhook.SenderConfig) { c.Observer = obs })
	defer stop()
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	stop()
	since := time.Since(written)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Equal(t, 3, obs.requests, "x1 twice, y1 once")
	require.Equal(t, 2, obs.delivered)
	require.Equal(t, 1, obs.retry, "x1's first answer, 503")
	require.Zero(t, obs.gaveUp)
	require.Len(t, obs.lags, 2)
	for _, lag := range obs.lags {
		require.Greater(t, lag, time.Duration(0))
		require.LessOrEqual(t, lag, since+time.Second, "from the event's creation, not before")
	}
}

// TestSenderObservesGivingUp: an endpoint answering 410 Gone gives up
// every event of the request, and the observer hears of each one.
func TestSenderObservesGivingUp(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	ep := webhook.Endpoint{ID: ids.New(), URL: "https://hooks.example.com/h", Secret: "whsec_x",
		Batch: webhook.Batch{MaxEvents: 10}}
	out := &fakeOutbox{endpoints: []webhook.Endpoint{ep}}
	out.add(ids, ids.New(), "x1")
	out.add(ids, ids.New(), "y1")
	p := &fakePoster{answer: func(string, int) (int, error) { return 410, nil }}
	obs := &countingObserver{}
	stop := runSender(t, out, p, func(c *webhook.SenderConfig) { c.Observer = obs })
	defer stop()
	require.Eventually(t, func() bool { return out.waiting() == 0 }, 5*time.Second, 5*time.Millisecond)
	stop()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Equal(t, 2, obs.gaveUp, "both events of the answered request")
	require.Zero(t, obs.retry)
	require.Zero(t, obs.delivered)
}
