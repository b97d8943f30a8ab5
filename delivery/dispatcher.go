package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/internal/pace"
	"github.com/heraldhq/herald/internal/ttlcache"
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
	// tracer opens the spans of sends (Config.Tracer); nil without one.
	tracer trace.Tracer

	lanes []*lane
	// results are the writers of send results and receipts. A result goes
	// to the writer its part id (or, without one, its message) picks, and
	// so does the receipt of that part: the two meet in one writer, and
	// writers side by side touch different messages.
	results []*groupcommit.Committer[result, resultOut]
	depths  []atomic.Int64                      // queue length of each writer
	routes  ttlcache.Cache[messaging.ID, Route] // campaigns' routes, kept RouteTTL
	parts   recording
	rates   companyRates // Config.Rates: the claims of capped companies
	flights flights      // campaigns with messages being sent, for Halt

	running atomic.Bool
	// leaseMu guards lastLease, the lease of the last claim (leaseFor).
	leaseMu   sync.Mutex
	lastLease time.Time
	// beatFailed is when a heartbeat last failed (UnixNano; 0: never).
	beatFailed atomic.Int64
	// beatAt is the time the last heartbeat written carries (UnixNano;
	// 0: none yet); beatMu is held while one is written.
	beatAt atomic.Int64
	beatMu sync.Mutex
	// beatTried is when the last heartbeat write began (wall clock,
	// UnixNano); beatMu guards it.
	beatTried int64

	// sendCtx carries the sends of Run; it ends when Run gives up
	// draining.
	sendCtx atomic.Pointer[context.Context]
	// writeCtx carries the writes of send results; Run cancels it when it
	// gives up draining.
	writeCtx    context.Context
	cancelWrite context.CancelFunc
}

// result is what the dispatcher records: a send result (with its
// message's channel) or a receipt.
type result struct {
	update  *StatusUpdate
	ch      messaging.Channel
	receipt *Receipt
}

// resultOut is what became of a result.
type resultOut struct {
	applied bool                    // the update was applied
	then    messaging.MessageStatus // where kept receipts moved the update's message
	outcome ReceiptOutcome          // of the receipt
	moved   messaging.MessageStatus // where the receipt moved its message
	after   time.Duration           // how long after its Sent the message went Delivered, if it did
}

// New returns a Dispatcher for cfg.
func New(cfg Config) (*Dispatcher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: cfg, store: cfg.Store, log: cfg.Logger, obs: cfg.Observer}
	if cfg.Tracer != nil {
		d.tracer = cfg.Tracer.Tracer(tracerName)
	}
	d.routes.TTL = cfg.RouteTTL
	d.writeCtx, d.cancelWrite = context.WithCancel(context.Background())
	d.depths = make([]atomic.Int64, cfg.Writers)
	for i := range cfg.Writers {
		d.results = append(d.results, &groupcommit.Committer[result, resultOut]{Max: cfg.WriteBatch, Min: max(1, cfg.WriteBatch/8),
			Linger: cfg.WriteDelay, Write: d.writeResults, Depth: func(n int) { d.queueDepth(i, n) }})
	}
	if cfg.SMS != nil {
		d.lanes = append(d.lanes, newLane(d, messaging.ChannelSMS, cfg.SMSConcurrency, cfg.SMS, d.sendSMS))
	}
	if cfg.Chat != nil {
		d.lanes = append(d.lanes, newLane(d, messaging.ChannelChat, cfg.ChatConcurrency, cfg.Chat, d.sendChat))
	}
	return d, nil
}

