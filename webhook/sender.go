package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/pace"
	"github.com/heraldhq/herald/messaging"
)

// Poster sends one request to an endpoint: an adapter over HTTP. Post
// returns the HTTP status the endpoint answered, or 0 and an error when
// it gave none (unreachable, refused by the address rules, too slow).
type Poster interface {
	Post(ctx context.Context, url string, header map[string]string, body []byte) (status int, err error)
}

// SenderConfig configures a Sender. Store and Poster are required; every
// other field has a documented zero-value default.
type SenderConfig struct {
	// Store holds the endpoints and the outbox. Required.
	Store interface {
		Outbox
		Purger
	}
	// Poster sends the requests. Required.
	Poster Poster
	// Owner names this process in endpoint leases; processes sharing a
	// store need different names. Default "herald".
	Owner string
	// Lease is how long an endpoint stays with this process after its
	// last renewal: another process takes it over that long after this
	// one stopped. Default 15 seconds.
	Lease time.Duration
	// RetryFor is how long after its event a delivery is tried again;
	// then Herald gives up on it. Default 24 hours.
	RetryFor time.Duration
	// Backoff is the wait between attempts of one delivery, with jitter.
	// Default 5 seconds doubling up to 1 hour.
	Backoff messaging.Backoff
	// Concurrency is how many requests go to one endpoint at once.
	// Default 16.
	Concurrency int
	// Timeout bounds one request. Default 10 seconds.
	Timeout time.Duration
	// Keep is how long events are kept after they were written, for
	// the delivery log and redelivery; older ones are purged hourly in the
	// background, a few thousand at a time. Default 7 days; never less
	// than RetryFor.
	Keep time.Duration
	// Idle is how long an endpoint with nothing to send waits before
	// looking again. Default 100 milliseconds.
	Idle time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives endpoints that fail and are disabled. Default:
	// discard.
	Logger *slog.Logger
	// Tracer opens a span for each attempt (one request, one event or a
	// batch), a trace of its own; the Poster passes its context on with
	// the request. Nil: no span.
	Tracer trace.TracerProvider
	// Observer is told of every attempt, for metrics. Nil: nobody.
	Observer Observer
}

// Observer receives the outcome of each webhook request (SenderConfig.
// Observer). Its methods are called from the endpoints' loops, several at
// once.
type Observer interface {
	// WebhookAttempt reports one request to an endpoint: how many of the
	// events it carried it delivered, how many wait to be tried again,
	// and how many Herald gave up on; and how long the endpoint took to
	// answer. For a delivering request, lag is how long its oldest event
	// waited: from the event's creation to the answer that delivered it.
	WebhookAttempt(delivered, retry, gaveUp int, latency, lag time.Duration)
}

// Defaults of SenderConfig.
const (
	DefaultLease       = 15 * time.Second
	DefaultRetryFor    = 24 * time.Hour
	DefaultConcurrency = 16
	DefaultTimeout     = 10 * time.Second
	DefaultIdle        = 100 * time.Millisecond
	DefaultKeep        = 7 * 24 * time.Hour
)

// Purge pacing: how often, how many events a batch, and the pause after a
// batch (purgeShare times as long as it took, at least purgePause).
const (
	purgeEvery = time.Hour
	purgeBatch = 5000
	purgePause = 20 * time.Millisecond
	purgeShare = 4
)

// DefaultBackoff is the wait between attempts of a delivery.
var DefaultBackoff = messaging.Backoff{Min: 5 * time.Second, Max: time.Hour}

// maxIdle is the longest an endpoint loop waits between rounds that find
// nothing to send, without a Wake.
const maxIdle = time.Second

// roundSize is how many waiting deliveries of an endpoint one round
// reads.
const roundSize = 1000

// giveUpAfterFailures is how many attempts in a row may fail in one round
// before the round stops sending: an endpoint that is down is not sent the
// rest of a round only to fail again.
const giveUpAfterFailures = 5

