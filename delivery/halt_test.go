package delivery_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// testStores lists the stores the dispatcher tests that need every store
// run on: memstore, SQLite and Postgres.
func testStores() []struct {
	name string
	open func(t *testing.T) store
} {
	return []struct {
		name string
		open func(t *testing.T) store
	}{
		{"memstore", func(*testing.T) store { return memstore.New() }},
		{"sqlite", func(t *testing.T) store { return openStore(t, databases[0].url(t)) }},
		{"postgres", func(t *testing.T) store { return openStore(t, databases[1].url(t)) }},
	}
}

// queueSMS is an SMS sender with one queue per connector, as an SMPP client
// with a capped rate: a connector with a period takes one SMS per period,
// first come first served; one without takes each at once. An SMS is "on
// the wire" once its connector took it; one still queued when its
// Withdraw closes gives up (delivery.ErrWithdrawn), as the SMPP client
// does. route names the connector of an SMS.
type queueSMS struct {
	route func(sms delivery.SMS) string
	conns map[string]*smsQueue
}

// smsQueue is one connector of a queueSMS.
type smsQueue struct {
	every time.Duration
	mu    sync.Mutex
	queue []*queued
	sent  []sentSMS
	wake  chan struct{}
}

type queued struct {
	sms  delivery.SMS
	done chan struct{}
	took bool
}

// sentSMS is an SMS a connector took, and when.
type sentSMS struct {
	sms delivery.SMS
	at  time.Time
}

func newQueueSMS(t *testing.T, route func(delivery.SMS) string, periods map[string]time.Duration) *queueSMS {
	q := &queueSMS{route: route, conns: map[string]*smsQueue{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for name, every := range periods {
		c := &smsQueue{every: every, wake: make(chan struct{}, 1)}
		q.conns[name] = c
		if every > 0 {
			go c.run(ctx)
		}
	}
	return q
}

// run takes the first SMS queued every period.
func (c *smsQueue) run(ctx context.Context) {
	t := time.NewTicker(c.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		for len(c.queue) > 0 {
			w := c.queue[0]
			c.queue = c.queue[1:]
			if isClosed(w.sms.Withdraw) {
				continue // its Send gives up
			}
			w.took = true
			c.sent = append(c.sent, sentSMS{w.sms, time.Now()})
			close(w.done)
			break
		}
		c.mu.Unlock()
	}
}

// isClosed reports whether ch (nil: never) is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (q *queueSMS) Send(ctx context.Context, sms delivery.SMS) (delivery.SMSResult, error) {
	name := q.route(sms)
	c := q.conns[name]
	c.mu.Lock()
	if isClosed(sms.Withdraw) {
		c.mu.Unlock()
		return delivery.SMSResult{}, delivery.ErrWithdrawn
	}
	if c.every == 0 {
		c.sent = append(c.sent, sentSMS{sms, time.Now()})
		c.mu.Unlock()
		return delivery.SMSResult{PartIDs: []string{name + ":" + sms.MessageID.String()}, Connector: name}, nil
	}
	w := &queued{sms: sms, done: make(chan struct{})}
	c.queue = append(c.queue, w)
	c.mu.Unlock()
	var err error
	select {
	case <-w.done:
	case <-sms.Withdraw:
		err = delivery.ErrWithdrawn
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		c.mu.Lock()
		took := w.took
		if !took {
			for i, x := range c.queue {
				if x == w {
					c.queue = append(c.queue[:i], c.queue[i+1:]...)
					break
				}
			}
		}
		c.mu.Unlock()
		if !took {
			return delivery.SMSResult{}, err
		}
	}
	return delivery.SMSResult{PartIDs: []string{name + ":" + sms.MessageID.String()}, Connector: name}, nil
}

// sent returns what connector name took.
func (q *queueSMS) sent(name string) []sentSMS {
	c := q.conns[name]
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sentSMS(nil), c.sent...)
}

// TestHaltWithdrawsQueuedSMS: once a campaign is paused (or cancelled),
// its claimed SMS still waiting in the sender's queue are withdrawn: none
// reaches the SMSC after the halt, they go back to Pending (Failed
// CANCELLED after a cancel), and a resume sends each of them once. With
// Dispatcher.Halt (the process that paused it) nothing more is sent after
// the call; without it (another process paused it) the dispatcher finds
// out within its HaltInterval.
func TestHaltWithdrawsQueuedSMS(t *testing.T) {
	for _, st := range testStores() {
		t.Run(st.name, func(t *testing.T) {
			for _, tc := range []struct {
				name          string
				cancel, local bool
			}{{"pause", false, true}, {"pause-elsewhere", false, false}, {"cancel", true, true}, {"cancel-elsewhere", true, false}} {
				t.Run(tc.name, func(t *testing.T) { testHalt(t, st.open(t), tc.cancel, tc.local) })
			}
		})
	}
}