// leaseFor returns the lease of a claim made at now: now plus
// Config.Lease, to the microsecond, and later than the lease of every
// claim before it, so that the lease and Config.Instance name the claim
// (ClaimRef) even when the clock stands still.
func (d *Dispatcher) leaseFor(now time.Time) time.Time {
	lease := now.Add(d.cfg.Lease).Truncate(time.Microsecond)
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	if !lease.After(d.lastLease) {
		lease = d.lastLease.Add(time.Microsecond)
	}
	d.lastLease = lease
	return lease
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
	d.heartbeat(ctx)
	d.recoverClaims(ctx, d.cfg.Instance)
	d.complete(ctx)
	d.loadRates(ctx)

	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	d.sendCtx.Store(&sendCtx)
	var claimers, maint sync.WaitGroup
	for _, l := range d.lanes {
		claimers.Go(func() { l.run(ctx, sendCtx) })
	}
	maint.Go(func() { d.maintain(ctx) })
	maint.Go(func() { d.watchHalted(ctx) })
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
	d.forgetClaimer(context.WithoutCancel(ctx))
	// Campaigns drained by the last results complete now rather than at
	// the next start.
	d.complete(context.WithoutCancel(ctx))
	return nil
}

// maintain runs the periodic store work until ctx ends.
func (d *Dispatcher) maintain(ctx context.Context) {
	recoverT := time.NewTicker(d.cfg.RecoverInterval)
	defer recoverT.Stop()
	beatT := time.NewTicker(d.cfg.HeartbeatInterval)
	defer beatT.Stop()
	completeT := time.NewTicker(d.cfg.CompleteInterval)
	defer completeT.Stop()
	purgeT := time.NewTicker(d.cfg.PurgeInterval)
	defer purgeT.Stop()
	expireT := time.NewTicker(d.cfg.ReceiptSweepInterval)
	defer expireT.Stop()
	validityT := time.NewTicker(d.cfg.ExpireInterval)
	defer validityT.Stop()
	var ratesC <-chan time.Time
	if d.cfg.Rates != nil {
		ratesT := time.NewTicker(d.cfg.RatesInterval)
		defer ratesT.Stop()
		ratesC = ratesT.C
	}
	// The purge runs beside the other duties, batch after batch, so that
	// heartbeats go on while it works through a backlog; a tick while it
	// still runs starts none.
	var purges sync.WaitGroup
	defer purges.Wait()
	purging := make(chan struct{}, 1)
	startPurge := func() {
		select {
		case purging <- struct{}{}:
			purges.Go(func() {
				defer func() { <-purging }()
				d.purge(ctx)
			})
		default:
		}
	}
	startPurge()
	d.expireReceipts(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-beatT.C:
			d.heartbeat(ctx)
		case <-recoverT.C:
			d.recoverClaims(ctx, "")
		case <-completeT.C:
			d.complete(ctx)
		case <-purgeT.C:
			startPurge()
		case <-expireT.C:
			d.expireReceipts(ctx)
		case <-validityT.C:
			d.expireMessages(ctx)
		case <-ratesC:
			d.loadRates(ctx)
		}
	}
}

// heartbeat records that this process is alive, which keeps its claims.
func (d *Dispatcher) heartbeat(ctx context.Context) {
	d.beatMu.Lock()
	defer d.beatMu.Unlock()
	d.writeBeat(ctx)
}

// writeBeat writes the heartbeat; d.beatMu is held, so that the process
// writes one at a time (two at once would wait for each other's row).
func (d *Dispatcher) writeBeat(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, min(d.cfg.StoreTimeout, d.cfg.HeartbeatInterval))
	defer cancel()
	start := time.Now()
	d.beatTried = start.UnixNano()
	at := d.cfg.Now()
	err := d.store.Heartbeat(sctx, d.cfg.Instance, at)
	d.obs.Batch("heartbeat", 1, time.Since(start), err)
	if err != nil {
		d.beatFailed.Store(d.cfg.Now().UnixNano())
		if ctx.Err() == nil {
			d.log.Error("writing the claim heartbeat", "instance", d.cfg.Instance, "err", err)
		}
		return
	}
	d.beatAt.Store(max(d.beatAt.Load(), at.UnixNano()))
}

