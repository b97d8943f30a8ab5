package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Dispatcher sends due messages through the sender ports and records what
// happens to them; see the package documentation. Create it with New, run
// it with Run, and give HandleReceipt to the SMS adapter.
type Dispatcher struct {
	cfg   Config
	store Store
	log   *slog.Logger
	obs   Observer

	lanes    []*lane
	updates  *committer[update, bool]
	receipts *committer[Receipt, ReceiptOutcome]
	routes   routeCache
	parts    recording

	running atomic.Bool
	// changed says that messages may have left Pending or Sending since
	// the last CompleteDrained.
	changed atomic.Bool

	// sendCtx carries the sends of Run; it ends when Run gives up
	// draining.
	sendCtx atomic.Pointer[context.Context]
	// writeCtx carries the writes of send results; Run cancels it when it
	// gives up draining.
	writeCtx    context.Context
	cancelWrite context.CancelFunc
}

// update is a send result to record, with its message's channel.
type update struct {
	StatusUpdate
	ch messaging.Channel
}

// New returns a Dispatcher for cfg.
func New(cfg Config) (*Dispatcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: cfg, store: cfg.Store, log: cfg.Logger, obs: cfg.Observer}
	d.routes.ttl = cfg.RouteTTL
	d.writeCtx, d.cancelWrite = context.WithCancel(context.Background())
	d.updates = &committer[update, bool]{max: cfg.UpdateBatch, write: d.writeUpdates,
		depth: func(n int) { d.obs.QueueDepth("updates", n) }}
	d.receipts = &committer[Receipt, ReceiptOutcome]{max: cfg.ReceiptBatch, write: d.writeReceipts,
		depth: func(n int) { d.obs.QueueDepth("receipts", n) }}
	if cfg.SMS != nil {
		sms := newLane(d, messaging.ChannelSMS, cfg.SMSConcurrency, d.sendSMS)
		d.lanes = append(d.lanes, sms)
		d.parts.active = sms.busy
	}
	if cfg.Chat != nil {
		d.lanes = append(d.lanes, newLane(d, messaging.ChannelChat, cfg.ChatConcurrency, d.sendChat))
	}
	d.changed.Store(true)
	return d, nil
}

// Wake makes idle lanes look for due messages at once instead of at their
// next poll: call it after starting a campaign or adding messages.
func (d *Dispatcher) Wake() {
	for _, l := range d.lanes {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// Run recovers the messages whose lease ended, then claims and sends due
// messages, records their results, completes drained bulk campaigns and
// purges old receipts, until ctx ends. Then it stops claiming and drains:
// it waits for the sends in flight and records their results (after
// Config.DrainTimeout it cancels the sends left, whose messages go back to
// Pending). It returns nil once drained; it may be called once.
func (d *Dispatcher) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("delivery: Run called twice")
	}
	d.recoverExpired(ctx)
	d.complete(ctx)

	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	d.sendCtx.Store(&sendCtx)
	var claimers, maint sync.WaitGroup
	for _, l := range d.lanes {
		claimers.Go(func() { l.run(ctx, sendCtx) })
	}
	maint.Go(func() { d.maintain(ctx) })
	<-ctx.Done()
	claimers.Wait()

	done := make(chan struct{})
	go func() {
		for _, l := range d.lanes {
			l.procs.Wait()
		}
		close(done)
	}()
	timer := time.NewTimer(d.cfg.DrainTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		d.log.Warn("sends still in flight after the drain timeout: cancelling them")
		cancelSends()
		timer.Reset(d.cfg.StoreTimeout)
		select {
		case <-done:
		case <-timer.C:
			d.log.Error("results still unrecorded: their messages stay Sending until their lease ends")
			d.cancelWrite()
			<-done
		}
	}
	maint.Wait()
	// Campaigns drained by the last results complete now rather than at
	// the next start.
	d.complete(context.WithoutCancel(ctx))
	return nil
}