// Sender sends the outbox's deliveries to their endpoints: each endpoint
// this process leases has a loop of rounds. A round reads the oldest
// waiting deliveries and sends, for each subject, the first one if it is
// due, Concurrency at a time; the next round sends what follows. So an
// endpoint receives one subject's events in order, each once it took the
// one before (or Herald gave up on it), while different subjects go side
// by side.
//
// An endpoint taking batches (Endpoint.Batch) gets each round's due
// events in requests of up to Batch.MaxEvents: a subject's events go in
// order in one request, so requests sent side by side share no subject.
// A round with fewer events due than that waits until the oldest has
// waited Batch.MaxWait.
//
// A 2xx answer delivers; 410 Gone disables the endpoint; any other answer,
// a redirect included, or none is tried again after Backoff, until
// RetryFor after the event. Every attempt is recorded with its status,
// error and latency.
type Sender struct {
	cfg    SenderConfig
	log    *slog.Logger
	tracer trace.Tracer // nil without SenderConfig.Tracer

	mu      sync.Mutex
	running map[messaging.ID]context.CancelFunc
	// endpoints are the leased endpoints as last read: a loop reads its
	// own at each round, so a rotated secret signs from the next round.
	endpoints map[messaging.ID]Endpoint
	// wake is closed (and replaced) to wake every endpoint loop.
	wake chan struct{}
	// refresh asks Run to lease (and read) the endpoints again at once.
	refresh chan struct{}
}

// NewSender returns a Sender for cfg.
func NewSender(cfg SenderConfig) (*Sender, error) {
	if cfg.Store == nil || cfg.Poster == nil {
		return nil, errors.New("webhook: SenderConfig.Store and Poster are required")
	}
	if cfg.Owner == "" {
		cfg.Owner = "herald"
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = DefaultRetryFor
	}
	cfg.Backoff = cfg.Backoff.Or(DefaultBackoff)
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultKeep
	}
	cfg.Keep = max(cfg.Keep, cfg.RetryFor)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var tracer trace.Tracer
	if cfg.Tracer != nil {
		tracer = cfg.Tracer.Tracer(tracerName)
	}
	return &Sender{cfg: cfg, log: log, tracer: tracer, running: map[messaging.ID]context.CancelFunc{}, endpoints: map[messaging.ID]Endpoint{},
		wake: make(chan struct{}), refresh: make(chan struct{}, 1)}, nil
}

// Wake makes the endpoint loops look for deliveries at once rather than
// after their idle wait.
func (s *Sender) Wake() {
	s.mu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// Refresh makes Run read the endpoints again at once, rather than at its
// next lease renewal: call it when endpoints were registered, removed or
// given a new secret.
func (s *Sender) Refresh() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// woken returns the channel the next Wake closes.
func (s *Sender) woken() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wake
}

// Run leases endpoints and sends to them until ctx ends; then it waits
// for the requests in flight (each bounded by Timeout) and returns nil.
func (s *Sender) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.purge(ctx) })
	renew := time.NewTicker(s.cfg.Lease / 3)
	defer renew.Stop()
	for {
		now := s.cfg.Now()
		eps, err := s.cfg.Store.LeaseWebhooks(ctx, s.cfg.Owner, now, now.Add(s.cfg.Lease))
		if err != nil && ctx.Err() == nil {
			s.log.Warn("webhooks: cannot lease endpoints", "err", err)
		}
		leased := make(map[messaging.ID]bool, len(eps))
		for _, e := range eps {
			leased[e.ID] = true
		}
		s.mu.Lock()
		if err == nil {
			for id, stop := range s.running {
				if !leased[id] { // deleted, disabled, or taken by another process
					stop()
					delete(s.running, id)
					delete(s.endpoints, id)
				}
			}
		}
		for _, e := range eps {
			s.endpoints[e.ID] = e
			if _, ok := s.running[e.ID]; ok {
				continue
			}
			ectx, stop := context.WithCancel(ctx)
			s.running[e.ID] = stop
			wg.Go(func() { s.loop(ectx, e.ID) })
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-renew.C:
		case <-s.refresh:
		}
	}
}

