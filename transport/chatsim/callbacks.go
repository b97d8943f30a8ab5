package chatsim

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// callbacks posts the signed callbacks of accepted messages. Every message
// has a chain of events posted in order, each one only after the previous
// one was answered 200 (or given up). A scheduler keeps the chains in a
// heap by due time and hands due ones to a fixed pool of workers.
type callbacks struct {
	cfg     Config
	log     *slog.Logger
	client  *http.Client
	own     bool
	workers int

	mu     sync.Mutex
	due    dueHeap
	wake   chan struct{}
	work   chan *chain
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	order  uint64

	pending, sent, failures, abandoned atomic.Int64
}

// step is one callback of a chain: its event and the wait before it.
type step struct {
	delay time.Duration
	make  func(ts int64) any // builds the event at its timestamp
}

// chain is the callbacks of one message still to post.
type chain struct {
	steps     []step
	body      []byte // the current step's body, kept for its retries
	attempt   int
	duplicate bool
	at        time.Time
	order     uint64
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
	if cfg.CallbackBackoff.Min <= 0 {
		cfg.CallbackBackoff.Min = DefaultCallbackMin
	}
	if cfg.CallbackBackoff.Max <= 0 {
		cfg.CallbackBackoff.Max = DefaultCallbackMax
	}
	c := &callbacks{
		cfg:     cfg,
		log:     cfg.Logger,
		client:  cfg.CallbackHTTP,
		workers: cfg.CallbackWorkers,
		wake:    make(chan struct{}, 1),
		work:    make(chan *chain, cfg.CallbackWorkers),
	}
	if c.client == nil {
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
	if c.own {
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
	status := func(name string, code int) func(int64) any {
		return func(ts int64) any {
			return statusEvent{Event: "status", MessageToken: token, TrackingData: req.TrackingData,
				Status: name, ErrorCode: code, Timestamp: ts, PhoneNumber: req.Dest}
		}
	}
	var steps []step
	switch {
	case failLater:
		steps = []step{{c.cfg.DeliveredDelay, status("failed", StatusNotViberUser)}}
	case f.SeenBeforeDelivered:
		steps = []step{{c.cfg.DeliveredDelay, status("seen", 0)}, {c.cfg.SeenDelay, status("delivered", 0)}}
	default:
		steps = []step{{c.cfg.DeliveredDelay, status("delivered", 0)}, {c.cfg.SeenDelay, status("seen", 0)}}
	}
	if !failLater && req.Type == 6 && req.Survey != nil && len(req.Survey.Options) > 0 {
		i := int(req.Dest[len(req.Dest)-1]-'0') % len(req.Survey.Options)
		opt := req.Survey.Options[i]
		steps = append(steps, step{c.cfg.ReplyDelay, func(ts int64) any {
			return replyEvent{Event: "reply", MessageToken: token, TrackingData: req.TrackingData, Timestamp: ts,
				PhoneNumber: req.Dest, Text: opt.Text, Survey: &replySurvey{OptionIndex: i, OptionValue: opt.Value}}
		}})
	}
	ch := &chain{steps: steps, duplicate: f.DuplicateCallbacks}
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

// dispatch hands due chains to the workers, in batches.
func (c *callbacks) dispatch() {
	defer c.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var batch []*chain
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
		for i, ch := range batch {
			select {
			case c.work <- ch:
				batch[i] = nil
			case <-c.ctx.Done():
				return
			}
		}
		batch = batch[:0]
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
	for {
		select {
		case ch := <-c.work:
			c.run(ch)
		case <-c.ctx.Done():
			return
		}
	}
}

// run posts the current step of ch and plans what comes next.
func (c *callbacks) run(ch *chain) {
	if ch.body == nil {
		var err error
		ch.body, err = json.Marshal(ch.steps[0].make(c.cfg.Now().UnixMilli()))
		if err != nil { // cannot happen with these plain structs
			c.log.Error("chatsim: encoding a callback", "err", err)
			c.abandoned.Add(1)
			c.pending.Add(-1)
			return
		}
	}
	if !c.post(ch.body) {
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
		c.push(ch, time.Now().Add(c.backoff(ch.attempt)))
		return
	}
	c.sent.Add(1)
	if ch.duplicate && c.post(ch.body) {
		c.sent.Add(1)
	}
	ch.steps, ch.body, ch.attempt = ch.steps[1:], nil, 0
	if len(ch.steps) == 0 {
		c.pending.Add(-1)
		return
	}
	c.push(ch, time.Now().Add(ch.steps[0].delay))
}

// backoff is the wait before attempt number n+1 of a callback.
func (c *callbacks) backoff(n int) time.Duration {
	d := c.cfg.CallbackBackoff.Min
	for i := 1; i < n && d < c.cfg.CallbackBackoff.Max; i++ {
		d *= 2
	}
	return min(d, c.cfg.CallbackBackoff.Max)
}

// post sends one signed callback and reports whether it was answered 200.
func (c *callbacks) post(body []byte) bool {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.CallbackTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.CallbackURL, bytes.NewReader(body))
	if err != nil {
		c.log.Error("chatsim: callback request", "err", err)
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Content-Signature", sign(c.cfg.CallbackSecret, body))
	resp, err := c.client.Do(req)
	if err != nil {
		c.log.Debug("chatsim: callback failed", "err", err)
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// sign is the hex HMAC-SHA256 of body keyed with secret.
func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