// freshBeat reports whether this process's last heartbeat written is
// recent enough at now for a claim: no more than half the claim lease old.
// It writes one first when it is not, unless one was tried within half a
// HeartbeatInterval (while writes fail, lanes do not add to them). A claim
// made with an older one (or
// none, the heartbeat at the start having failed) could be taken back by
// another process at once, its owner looking dead, while this one sends
// its messages.
func (d *Dispatcher) freshBeat(ctx context.Context) bool {
	d.beatMu.Lock()
	defer d.beatMu.Unlock()
	fresh := func() bool {
		at := d.beatAt.Load()
		return at != 0 && d.cfg.Now().Sub(time.Unix(0, at)) <= d.cfg.ClaimLease/2
	}
	if fresh() {
		return true
	}
	if time.Since(time.Unix(0, d.beatTried)) < d.cfg.HeartbeatInterval/2 {
		return false
	}
	d.writeBeat(ctx)
	return fresh()
}

// forgetClaimer removes this process's heartbeat once it holds no claims.
func (d *Dispatcher) forgetClaimer(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	if err := d.store.ForgetClaimer(sctx, d.cfg.Instance); err != nil {
		d.log.Warn("removing the claim heartbeat", "instance", d.cfg.Instance, "err", err)
	}
}

// recoverClaims puts back to Pending the messages whose claim ended: those
// of processes whose heartbeat is older than the claim lease, those past
// their Lease, and every claim of own (this process's previous run) when
// own is set.
func (d *Dispatcher) recoverClaims(ctx context.Context, own string) {
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	now := d.cfg.Now()
	r := Recovery{Now: now, StaleBefore: now.Add(-d.cfg.ClaimLease), Owner: own, Self: d.cfg.Instance}
	if failed := d.beatFailed.Load(); failed != 0 && now.Sub(time.Unix(0, failed)) < d.cfg.ClaimLease {
		// This process could not write its own heartbeat within the claim
		// lease: the others' heartbeats are probably late for the same
		// reason (the store was unreachable), not because they died.
		r.StaleBefore = time.Time{}
	}
	n, err := d.store.RecoverClaims(sctx, r)
	d.obs.Batch("recover", n, time.Since(start), err)
	switch {
	case err != nil && ctx.Err() == nil:
		d.log.Error("recovering ended claims", "err", err)
	case n > 0 && own != "":
		d.log.Warn("messages this instance's previous run left Sending put back to Pending", "count", n, "instance", own)
		d.Wake()
	case n > 0:
		d.log.Warn("messages left Sending by a stopped process put back to Pending", "count", n)
		d.Wake()
	}
}

// complete completes the drained bulk campaigns. It asks the store every
// time rather than after the moves this process made: the last message of
// a campaign may be made final by anything (the validity sweep of a paused
// campaign then resumed, a cancel, an opt-out, a chat callback, another
// process), and completion follows from the counters alone.
func (d *Dispatcher) complete(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	done, err := d.store.CompleteDrained(sctx, d.cfg.Now())
	d.obs.Batch("complete", len(done), time.Since(start), err)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("completing drained campaigns", "err", err)
		}
	}
	for _, c := range done {
		d.log.Info("campaign completed", "campaign", c.ID, "name", c.Name, "company", c.CompanyID)
	}
}

// purge forgets the parts and receipts past the retention, a batch of
// Config.PurgeBatch at a time until one comes short or ctx ends, paced
// (purgeShare, purgePause) so that beside delivery it takes at most about
// a fifth of the store's time however large the backlog.
func (d *Dispatcher) purge(ctx context.Context) {
	before := d.cfg.Now().Add(-d.cfg.ReceiptRetention)
	pace.Batches(ctx, purgePause, purgeShare, func() bool {
		sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
		defer cancel()
		start := time.Now()
		n, err := d.store.PurgeReceipts(sctx, before, d.cfg.PurgeBatch)
		d.obs.Batch("purge", n, time.Since(start), err)
		if err != nil && ctx.Err() == nil {
			d.log.Error("purging old receipts", "err", err)
		}
		return err == nil && n == d.cfg.PurgeBatch
	})
}

// The pause after a purge batch: purgeShare times as long as it took, at
// least purgePause.
const (
	purgeShare = 4
	purgePause = 10 * time.Millisecond
)

