package enginetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// clock is the time every process reads: it moves only when a step moves
// it, so that validity, retry backoffs, schedules and heartbeats age
// deterministically instead of by sleeping.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// errDead is what the store answers a killed process.
var errDead = errors.New("the process was killed")

// fenced is one process's view of the shared store: once the process is
// killed, every write the dispatcher and the scheduler make fails, as
// they would from a dead process. What was committed stays: its claims
// stay Sending, owned by its instance, and its heartbeat stays.
type fenced struct {
	herald.Store
	*fence
}

// fence is the kill switch of one process's store calls: a call holds it
// shared while it runs, and the kill takes it whole, so that no call of
// the dead process commits after the kill (its connection would have
// died with it).
type fence struct {
	mu   sync.RWMutex
	dead bool
	// beat is the clock's time of the last heartbeat written (UnixNano).
	beat atomic.Int64
}

// enter starts a call: it returns the function ending it, or errDead.
func (f *fence) enter() (func(), error) {
	f.mu.RLock()
	if f.dead {
		f.mu.RUnlock()
		return nil, errDead
	}
	return f.mu.RUnlock, nil
}

// kill waits for the calls under way and fails every later one.
func (f *fence) kill() {
	f.mu.Lock()
	f.dead = true
	f.mu.Unlock()
}

func (f fenced) ClaimDue(ctx context.Context, c delivery.Claim) ([]messaging.Message, error) {
	done, err := f.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return f.Store.ClaimDue(ctx, c)
}

func (f fenced) ApplyUpdates(ctx context.Context, u []delivery.StatusUpdate) ([]bool, error) {
	done, err := f.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return f.Store.ApplyUpdates(ctx, u)
}

func (f fenced) ApplyReceipts(ctx context.Context, r []delivery.Receipt, now time.Time) ([]delivery.ReceiptOutcome, error) {
	done, err := f.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return f.Store.ApplyReceipts(ctx, r, now)
}

func (f fenced) ApplyBatch(ctx context.Context, u []delivery.StatusUpdate, r []delivery.Receipt, now time.Time) (delivery.BatchResult, error) {
	done, err := f.enter()
	if err != nil {
		return delivery.BatchResult{}, err
	}
	defer done()
	return f.Store.ApplyBatch(ctx, u, r, now)
}

func (f fenced) Heartbeat(ctx context.Context, owner string, at time.Time) error {
	done, err := f.enter()
	if err != nil {
		return err
	}
	defer done()
	if err := f.Store.Heartbeat(ctx, owner, at); err != nil {
		return err
	}
	for {
		b := f.beat.Load()
		if b >= at.UnixNano() || f.beat.CompareAndSwap(b, at.UnixNano()) {
			return nil
		}
	}
}

func (f fenced) ForgetClaimer(ctx context.Context, owner string) error {
	done, err := f.enter()
	if err != nil {
		return err
	}
	defer done()
	return f.Store.ForgetClaimer(ctx, owner)
}

func (f fenced) RecoverClaims(ctx context.Context, r delivery.Recovery) (int, error) {
	done, err := f.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	return f.Store.RecoverClaims(ctx, r)
}

func (f fenced) CompleteDrained(ctx context.Context, now time.Time) ([]delivery.Completed, error) {
	done, err := f.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return f.Store.CompleteDrained(ctx, now)
}

func (f fenced) ExpireMessages(ctx context.Context, now time.Time, limit int) (int, error) {
	done, err := f.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	return f.Store.ExpireMessages(ctx, now, limit)
}

func (f fenced) ExpireReceipts(ctx context.Context, sentBefore, now time.Time, details string) (int, error) {
	done, err := f.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	return f.Store.ExpireReceipts(ctx, sentBefore, now, details)
}

func (f fenced) TransitionCampaign(ctx context.Context, t messaging.CampaignTransition) error {
	done, err := f.enter()
	if err != nil {
		return err
	}
	defer done()
	return f.Store.TransitionCampaign(ctx, t)
}

// Engine settings of the processes. The claim lease is in the test's
// clock, which moves by steps: it is long, so that only a step meant to
// let a live process take a dead one's claims (stepTakeover) ages a
// heartbeat past it. Heartbeats are written often in real time, and each
// step that moves the clock waits for every live process to write one at
// the new time (world.heartbeatsCatchUp).
const (
	haltInterval = 20 * time.Millisecond
	claimLease   = 10 * time.Minute
	concurrency  = 8
)

// proc is one Herald process on the shared store.
type proc struct {
	name  string // its Instance
	label string // this run of it, as the SMSC records its submits
	h     *herald.Herald
	fence *fence
	gone  chan struct{} // closed at the kill
	stop  context.CancelFunc
	// closeStore closes its store handle: at the kill, or once it
	// stopped.
	closeStore func()
	done       chan error
	killed     bool
	killedAt   int64 // the SMSC's submit sequence at the kill
	// recovered: a restart under the same name, or a live process after
	// the claim lease, has taken its claims back.
	recovered bool
}

func (p *proc) alive() bool { return !p.killed && p.done != nil }

// startProc builds and runs a Herald process named name on store.
func startProc(name, label string, store herald.Store, sc *smsc, chat *chatProvider, clk *clock) (*proc, error) {
	p := &proc{name: name, label: label, fence: &fence{}, gone: make(chan struct{})}
	h, err := herald.New(herald.Config{
		Store: fenced{Store: store, fence: p.fence},
		SMS: func(r delivery.Reporter) (delivery.SMSSender, error) {
			return &sender{smsc: sc, proc: label, receipts: r.Receipt, gone: p.gone}, nil
		},
		Chat: func(delivery.Reporter) (delivery.ChatSender, error) {
			return &chatSender{p: chat, gone: p.gone}, nil
		},
		ScheduleEvery: 20 * time.Millisecond,
		Campaigns:     campaign.Config{Now: clk.Now},
		Delivery: delivery.Config{
			Instance:          name,
			Now:               clk.Now,
			BatchSize:         concurrency / 2, // as the defaults: a claim takes half the places
			SMSConcurrency:    concurrency,
			ClaimLease:        claimLease,
			HeartbeatInterval: 50 * time.Millisecond,
			Lease:             48 * time.Hour,
			SendTimeout:       24 * time.Hour,
			PollInterval:      10 * time.Millisecond,
			RecoverInterval:   20 * time.Millisecond,
			CompleteInterval:  20 * time.Millisecond,
			ExpireInterval:    20 * time.Millisecond,
			RatesInterval:     100 * time.Millisecond,
			HaltInterval:      haltInterval,
			RouteTTL:          time.Hour,
			DrainTimeout:      50 * time.Millisecond,
			StoreTimeout:      20 * time.Second,
			WriteDelay:        -1,
		},
	})
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	p.h, p.stop, p.done = h, stop, make(chan error, 1)
	go func() { p.done <- h.Run(ctx) }()
	select {
	case <-h.Recovered():
	case err := <-p.done:
		stop()
		return nil, err
	}
	return p, nil
}

// kill stops p as a crash would: from now on its writes fail, and its Run
// is ended without a drain worth the name (the sends it holds are
// abandoned, their messages stay Sending under its name).
func (p *proc) kill(sc *smsc) {
	close(p.gone)
	p.fence.kill()
	p.killed, p.killedAt = true, sc.seqNow()
	p.stop()
	p.closeStore()
}

// shutdown stops a live p cleanly and waits for it.
func (p *proc) shutdown() error {
	p.stop()
	err := <-p.done
	p.done = nil
	if cerr := p.h.Close(context.Background()); err == nil {
		err = cerr
	}
	p.closeStore()
	return err
}