// maintain runs the periodic store work until ctx ends.
func (d *Dispatcher) maintain(ctx context.Context) {
	recoverT := time.NewTicker(d.cfg.RecoverInterval)
	defer recoverT.Stop()
	completeT := time.NewTicker(d.cfg.CompleteInterval)
	defer completeT.Stop()
	purgeT := time.NewTicker(d.cfg.PurgeInterval)
	defer purgeT.Stop()
	d.purge(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-recoverT.C:
			d.recoverExpired(ctx)
		case <-completeT.C:
			d.complete(ctx)
		case <-purgeT.C:
			d.purge(ctx)
		}
	}
}

// recoverExpired puts the messages whose lease ended back to Pending.
func (d *Dispatcher) recoverExpired(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	n, err := d.store.RecoverExpired(sctx, d.cfg.Now())
	d.obs.Batch("recover", n, time.Since(start), err)
	switch {
	case err != nil && ctx.Err() == nil:
		d.log.Error("recovering expired claims", "err", err)
	case n > 0:
		d.log.Warn("messages left Sending past their lease put back to Pending", "count", n)
		d.Wake()
	}
}

// complete completes the drained bulk campaigns, when messages moved.
func (d *Dispatcher) complete(ctx context.Context) {
	if !d.changed.Swap(false) {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	n, err := d.store.CompleteDrained(sctx, d.cfg.Now())
	d.obs.Batch("complete", n, time.Since(start), err)
	switch {
	case err != nil:
		d.changed.Store(true)
		if ctx.Err() == nil {
			d.log.Error("completing drained campaigns", "err", err)
		}
	case n > 0:
		d.log.Info("campaigns completed", "count", n)
	}
}

// purge forgets parts and receipts past the retention.
func (d *Dispatcher) purge(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	n, err := d.store.PurgeReceipts(sctx, d.cfg.Now().Add(-d.cfg.ReceiptRetention))
	d.obs.Batch("purge", n, time.Since(start), err)
	if err != nil && ctx.Err() == nil {
		d.log.Error("purging old receipts", "err", err)
	}
}

// writeUpdates records a batch of send results, trying again until it
// succeeds or Run gives up draining.
func (d *Dispatcher) writeUpdates(us []update) ([]bool, error) {
	batch := make([]StatusUpdate, len(us))
	for i, u := range us {
		batch[i] = u.StatusUpdate
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(d.writeCtx, d.cfg.StoreTimeout)
		start := time.Now()
		ok, err := d.store.ApplyUpdates(ctx, batch)
		cancel()
		d.obs.Batch("updates", len(batch), time.Since(start), err)
		if err == nil {
			d.changed.Store(true)
			d.countApplied(us, ok)
			return ok, nil
		}
		if d.writeCtx.Err() != nil {
			return nil, fmt.Errorf("record send results: %w", err)
		}
		wait := min(time.Duration(attempt)*100*time.Millisecond, 5*time.Second)
		d.log.Error("recording send results; trying again", "count", len(batch), "attempt", attempt, "err", err)
		select {
		case <-time.After(wait):
		case <-d.writeCtx.Done():
		}
	}
}

// countApplied reports the applied updates to the Observer, by channel
// and status.
func (d *Dispatcher) countApplied(us []update, ok []bool) {
	type key struct {
		ch messaging.Channel
		st messaging.MessageStatus
	}
	var counts map[key]int
	for i, u := range us {
		if i < len(ok) && ok[i] {
			if counts == nil {
				counts = map[key]int{}
			}
			counts[key{u.ch, u.Status}]++
		}
	}
	for k, n := range counts {
		d.obs.Messages(k.ch, k.st, n)
	}
}

// HandleReceipt is the delivery.ReceiptHandler of the SMS adapter: it
// stores one receipt, grouped with the receipts handled concurrently into
// one store transaction, and returns once that transaction committed. A
// receipt of a part not recorded yet is kept until it is (see
// Store.ApplyReceipts); a repeated one changes nothing. An error means the
// receipt was not stored: the adapter then has the SMSC send it again.
func (d *Dispatcher) HandleReceipt(ctx context.Context, r Receipt) error {
	if err := d.parts.wait(ctx, r.ProviderID); err != nil {
		return fmt.Errorf("store receipt %s: %w", r.ProviderID, err)
	}
	out, err := d.receipts.do(ctx, r)
	if err != nil {
		return fmt.Errorf("store receipt %s: %w", r.ProviderID, err)
	}
	d.obs.Receipt(r.State, out)
	if out == ReceiptApplied {
		st, _ := ReceiptStatus(r.State)
		d.obs.Messages(messaging.ChannelSMS, st, 1)
	}
	return nil
}

// writeReceipts applies a batch of receipts.
func (d *Dispatcher) writeReceipts(rs []Receipt) ([]ReceiptOutcome, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	out, err := d.store.ApplyReceipts(ctx, rs, d.cfg.Now())
	d.obs.Batch("receipts", len(rs), time.Since(start), err)
	if err != nil {
		d.log.Error("storing receipts", "count", len(rs), "err", err)
		return nil, err
	}
	return out, nil
}

// routeCache keeps campaigns' routes for a while.
type routeCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[messaging.ID]routeEntry
}