func testHalt(t *testing.T, s store, cancel, local bool) {
	ctx := context.Background()
	w := newWorld(t, s)
	const n = 400
	c, _ := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(n, 0)})
	sms := newQueueSMS(t, func(delivery.SMS) string { return "capped" }, map[string]time.Duration{"capped": 10 * time.Millisecond})
	cfg := fastConfig(s)
	cfg.SMS = sms
	cfg.HaltInterval = 20 * time.Millisecond
	if local {
		cfg.HaltInterval = time.Hour // Halt alone withdraws them
	}
	logged := &ctxRecorder{}
	cfg.Logger = slog.New(logged)
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	run(t, d)
	waitFor(t, "a few SMS sent", func() bool { return len(sms.sent("capped")) >= 5 })

	tr := messaging.CampaignTransition{CompanyID: w.co.ID, CampaignID: c.ID, From: []messaging.CampaignStatus{messaging.CampaignInProgress}, At: time.Now().UTC()}
	if cancel {
		tr.To = messaging.CampaignCompleted
		require.NoError(t, s.CancelCampaign(ctx, tr))
	} else {
		tr.To = messaging.CampaignPaused
		require.NoError(t, s.TransitionCampaign(ctx, tr))
	}
	halted := time.Now()
	if local {
		d.Halt(context.WithValue(ctx, haltKey{}, "the pause's request"), c.ID, cancel)
		halted = time.Now()
		require.Equal(t, []any{"the pause's request"}, logged.values("claimed messages of a halted campaign withdrawn"),
			"the line is logged with the context of the work that halted the campaign (its trace)")
	}
	waitFor(t, "the claimed SMS settled", func() bool { return w.get(c.ID).Counts.Sending == 0 })
	before := len(sms.sent("capped"))
	time.Sleep(200 * time.Millisecond)
	sent := sms.sent("capped")
	require.Len(t, sent, before, "nothing sent once the claimed SMS settled")
	late := 0
	for _, x := range sent {
		if x.at.After(halted) {
			late++
		}
	}
	if local {
		require.Zero(t, late, "nothing taken by the SMSC after Halt returned")
	} else {
		require.LessOrEqual(t, late, 60, "taken after the pause: within a HaltInterval and a store read, at 100/s")
	}
	got := w.get(c.ID)
	if cancel {
		require.Equal(t, messaging.StatusCounts{Sent: len(sent), Failed: n - len(sent)}, got.Counts)
		for _, m := range w.messagesOf(c.ID) {
			if m.Status == messaging.StatusFailed {
				require.Equal(t, campaign.DetailsCancelled, m.Details)
			}
		}
		return
	}
	require.Equal(t, messaging.StatusCounts{Sent: len(sent), Pending: n - len(sent)}, got.Counts)
	require.Less(t, len(sent), n/2, "most were still queued: withdrawn, not sent")

	w.transition(c, messaging.CampaignPaused, messaging.CampaignInProgress)
	d.Wake()
	waitFor(t, "every SMS sent after the resume", func() bool { return w.get(c.ID).Counts.Sent == n })
	seen := map[messaging.ID]int{}
	for _, x := range sms.sent("capped") {
		seen[x.sms.MessageID]++
	}
	require.Len(t, seen, n)
	for id, k := range seen {
		require.Equal(t, 1, k, "message %s sent once", id)
	}
}

// haltKey is the context key testHalt marks its Halt call's context with.
type haltKey struct{}

// ctxRecorder is a slog handler that keeps, for each message logged, the
// haltKey value of the context it was logged with.
type ctxRecorder struct {
	mu   sync.Mutex
	seen map[string][]any
}

func (*ctxRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (c *ctxRecorder) Handle(ctx context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string][]any{}
	}
	c.seen[r.Message] = append(c.seen[r.Message], ctx.Value(haltKey{}))
	return nil
}

func (c *ctxRecorder) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *ctxRecorder) WithGroup(string) slog.Handler      { return c }

// values returns the haltKey values of the lines logged with message msg.
func (c *ctxRecorder) values(msg string) []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[msg]
}