// purge removes the events older than Keep, hourly, batch after batch.
func (s *Sender) purge(ctx context.Context) {
	t := time.NewTicker(purgeEvery)
	defer t.Stop()
	for {
		pace.Batches(ctx, purgePause, purgeShare, func() bool {
			n, err := s.cfg.Store.PurgeEvents(ctx, s.cfg.Now().Add(-s.cfg.Keep), purgeBatch)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("webhooks: purging old events", "err", err)
				}
				return false
			}
			return n == purgeBatch
		})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// loop sends the deliveries of endpoint id round after round until ctx
// ends.
func (s *Sender) loop(ctx context.Context, id messaging.ID) {
	defer func() {
		s.mu.Lock()
		delete(s.running, id)
		s.mu.Unlock()
	}()
	idle := s.cfg.Idle // grows while rounds find nothing, up to maxIdle
	for ctx.Err() == nil {
		woken := s.woken()
		s.mu.Lock()
		e, ok := s.endpoints[id]
		s.mu.Unlock()
		if !ok { // no longer leased
			return
		}
		sent, wait, hold, gone, err := s.round(ctx, e)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("webhooks: round failed", "endpoint", e.ID, "err", err)
		}
		if gone {
			return
		}
		if sent > 0 && err == nil {
			idle = s.cfg.Idle
			continue
		}
		if hold { // a batch fills: look again when it is due, or sooner
			t := time.NewTimer(min(wait, s.cfg.Idle))
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			idle = s.cfg.Idle
			continue
		}
		t := time.NewTimer(min(wait, idle))
		select {
		case <-ctx.Done():
		case <-woken:
			idle = s.cfg.Idle
		case <-t.C:
			idle = min(2*idle, max(maxIdle, s.cfg.Idle))
		}
		t.Stop()
	}
}

// round sends one round of e's deliveries and records their attempts. It
// returns how many it sent, how long to wait when it sent none, whether
// it holds a batch that is filling (then wait is what remains of its
// wait), and whether the endpoint is gone (disabled).
func (s *Sender) round(ctx context.Context, e Endpoint) (sent int, wait time.Duration, hold, gone bool, err error) {
	limit := roundSize
	if e.Batch.Batched() {
		limit = max(roundSize, min(e.Batch.MaxEvents*s.cfg.Concurrency, maxBatchedRound))
	}
	ds, err := s.cfg.Store.WaitingDeliveries(ctx, e.ID, limit)
	if err != nil {
		return 0, s.cfg.Idle, false, false, fmt.Errorf("read deliveries: %w", err)
	}
	now := s.cfg.Now()
	var jobs [][]Delivery
	if e.Batch.Batched() {
		jobs, wait = batches(ds, now, e.Batch.MaxEvents)
		// Hold while fewer than MaxEvents are due in all: events due but
		// kept for a later round by their order fill no batch by waiting.
		if n := countDue(jobs); n > 0 && dueIn(ds, now) < e.Batch.MaxEvents && len(ds) < limit {
			if left := oldestDue(jobs).Add(e.Batch.MaxWait).Sub(now); left > 0 {
				return 0, left, true, false, nil
			}
		}
	} else {
		jobs, wait = singles(ds, now)
	}
	if len(jobs) == 0 {
		return 0, wait, false, false, nil
	}

	attempts := make([]Attempt, 0, countDue(jobs))
	var (
		mu       sync.Mutex
		failures int // requests in a row
		status   = map[int]int{}
		goneCtx  context.Context // the first attempt answered 410, for the log
	)
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return failures >= giveUpAfterFailures || status[410] > 0
	}
	work := make(chan []Delivery)
	var wg sync.WaitGroup
	for range min(s.cfg.Concurrency, len(jobs)) {
		wg.Go(func() {
			for job := range work {
				if stopped() { // not sent: it waits for a later round
					continue
				}
				as, actx := s.attempt(ctx, e, job)
				mu.Lock()
				attempts = append(attempts, as...)
				status[as[0].Status]++
				if as[0].Status == 410 && goneCtx == nil {
					goneCtx = actx
				}
				if as[0].State == Delivered {
					failures = 0
				} else {
					failures++
				}
				mu.Unlock()
			}
		})
	}
