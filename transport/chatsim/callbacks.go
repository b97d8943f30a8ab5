package chatsim

import (
	"container/heap"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/heraldhq/herald/messaging"
)

// callbacks posts the signed callbacks of accepted messages. Every message
// has a chain of events posted in order, each one only after the previous
// one was answered 200 (or given up). A scheduler keeps the chains in a
// heap by due time and hands due ones to a fixed pool of workers.
type callbacks struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client // posts the callbacks, unless target is set
	own    bool
	// target, for a plain http CallbackURL and no CallbackHTTP, is where
	// each worker posts over a connection of its own (connPoster).
	target  *url.URL
	workers int

	mu     sync.Mutex
	due    dueHeap
	wake   chan struct{}
	work   chan []*chain // the chains of one request each
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	order  uint64

	pending, sent, failures, abandoned atomic.Int64
}

// event is one callback of a message: a status or, when status is empty,
// a survey's reply.
type event struct {
	status string
	code   int
	// The reply: the chosen option's text, index and value.
	text   string
	option int
	value  string
}

// step is one callback of a chain: its event and the wait before it.
type step struct {
	delay time.Duration
	ev    event
}

// chain is the callbacks of one message still to post.
type chain struct {
	token, tracking, dest string
	steps                 []step
	body                  []byte // the current step's body, kept for its retries
	attempt               int
	done                  int // the steps posted: the current step's number
	duplicate             bool
	at                    time.Time
	order                 uint64
}

// dueHeap orders chains by due time, then by scheduling order.
type dueHeap []*chain

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].order < h[j].order
	}
	return h[i].at.Before(h[j].at)
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(*chain)) }
func (h *dueHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}

// newCallbacks starts the scheduler and the workers.
func newCallbacks(cfg Config) *callbacks {
	if cfg.CallbackTimeout <= 0 {
		cfg.CallbackTimeout = DefaultCallbackTimeout
	}
	if cfg.CallbackWorkers <= 0 {
		cfg.CallbackWorkers = DefaultCallbackWorkers
	}
	if cfg.CallbackAttempts <= 0 {
		cfg.CallbackAttempts = DefaultCallbackAttempts
	}
	if cfg.CallbackBatch > 1 && cfg.CallbackBatchWait <= 0 {
		cfg.CallbackBatchWait = DefaultCallbackBatchWait
	}
	cfg.CallbackBackoff = cfg.CallbackBackoff.Or(messaging.Backoff{Min: DefaultCallbackMin, Max: DefaultCallbackMax})
	c := &callbacks{
		cfg:     cfg,
		log:     cfg.Logger,
		client:  cfg.CallbackHTTP,
		workers: cfg.CallbackWorkers,
		wake:    make(chan struct{}, 1),
		work:    make(chan []*chain, cfg.CallbackWorkers),
	}
	if c.client == nil && cfg.CallbackURL != "" {
		if u, err := url.Parse(cfg.CallbackURL); err == nil && u.Scheme == "http" && u.Host != "" {
			c.target = u
		}
	}
	if c.client == nil && c.target == nil {
		c.client = &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        cfg.CallbackWorkers * 2,
			MaxIdleConnsPerHost: cfg.CallbackWorkers * 2,
			IdleConnTimeout:     90 * time.Second,
		}}
		c.own = true
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1 + c.workers)
	go c.dispatch()
	for range c.workers {
		go c.worker()
	}
	return c
}

// close stops the scheduler and the workers and waits for them.
func (c *callbacks) close() {
	c.cancel()
	c.wg.Wait()
	if c.own && c.client != nil {
		c.client.CloseIdleConnections()
	}
}

// stats fills the callback counts of st.
func (c *callbacks) stats(st *Stats) {
	st.CallbacksSent = c.sent.Load()
	st.CallbackFailures = c.failures.Load()
	st.CallbacksAbandoned = c.abandoned.Load()
	st.CallbacksPending = c.pending.Load()
}