type routeEntry struct {
	r       Route
	expires time.Time
}

// maxCachedRoutes bounds the cache; past it, it starts again empty.
const maxCachedRoutes = 10_000

func (c *routeCache) get(id messaging.ID, now time.Time) (Route, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || now.After(e.expires) {
		return Route{}, false
	}
	return e.r, true
}

func (c *routeCache) put(id messaging.ID, r Route, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedRoutes {
		c.m = map[messaging.ID]routeEntry{}
	}
	c.m[id] = routeEntry{r, now.Add(c.ttl)}
}

// recording tracks the SMS parts whose Sent is being stored, so that their
// receipts (which the SMSC may send right after its submit_sm_resp) wait
// for it and then apply at once, instead of being kept and applied by the
// Sent: fewer rows written, and no two transactions writing one part.
//
// A receipt can even come before the Send that submitted its part has
// returned its ids. A receipt of a part unknown here therefore waits, while
// SMS sends are in flight, up to earlyReceiptWait for the part to show up;
// past that it is stored as it is (kept until its part is recorded). The
// wait only saves work: correctness never depends on it.
type recording struct {
	mu      sync.Mutex
	m       map[string]chan struct{} // part id -> closed once its Sent is stored
	waiting map[string]chan struct{} // part id -> closed when it is added
	active  func() bool              // whether SMS sends are in flight
}

// earlyReceiptWait bounds the wait of a receipt for a part not known yet.
const earlyReceiptWait = 50 * time.Millisecond

// add registers parts being recorded; close the returned channel (through
// remove) once their Sent is stored or given up.
func (r *recording) add(ids []string) chan struct{} {
	done := make(chan struct{})
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]chan struct{}{}
	}
	for _, id := range ids {
		r.m[id] = done
		if w := r.waiting[id]; w != nil {
			close(w)
			delete(r.waiting, id)
		}
	}
	r.mu.Unlock()
	return done
}

// remove unregisters parts and releases the receipts waiting for them.
func (r *recording) remove(ids []string, done chan struct{}) {
	r.mu.Lock()
	for _, id := range ids {
		if r.m[id] == done {
			delete(r.m, id)
		}
	}
	r.mu.Unlock()
	close(done)
}

// wait waits until the part is not being recorded, giving a part not known
// yet a short time to show up.
func (r *recording) wait(ctx context.Context, id string) error {
	r.mu.Lock()
	done := r.m[id]
	var added chan struct{}
	if done == nil && r.active != nil && r.active() {
		if r.waiting == nil {
			r.waiting = map[string]chan struct{}{}
		}
		added = r.waiting[id]
		if added == nil {
			added = make(chan struct{})
			r.waiting[id] = added
		}
	}
	r.mu.Unlock()
	if added != nil {
		t := time.NewTimer(earlyReceiptWait)
		select {
		case <-added:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		r.mu.Lock()
		if r.waiting[id] == added {
			delete(r.waiting, id)
		}
		done = r.m[id]
		r.mu.Unlock()
	}
	if done == nil {
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drainCtx is the context of Run's sends: it ends when Run gives up
// draining (background before Run).
func (d *Dispatcher) drainCtx() context.Context {
	if p := d.sendCtx.Load(); p != nil {
		return *p
	}
	return context.Background()
}