send:
	for _, job := range jobs {
		if stopped() {
			break
		}
		select {
		case work <- job:
		case <-ctx.Done():
			break send
		}
	}
	close(work)
	wg.Wait()
	if status[410] > 0 {
		at := s.cfg.Now()
		if err := s.cfg.Store.DisableWebhook(context.WithoutCancel(ctx), e.ID, at, "answered 410 Gone"); err != nil {
			return len(attempts), s.cfg.Idle, false, false, fmt.Errorf("disable endpoint: %w", err)
		}
		s.log.WarnContext(goneCtx, "webhooks: endpoint answered 410 Gone; disabled", "endpoint", e.ID)
		gone = true
	}
	if err := s.cfg.Store.RecordAttempts(context.WithoutCancel(ctx), attempts); err != nil {
		return len(attempts), s.cfg.Idle, false, gone, fmt.Errorf("record attempts: %w", err)
	}
	return len(attempts), s.cfg.Idle, false, gone, nil
}

// maxBatchedRound bounds the deliveries one round of a batched endpoint
// reads.
const maxBatchedRound = 10000

// singles returns the requests of an endpoint taking one event a request:
// for each subject, its first waiting delivery if it is due. wait is how
// long until the next one not due is.
func singles(ds []Delivery, now time.Time) (jobs [][]Delivery, wait time.Duration) {
	wait = maxIdle
	taken := map[messaging.ID]bool{} // subjects with an earlier delivery waiting
	for i, d := range ds {
		if taken[d.Event.Subject] {
			continue
		}
		taken[d.Event.Subject] = true
		if d.NextAt.After(now) {
			wait = max(min(wait, d.NextAt.Sub(now)), time.Millisecond)
			continue
		}
		jobs = append(jobs, ds[i:i+1])
	}
	return jobs, wait
}

// batches returns the requests of a batched endpoint, up to size events
// each. A delivery is the deliveries in a row that share an ID (the
// events one write stored for the endpoint): it goes whole in one
// request. A due delivery whose subjects are in no other request than
// the last or its own joins it while it has room; otherwise it starts a
// request, unless one of its subjects is in an earlier request or waits:
// then it waits for a later round, and so do its subjects. Requests sent
// side by side thus never share a subject, and each subject's events go
// in order. wait is how long until the next delivery not due is.
func batches(ds []Delivery, now time.Time, size int) (jobs [][]Delivery, wait time.Duration) {
	wait = maxIdle
	in := map[messaging.ID]int{} // the subject's request, -1 when it waits
	for i := 0; i < len(ds); {
		j := i + 1
		for j < len(ds) && ds[j].ID == ds[i].ID {
			j++
		}
		unit := ds[i:j]
		i = j
		k, blocked := -2, unit[0].NextAt.After(now) // -2: no request yet
		if blocked {
			wait = max(min(wait, unit[0].NextAt.Sub(now)), time.Millisecond)
		}
		for _, d := range unit {
			if blocked {
				break
			}
			switch r, seen := in[d.Event.Subject]; {
			case !seen:
			case r < 0 || (k != -2 && k != r):
				blocked = true
			default:
				k = r
			}
		}
		if !blocked && k == -2 && len(jobs) > 0 && len(jobs[len(jobs)-1])+len(unit) <= size {
			k = len(jobs) - 1
		}
		if !blocked && k >= 0 && len(jobs[k])+len(unit) > size {
			blocked = true
		}
		if blocked {
			for _, d := range unit {
				in[d.Event.Subject] = -1
			}
			continue
		}
		if k < 0 {
			jobs = append(jobs, make([]Delivery, 0, max(size, len(unit))))
			k = len(jobs) - 1
		}
		jobs[k] = append(jobs[k], unit...)
		for _, d := range unit {
			in[d.Event.Subject] = k
		}
	}
	return jobs, wait
}

// dueIn is how many of ds are due at now.
func dueIn(ds []Delivery, now time.Time) int {
	n := 0
	for _, d := range ds {
		if !d.NextAt.After(now) {
			n++
		}
	}
	return n
}