// expireReceipts settles, as unconfirmed, the SMS sent more than
// ReceiptTimeout ago whose receipts have not all come.
func (d *Dispatcher) expireReceipts(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	now := d.cfg.Now()
	n, err := d.store.ExpireReceipts(sctx, now.Add(-d.cfg.ReceiptTimeout), now, ReceiptTimeoutDetails(d.cfg.ReceiptTimeout))
	d.obs.Batch("expire", n, time.Since(start), err)
	switch {
	case err != nil && ctx.Err() == nil:
		d.log.Error("expiring receipts", "err", err)
	case n > 0:
		d.log.Info("SMS without a delivery receipt within the receipt timeout are no longer waited for", "count", n,
			"timeout", d.cfg.ReceiptTimeout)
	}
}

// expireBatch is how many expired messages one store call fails.
const expireBatch = 1000

// expireMessages fails the Pending messages past their validity, a batch
// at a time until none is left or ctx ends.
func (d *Dispatcher) expireMessages(ctx context.Context) {
	total := 0
	for ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
		start := time.Now()
		n, err := d.store.ExpireMessages(sctx, d.cfg.Now(), expireBatch)
		cancel()
		d.obs.Batch("expire_messages", n, time.Since(start), err)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				d.log.Error("failing expired messages", "err", err)
			}
			break
		}
		if n < expireBatch {
			break
		}
	}
	if total > 0 {
		d.log.Info("messages past their validity failed", "count", total, "details", messaging.DetailsExpired)
	}
}

// ReceiptTimeoutDetails is the Details of a message whose delivery
// receipt did not come within timeout.
func ReceiptTimeoutDetails(timeout time.Duration) string {
	return "NO_RECEIPT: no delivery receipt within " + timeout.String()
}

// queueDepth reports the results waiting in all writers, writer i's
// queue now holding n.
func (d *Dispatcher) queueDepth(i, n int) {
	d.depths[i].Store(int64(n))
	var total int64
	for k := range d.depths {
		total += d.depths[k].Load()
	}
	d.obs.QueueDepth("results", int(total))
}

// writer returns the results writer of a part id or message id (its
// bytes), by FNV-1a hash.
func (d *Dispatcher) writer(key string) *groupcommit.Committer[result, resultOut] {
	if len(d.results) == 1 {
		return d.results[0]
	}
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return d.results[h%uint32(len(d.results))]
}

// writerOf returns the results writer of a send result: that of its first
// part, whose receipt then meets it, else that of its message.
func (d *Dispatcher) writerOf(u *StatusUpdate) *groupcommit.Committer[result, resultOut] {
	if len(u.PartIDs) > 0 {
		return d.writer(u.PartIDs[0])
	}
	return d.writer(string(u.MessageID[:]))
}

// writeResults records a batch of send results and receipts in one store
// transaction (Store.ApplyBatch), trying again until it succeeds or Run
// gives up draining.
func (d *Dispatcher) writeResults(rs []result) ([]resultOut, error) {
	var updates []StatusUpdate
	var receipts []Receipt
	for _, r := range rs {
		if r.update != nil {
			updates = append(updates, *r.update)
		} else {
			receipts = append(receipts, *r.receipt)
		}
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(d.writeCtx, d.cfg.StoreTimeout)
		start := time.Now()
		br, err := d.store.ApplyBatch(ctx, updates, receipts, d.cfg.Now())
		cancel()
		d.obs.Batch("results", len(rs), time.Since(start), err)
		if err == nil {
			out := make([]resultOut, len(rs))
			u, r := 0, 0
			for i, res := range rs {
				if res.update != nil {
					out[i].applied = u < len(br.Applied) && br.Applied[u]
					if u < len(br.Then) {
						out[i].then = br.Then[u]
					}
					if u < len(br.DeliveredAfter) {
						out[i].after = br.DeliveredAfter[u]
					}
					u++
				} else {
					if r < len(br.Outcomes) {
						out[i].outcome = br.Outcomes[r]
					}
					if r < len(br.Moved) {
						out[i].moved = br.Moved[r]
					}
					if r < len(br.MovedAfter) {
						out[i].after = br.MovedAfter[r]
					}
					r++
				}
			}
			d.countApplied(rs, out)
			return out, nil
		}
		if d.writeCtx.Err() != nil {
			return nil, fmt.Errorf("record send results and receipts: %w", err)
		}
		wait := min(time.Duration(attempt)*100*time.Millisecond, 5*time.Second)
		d.log.Error("recording send results and receipts; trying again", "count", len(rs), "attempt", attempt, "err", err)
		select {
		case <-time.After(wait):
		case <-d.writeCtx.Done():
		}
	}
}