// schedule plans the callbacks of an accepted message.
func (c *callbacks) schedule(req *Request, token string, failLater bool, f *faultState) {
	if c.cfg.CallbackURL == "" || c.ctx.Err() != nil {
		return
	}
	var steps []step
	switch {
	case failLater:
		steps = []step{{c.cfg.DeliveredDelay, event{status: "failed", code: StatusNotViberUser}}}
	case f.SeenBeforeDelivered:
		steps = []step{{c.cfg.DeliveredDelay, event{status: "seen"}}, {c.cfg.SeenDelay, event{status: "delivered"}}}
	default:
		steps = make([]step, 2, 3)
		steps[0] = step{c.cfg.DeliveredDelay, event{status: "delivered"}}
		steps[1] = step{c.cfg.SeenDelay, event{status: "seen"}}
	}
	if !failLater && req.Type == 6 && req.Survey != nil && len(req.Survey.Options) > 0 {
		i := int(req.Dest[len(req.Dest)-1]-'0') % len(req.Survey.Options)
		opt := req.Survey.Options[i]
		steps = append(steps, step{c.cfg.ReplyDelay, event{text: opt.Text, option: i, value: opt.Value}})
	}
	ch := &chain{token: token, tracking: req.TrackingData, dest: req.Dest, steps: steps, duplicate: f.DuplicateCallbacks}
	c.pending.Add(1)
	c.push(ch, time.Now().Add(steps[0].delay))
}