// countDue is how many deliveries jobs hold.
func countDue(jobs [][]Delivery) int {
	n := 0
	for _, j := range jobs {
		n += len(j)
	}
	return n
}

// oldestDue is the earliest time a delivery of jobs became due.
func oldestDue(jobs [][]Delivery) time.Time {
	var t time.Time
	for _, j := range jobs {
		for _, d := range j {
			if t.IsZero() || d.NextAt.Before(t) {
				t = d.NextAt
			}
		}
	}
	return t
}

// attempt sends ds in one request, the one event's body on an endpoint
// taking one a request, a batch's on a batched one, and returns the
// outcome of each delivery. A batch is tried again whole: the deliveries
// of a failed one are due again together. The context it returns holds
// the attempt's span, for what is logged about its answer.
func (s *Sender) attempt(ctx context.Context, e Endpoint, ds []Delivery) ([]Attempt, context.Context) {
	header := make(map[string]string, 5)
	header["Content-Type"] = "application/json"
	header["User-Agent"] = "Herald-Webhooks/1"
	var body []byte
	if e.Batch.Batched() {
		body = make([]byte, 0, 64+len(ds)*(200+len(ds[0].Event.Data)))
		body = append(body, `{"events":[`...)
		for i := range ds {
			if i > 0 {
				body = append(body, ',')
			}
			body = ds[i].Event.AppendBody(body)
		}
		body = append(body, "]}"...)
		header[EventCountHeader] = strconv.Itoa(len(ds))
	} else {
		body = ds[0].Event.Body()
		header[EventIDHeader] = ds[0].Event.ID.String()
	}
	start := s.cfg.Now()
	header[SignatureHeader] = Sign(start, body, e.Secrets(start)...)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
	rctx, span := s.startAttempt(rctx, e, ds)
	status, err := s.cfg.Poster.Post(rctx, e.URL, header, body)
	endAttempt(span, status, err)
	cancel()
	if span != nil {
		ctx = trace.ContextWithSpan(ctx, span)
	}
	end := s.cfg.Now()
	a := Attempt{At: start, Status: status, Latency: end.Sub(start), State: Delivered, NextAt: end}
	out := make([]Attempt, 0, len(ds))
	// one attempt a delivery: the deliveries in a row sharing an ID are one
	add := func(d Delivery, a Attempt) {
		a.DeliveryID = d.ID
		if n := len(out); n > 0 && out[n-1].DeliveryID == d.ID {
			if a.State == GaveUp {
				out[n-1].State = GaveUp
			}
			return
		}
		out = append(out, a)
	}
	if err == nil && status >= 200 && status < 300 {
		oldest := ds[0].Event.CreatedAt
		for _, d := range ds {
			add(d, a)
			if d.Event.CreatedAt.Before(oldest) {
				oldest = d.Event.CreatedAt
			}
		}
		if s.cfg.Observer != nil {
			s.cfg.Observer.WebhookAttempt(len(ds), 0, 0, a.Latency, max(0, end.Sub(oldest)))
		}
		return out, ctx
	}
	if err != nil {
		a.Error = truncate(err.Error(), 300)
	} else {
		a.Error = "HTTP " + strconv.Itoa(status)
	}
	tries := 0
	for _, d := range ds {
		tries = max(tries, d.Attempts)
	}
	next := end.Add(s.cfg.Backoff.Delay(tries + 1))
	for _, d := range ds {
		b := a
		if status == 410 || end.Sub(d.Event.CreatedAt) >= s.cfg.RetryFor {
			b.State = GaveUp
		} else {
			b.State, b.NextAt = Waiting, next
		}
		add(d, b)
	}
	// The events given up: those of the deliveries given up (out holds
	// one attempt a run of ds sharing an ID, in order).
	gaveUp, k := 0, -1
	for i, d := range ds {
		if i == 0 || ds[i-1].ID != d.ID {
			k++
		}
		if out[k].State == GaveUp {
			gaveUp++
		}
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.WebhookAttempt(0, len(ds)-gaveUp, gaveUp, a.Latency, 0)
	}
	return out, ctx
}

// truncate cuts s to at most n bytes, at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