// countApplied reports the receipts, and every status a message moved to
// in the batch, to the Observer: each move once, by the update or the
// receipt that made it; and, for each move to Delivered, how long after
// its Sent the message was delivered.
func (d *Dispatcher) countApplied(rs []result, out []resultOut) {
	type key struct {
		ch messaging.Channel
		st messaging.MessageStatus
	}
	var counts map[key]int
	add := func(ch messaging.Channel, st messaging.MessageStatus) {
		if counts == nil {
			counts = map[key]int{}
		}
		counts[key{ch, st}]++
	}
	for i, r := range rs {
		switch {
		case r.update != nil && out[i].applied:
			add(r.ch, r.update.Status)
			if out[i].then != "" {
				add(r.ch, out[i].then)
			}
			if r.update.Status == messaging.StatusDelivered || out[i].then == messaging.StatusDelivered {
				d.obs.Delivered(r.ch, out[i].after)
			}
		case r.receipt != nil:
			d.obs.Receipt(r.receipt.State, out[i].outcome)
			if out[i].moved != "" {
				add(messaging.ChannelSMS, out[i].moved)
			}
			if out[i].moved == messaging.StatusDelivered {
				d.obs.Delivered(messaging.ChannelSMS, out[i].after)
			}
		}
	}
	for k, n := range counts {
		d.obs.Messages(k.ch, k.st, n)
	}
}

// HandleReceipt is the delivery.ReceiptHandler of the SMS adapter: it
// stores one receipt, grouped with the send results and receipts recorded
// at the same time into one store transaction, and returns once that
// transaction committed. A receipt of a part whose Sent this dispatcher is
// recording goes into the same transaction as the Sent or a later one; a
// receipt of a part not recorded yet is kept until it is (see
// Store.ApplyReceipts); a repeated one changes nothing. An error means the
// receipt was not stored: the adapter then has the SMSC send it again.
func (d *Dispatcher) HandleReceipt(ctx context.Context, r Receipt) error {
	if err := d.parts.wait(ctx, r.ProviderID); err != nil {
		return fmt.Errorf("store receipt %s: %w", r.ProviderID, err)
	}
	if _, err := d.writer(r.ProviderID).Do(ctx, result{receipt: &r}, nil); err != nil {
		return fmt.Errorf("store receipt %s: %w", r.ProviderID, err)
	}
	return nil
}

// recording tracks the SMS parts whose Sent is about to be queued for the
// store, so that their receipts (which the SMSC may send right after its
// submit_sm_resp) queue behind it: they then apply in the Sent's
// transaction or a later one, instead of being kept and applied by the
// Sent. A receipt of a part not registered here is queued at once; should
// its transaction come before its Sent's, it is kept and applied by the
// Sent, as for a receipt of another process's part.
type recording struct {
	mu sync.Mutex
	m  map[string]chan struct{} // part id -> closed once its Sent is queued
}

// add registers parts whose Sent is about to be queued; close the returned
// channel (through remove) once it is.
func (r *recording) add(ids []string) chan struct{} {
	done := make(chan struct{})
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]chan struct{}{}
	}
	for _, id := range ids {
		r.m[id] = done
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

// wait waits until the Sent of the part, when registered, is queued.
func (r *recording) wait(ctx context.Context, id string) error {
	r.mu.Lock()
	done := r.m[id]
	r.mu.Unlock()
	if done == nil {
		return nil
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
