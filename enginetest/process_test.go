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
	dead *atomic.Bool
}

func (f fenced) err() error {
	if f.dead.Load() {
		return errDead
	}
	return nil
}

func (f fenced) ClaimDue(ctx context.Context, c delivery.Claim) ([]messaging.Message, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Store.ClaimDue(ctx, c)
}

func (f fenced) ApplyUpdates(ctx context.Context, u []delivery.StatusUpdate) ([]bool, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Store.ApplyUpdates(ctx, u)
}

func (f fenced) ApplyReceipts(ctx context.Context, r []delivery.Receipt, now time.Time) ([]delivery.ReceiptOutcome, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Store.ApplyReceipts(ctx, r, now)
}

func (f fenced) ApplyBatch(ctx context.Context, u []delivery.StatusUpdate, r []delivery.Receipt, now time.Time) (delivery.BatchResult, error) {
	if err := f.err(); err != nil {
		return delivery.BatchResult{}, err
	}
	return f.Store.ApplyBatch(ctx, u, r, now)
}

func (f fenced) Heartbeat(ctx context.Context, owner string, at time.Time) error {
	if err := f.err(); err != nil {
		return err
	}
	return f.Store.Heartbeat(ctx, owner, at)
}

func (f fenced) ForgetClaimer(ctx context.Context, owner string) error {
	if err := f.err(); err != nil {
		return err
	}
	return f.Store.ForgetClaimer(ctx, owner)
}

func (f fenced) RecoverClaims(ctx context.Context, r delivery.Recovery) (int, error) {
	if err := f.err(); err != nil {
		return 0, err
	}
	return f.Store.RecoverClaims(ctx, r)
}

func (f fenced) CompleteDrained(ctx context.Context, now time.Time) ([]delivery.Completed, error) {
	if err := f.err(); err != nil {
		return nil, err
	}
	return f.Store.CompleteDrained(ctx, now)
}

func (f fenced) ExpireMessages(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := f.err(); err != nil {
		return 0, err
	}
	return f.Store.ExpireMessages(ctx, now, limit)
}

func (f fenced) ExpireReceipts(ctx context.Context, sentBefore, now time.Time, details string) (int, error) {
	if err := f.err(); err != nil {
		return 0, err
	}
	return f.Store.ExpireReceipts(ctx, sentBefore, now, details)
}

func (f fenced) TransitionCampaign(ctx context.Context, t messaging.CampaignTransition) error {
	if err := f.err(); err != nil {
		return err
	}
	return f.Store.TransitionCampaign(ctx, t)
}

// Engine settings of the processes. The claim lease is in the test's
// clock, which moves by steps: it is long, so that only a step meant to
// let a live process take a dead one's claims (stepTakeover) ages a
// heartbeat past it; heartbeats themselves are written often in real time.
const (
	claimLease  = 10 * time.Minute
	concurrency = 8
)

// proc is one Herald process on the shared store.
type proc struct {
	name     string // its Instance
	label    string // this run of it, as the SMSC records its submits
	h        *herald.Herald
	dead     *atomic.Bool
	stop     context.CancelFunc
	done     chan error
	killed   bool
	killedAt int64 // the SMSC's submit sequence at the kill
	// recovered: a restart under the same name, or a live process after
	// the claim lease, has taken its claims back.
	recovered bool
}

func (p *proc) alive() bool { return !p.killed && p.done != nil }

// startProc builds and runs a Herald process named name on store.
func startProc(name, label string, store herald.Store, sc *smsc, clk *clock) (*proc, error) {
	dead := &atomic.Bool{}
	p := &proc{name: name, label: label, dead: dead}
	h, err := herald.New(herald.Config{
		Store: fenced{Store: store, dead: dead},
		SMS: func(r delivery.ReceiptHandler) (delivery.SMSSender, error) {
			return &sender{smsc: sc, proc: label, receipts: r}, nil
		},
		ScheduleEvery: 20 * time.Millisecond,
		Campaigns:     campaign.Config{Now: clk.Now},
		Delivery: delivery.Config{
			Instance:          name,
			Now:               clk.Now,
			BatchSize:         concurrency,
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
func (p *proc) kill(seq int64) {
	p.dead.Store(true)
	p.killed, p.killedAt = true, seq
	p.stop()
}

// shutdown stops a live p cleanly and waits for it.
func (p *proc) shutdown() error {
	p.stop()
	err := <-p.done
	p.done = nil
	return err
}