// push puts ch in the heap, due at at.
func (c *callbacks) push(ch *chain, at time.Time) {
	c.mu.Lock()
	c.order++
	ch.at, ch.order = at, c.order
	heap.Push(&c.due, ch)
	first := c.due[0] == ch
	c.mu.Unlock()
	if first {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// dispatch hands due chains to the workers: one a request, or with
// CallbackBatch above 1 up to CallbackBatch a request, a due chain
// waiting up to CallbackBatchWait for others to fill its request.
func (c *callbacks) dispatch() {
	defer c.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	size := max(c.cfg.CallbackBatch, 1)
	var batch []*chain // due chains not handed over yet, oldest first
	for {
		now := time.Now()
		next := time.Duration(-1)
		c.mu.Lock()
		for len(c.due) > 0 && !c.due[0].at.After(now) {
			batch = append(batch, heap.Pop(&c.due).(*chain))
		}
		if len(c.due) > 0 {
			next = c.due[0].at.Sub(now)
		}
		c.mu.Unlock()
		hand := len(batch)
		if size > 1 && hand > 0 && now.Sub(batch[0].at) < c.cfg.CallbackBatchWait {
			hand -= hand % size // whole requests only; the rest waits
		}
		for hand > 0 {
			n := min(size, hand)
			group := make([]*chain, n)
			copy(group, batch)
			select {
			case c.work <- group:
			case <-c.ctx.Done():
				return
			}
			rest := copy(batch, batch[n:])
			clear(batch[rest:])
			batch = batch[:rest]
			hand -= n
		}
		if len(batch) > 0 {
			if w := batch[0].at.Add(c.cfg.CallbackBatchWait).Sub(now); next < 0 || w < next {
				next = max(w, 0)
			}
		}
		if next < 0 {
			next = time.Hour
		}
		timer.Reset(next)
		select {
		case <-timer.C:
		case <-c.wake:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-c.ctx.Done():
			return
		}
	}
}

// worker posts the current callback of chains until close.
func (c *callbacks) worker() {
	defer c.wg.Done()
	p := c.newPoster()
	defer p.close()
	var buf []byte
	for {
		select {
		case chs := <-c.work:
			if c.cfg.CallbackBatch > 1 {
				buf = c.runBatch(p, chs, buf)
			} else {
				c.run(p, chs[0])
			}
		case <-c.ctx.Done():
			return
		}
	}
}

// run posts the current step of ch and plans what comes next.
func (c *callbacks) run(p poster, ch *chain) {
	if len(ch.body) == 0 {
		ch.body = appendEvent(ch.body, ch, ch.steps[0].ev, c.cfg.Now().UnixMilli(), false)
	}
	ok := p.post(ch.body)
	if ok && ch.duplicate && p.post(ch.body) {
		c.sent.Add(1)
	}
	c.posted(ch, ok)
}

// runBatch posts the current steps of chs in one batched callback (a
// JSON array of the events, each with its id), its body built in buf,
// and plans what comes next for each. It returns buf for the next one.
func (c *callbacks) runBatch(p poster, chs []*chain, buf []byte) []byte {
	now := c.cfg.Now().UnixMilli()
	buf = append(buf[:0], '[')
	duplicate := false
	for i, ch := range chs {
		if len(ch.body) == 0 {
			ch.body = appendEvent(ch.body, ch, ch.steps[0].ev, now, true)
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, ch.body...)
		duplicate = duplicate || ch.duplicate
	}
	buf = append(buf, ']')
	ok := p.post(buf)
	if ok && duplicate && p.post(buf) {
		c.sent.Add(int64(len(chs)))
	}
	for _, ch := range chs {
		c.posted(ch, ok)
	}
	return buf
}

// posted plans what comes after the post of ch's current step: its
// retry when it was not answered 200 (ok false), else its next step.
func (c *callbacks) posted(ch *chain, ok bool) {
	if !ok {
		if c.ctx.Err() != nil {
			return
		}
		c.failures.Add(1)
		ch.attempt++
		if ch.attempt >= c.cfg.CallbackAttempts {
			c.log.Warn("chatsim: callback given up", "attempts", ch.attempt)
			c.abandoned.Add(1)
			c.pending.Add(-1)
			return
		}
		c.push(ch, time.Now().Add(c.cfg.CallbackBackoff.Step(ch.attempt)))
		return
	}
	c.sent.Add(1)
	ch.steps, ch.body, ch.attempt, ch.done = ch.steps[1:], ch.body[:0], 0, ch.done+1
	if len(ch.steps) == 0 {
		c.pending.Add(-1)
		return
	}
	c.push(ch, time.Now().Add(ch.steps[0].delay))
}

// appendEvent appends the JSON body of event ev of ch, at timestamp ts
// (Unix milliseconds). An event of a batch (withID) starts with its id:
// the message_token and the number of the chain's step, which no other
// event of the simulator's has.
func appendEvent(b []byte, ch *chain, ev event, ts int64, withID bool) []byte {
	b = append(b, '{')
	if withID {
		b = append(b, `"id":"`...)
		b = append(b, ch.token...)
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(ch.done), 10)
		b = append(b, `",`...)
	}
	if ev.status != "" {
		b = append(b, `"event":"status","message_token":`...)
	} else {
		b = append(b, `"event":"reply","message_token":`...)
	}
	b = appendJSONString(b, ch.token)
	b = append(b, `,"tracking_data":`...)
	b = appendJSONString(b, ch.tracking)
	if ev.status != "" {
		b = append(b, `,"status":`...)
		b = appendJSONString(b, ev.status)
		b = append(b, `,"error_code":`...)
		b = strconv.AppendInt(b, int64(ev.code), 10)
	}
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"phone_number":`...)
	b = appendJSONString(b, ch.dest)
	if ev.status == "" {
		b = append(b, `,"text":`...)
		b = appendJSONString(b, ev.text)
		b = append(b, `,"survey":{"option_index":`...)
		b = strconv.AppendInt(b, int64(ev.option), 10)
		b = append(b, `,"option_value":`...)
		b = appendJSONString(b, ev.value)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	b, _ = jsontext.AppendQuote(b, s) // s comes from decoded JSON: valid UTF-8
	return b
}
