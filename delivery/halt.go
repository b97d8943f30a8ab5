package delivery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// flight is the messages of one campaign that a lane handed to its sender
// and whose send has not returned yet.
type flight struct {
	n int // guarded by flights.mu
	// halted is closed when the campaign was paused or cancelled; the
	// sends not written to a provider yet then give up (SMS.Withdraw).
	halted chan struct{}
	// cancelled is set before halted is closed: the campaign was
	// cancelled, not paused.
	cancelled bool
}

// isHalted reports whether the flight's campaign was halted.
func (f *flight) isHalted() bool {
	select {
	case <-f.halted:
		return true
	default:
		return false
	}
}

// flights tracks the campaigns whose messages are being sent, so that a
// pause or a cancel withdraws those not submitted yet. A halted flight
// leaves the map at once: messages claimed after a resume start a new one.
//
// A claim that began before a halt may return the campaign's messages
// after it (the claim read them before the pause was stored, and the lane
// joins them once the claim returns). Each claim therefore takes a
// sequence number (beginClaim), and a halt remembers the last number
// given: a message joining from a claim numbered up to it joins an
// already halted flight. The halt is forgotten once those claims ended.
type flights struct {
	mu sync.Mutex
	m  map[messaging.ID]*flight
	// seq is the number of the last claim begun; claiming holds those
	// not ended yet.
	seq      uint64
	claiming map[uint64]struct{}
	// halts holds, for each campaign halted while claims were under way,
	// the last claim number that may still bring its messages.
	halts map[messaging.ID]halt
}

// halt is a campaign's halt that claims begun before it must still see.
type halt struct {
	seq       uint64
	cancelled bool
}

// beginClaim numbers a claim about to read the store; endClaim(n) must
// follow once its messages joined their flights (or it failed).
func (fs *flights) beginClaim() uint64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.seq++
	if fs.claiming == nil {
		fs.claiming = map[uint64]struct{}{}
	}
	fs.claiming[fs.seq] = struct{}{}
	return fs.seq
}

// endClaim ends claim n, and forgets the halts no claim under way can
// concern any more.
func (fs *flights) endClaim(n uint64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	delete(fs.claiming, n)
	for id, h := range fs.halts {
		if !fs.claimingUpTo(h.seq) {
			delete(fs.halts, id)
		}
	}
}

// claimingUpTo reports whether a claim numbered up to n is under way.
// fs.mu is held.
func (fs *flights) claimingUpTo(n uint64) bool {
	for c := range fs.claiming {
		if c <= n {
			return true
		}
	}
	return false
}

// join counts one more message of campaign id, claimed by claim number
// claim, being sent and returns its flight: a halted one when the
// campaign was halted after that claim began.
func (fs *flights) join(id messaging.ID, claim uint64) *flight {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if h, ok := fs.halts[id]; ok && claim <= h.seq {
		f := &flight{n: 1, halted: make(chan struct{}), cancelled: h.cancelled}
		close(f.halted)
		return f
	}
	f := fs.m[id]
	if f == nil {
		if fs.m == nil {
			fs.m = map[messaging.ID]*flight{}
		}
		f = &flight{halted: make(chan struct{})}
		fs.m[id] = f
	}
	f.n++
	return f
}

// leave counts one message of flight f, of campaign id, out.
func (fs *flights) leave(id messaging.ID, f *flight) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.n--
	if f.n == 0 && fs.m[id] == f {
		delete(fs.m, id)
	}
}

// halt withdraws the messages of campaign id being sent, and those that
// claims under way will bring; false when there are none being sent.
func (fs *flights) halt(id messaging.ID, cancelled bool) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.claimingUpTo(fs.seq) {
		if fs.halts == nil {
			fs.halts = map[messaging.ID]halt{}
		}
		fs.halts[id] = halt{seq: fs.seq, cancelled: cancelled}
	}
	f := fs.m[id]
	if f == nil {
		return false
	}
	delete(fs.m, id)
	f.cancelled = cancelled
	close(f.halted)
	return true
}

// campaigns returns the campaigns with messages being sent.
func (fs *flights) campaigns() []messaging.ID {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	ids := make([]messaging.ID, 0, len(fs.m))
	for id := range fs.m {
		ids = append(ids, id)
	}
	return ids
}

// Halt withdraws the messages of a campaign just paused (cancelled false)
// or cancelled that this dispatcher claimed and has not handed to a
// provider yet: an SMS none of whose parts is written to the SMSC gives up
// its place in the SMPP client's queue. A withdrawn message of a paused
// campaign goes back to Pending, keeping its due time (the claim counts as
// one of its attempts); one of a cancelled campaign fails with details
// campaign.DetailsCancelled. Messages already on the wire finish. Call it
// once the pause or cancel is stored; the dispatcher also looks for the
// campaigns halted by other processes every Config.HaltInterval.
//
// ctx carries the values of the work that halted the campaign (its trace,
// for the log line); Halt does not wait on it.
func (d *Dispatcher) Halt(ctx context.Context, campaignID messaging.ID, cancelled bool) {
	if d.flights.halt(campaignID, cancelled) {
		d.log.InfoContext(ctx, "claimed messages of a halted campaign withdrawn", "campaign", campaignID, "cancelled", cancelled)
	}
}

// watchHalted halts, every Config.HaltInterval until ctx ends, the
// campaigns with messages being sent that the store says are paused or
// cancelled (by this process or another one sharing the store).
func (d *Dispatcher) watchHalted(ctx context.Context) {
	t := time.NewTicker(d.cfg.HaltInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids := d.flights.campaigns()
		if len(ids) == 0 {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, min(d.cfg.StoreTimeout, 10*d.cfg.HaltInterval))
		start := time.Now()
		halted, err := d.store.HaltedCampaigns(sctx, ids)
		cancel()
		d.obs.Batch("halted", len(ids), time.Since(start), err)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("reading paused and cancelled campaigns", "err", err)
			}
			continue
		}
		for id, cancelled := range halted {
			d.Halt(ctx, id, cancelled)
		}
	}
}

// withdrawn is the update of a message whose campaign was halted before
// it was submitted: Pending again at its due time, or Failed CANCELLED.
func (d *Dispatcher) withdrawn(j job) (*StatusUpdate, string) {
	if j.flight.cancelled {
		return d.fail(j.m, campaign.DetailsCancelled), resultWithdrawn
	}
	return &StatusUpdate{MessageID: j.m.ID, Status: messaging.StatusPending, At: d.cfg.Now(), DueAt: j.m.DueAt}, resultWithdrawn
}

// deferred is the update of a message not sent because its connector
// held its budget (ConnectorPicker): Pending again at its due time.
func (d *Dispatcher) deferred(j job) (*StatusUpdate, string) {
	return &StatusUpdate{MessageID: j.m.ID, Status: messaging.StatusPending, At: d.cfg.Now(), DueAt: j.m.DueAt}, resultDeferred
}

// isWithdrawn reports whether err is a send given up for a halt.
func isWithdrawn(err error) bool { return errors.Is(err, ErrWithdrawn) }
