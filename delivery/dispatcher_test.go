package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// fakeSMS is a scripted SMSSender. By default every SMS is accepted with
// one part per 10 characters of text; outcome overrides that per call.
type fakeSMS struct {
	mu      sync.Mutex
	calls   map[string]int // sends per destination
	sent    []delivery.SMS
	next    int
	outcome func(sms delivery.SMS, call int) (parts int, err error)
	// receipts, when set, is called with the part ids of every accepted
	// SMS before Send returns (the SMSC answering the receipt right after
	// submit_sm_resp).
	receipts func(sms delivery.SMS, ids []string)
}

func newFakeSMS() *fakeSMS { return &fakeSMS{calls: map[string]int{}} }

func (f *fakeSMS) Send(ctx context.Context, sms delivery.SMS) (delivery.SMSResult, error) {
	f.mu.Lock()
	f.calls[sms.To]++
	call := f.calls[sms.To]
	f.sent = append(f.sent, sms)
	f.mu.Unlock()
	parts := (len(sms.Text) + 9) / 10
	var err error
	if f.outcome != nil {
		parts, err = f.outcome(sms, call)
	}
	if err != nil {
		return delivery.SMSResult{}, err
	}
	f.mu.Lock()
	ids := make([]string, parts)
	for i := range ids {
		f.next++
		ids[i] = fmt.Sprintf("P%06d", f.next)
	}
	f.mu.Unlock()
	if f.receipts != nil {
		f.receipts(sms, ids)
	}
	return delivery.SMSResult{PartIDs: ids}, nil
}

func (f *fakeSMS) callsTo(to string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[to]
}

func (f *fakeSMS) sends() []delivery.SMS {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

var (
	errThrottled = &delivery.SendError{Code: "0x00000058", Details: "ESME_RTHROTTLED"}
	errBadDest   = &delivery.SendError{Permanent: true, Code: "0x0000000B", Details: "ESME_RINVDSTADR"}
)

// receiptsFor returns a receipt function that acknowledges every part
// through h, with the outcome chosen by the number as the simulator does.
func receiptsFor(t testing.TB, h delivery.ReceiptHandler) func(delivery.SMS, []string) {
	return func(sms delivery.SMS, ids []string) {
		state, code := delivery.StateDelivered, "000"
		switch sms.To[len(sms.To)-4:] {
		case "0001":
			state, code = delivery.StateUndeliverable, "001"
		case "0002":
			state, code = delivery.StateExpired, "002"
		case "0003":
			state, code = delivery.StateRejected, "003"
		}
		for _, id := range ids {
			require.NoError(t, h(context.Background(), delivery.Receipt{ProviderID: id, State: state, Err: code, At: time.Now()}))
		}
	}
}

// TestSMSLaneReceipts: messages of an InProgress bulk campaign are sent
// with the campaign's sender, their receipts (some before the Sent is
// recorded, some after) settle them, and the campaign completes.
func TestSMSLaneReceipts(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	cfg := fastConfig(s)
	cfg.SMS = sms
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	var early sync.Map
	sms.receipts = func(m delivery.SMS, ids []string) {
		if m.To[len(m.To)-1]%2 == 0 { // half the receipts come before the Sent is recorded
			receiptsFor(t, d.HandleReceipt)(m, ids)
			return
		}
		early.Store(m.To, ids)
	}
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(40, 0), text: func(i int) string {
		return fmt.Sprintf("Message number %d, long enough for parts", i)
	}})
	run(t, d)
	w.waitCampaign(c.ID, "everything handed to the SMSC", func(c messaging.Campaign) bool { return c.Counts.Unsent() == 0 })
	early.Range(func(k, v any) bool {
		receiptsFor(t, d.HandleReceipt)(delivery.SMS{To: k.(string)}, v.([]string))
		return true
	})
	got := w.waitCampaign(c.ID, "every message settled", func(c messaging.Campaign) bool {
		return settled(c) && c.Status == messaging.CampaignCompleted
	})
	require.Equal(t, messaging.StatusCounts{Delivered: 37, Failed: 3}, got.Counts)
	for i, m := range msgs {
		got := w.message(m.ID)
		require.Equal(t, 1, got.Attempts)
		require.NotEmpty(t, got.ProviderMessageID)
		require.NotNil(t, got.SentAt)
		switch i {
		case 1, 2, 3:
			require.Equal(t, messaging.StatusFailed, got.Status, "message %d", i)
			require.Equal(t, []string{"UNDELIVERED", "EXPIRED", "REJECTED"}[i-1], got.Details)
			require.Equal(t, fmt.Sprintf("00%d", i), got.SMSErrorCode)
		default:
			require.Equal(t, messaging.StatusDelivered, got.Status, "message %d", i)
			require.NotNil(t, got.DeliveredAt)
		}
	}
	for _, sent := range sms.sends() {
		require.Equal(t, "Herald", sent.From)
	}
	require.Len(t, sms.sends(), 40, "one send per message")
	n, err := s.PendingCount(t.Context(), w.co.ID)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestSMSLaneRetries: transient failures are retried with backoff until
// they succeed; the attempt count shows it; the transient failure of the
// last attempt fails the message; a permanent failure is not retried.
func TestSMSLaneRetries(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	ps := phones(12, 100)
	sms.outcome = func(m delivery.SMS, call int) (int, error) {
		switch {
		case m.To == ps[0]: // always throttled
			return 0, errThrottled
		case m.To == ps[1]:
			return 0, errBadDest
		case m.To == ps[2] && call < 3: // the connection dropped twice
			return 0, &delivery.SendError{Details: "connection lost", Err: errors.New("EOF")}
		case m.To == ps[3] && call == 1:
			return 0, context.DeadlineExceeded // a plain timeout is transient
		case m.To == ps[3]:
			return 1, nil
		case call <= 2:
			return 0, errThrottled
		}
		return 1, nil
	}
	cfg := fastConfig(s)
	cfg.SMS = sms
	cfg.MaxAttempts = 4
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: ps})
	run(t, d)
	got := w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
	require.Equal(t, messaging.StatusCounts{Sent: 10, Failed: 2}, got.Counts)

	m0 := w.message(msgs[0].ID)
	require.Equal(t, messaging.StatusFailed, m0.Status)
	require.Equal(t, "Gave up after 4 attempts: ESME_RTHROTTLED (0x00000058)", m0.Details)
	require.Equal(t, 4, m0.Attempts)
	require.Equal(t, 4, sms.callsTo(ps[0]))

	m1 := w.message(msgs[1].ID)
	require.Equal(t, messaging.StatusFailed, m1.Status)
	require.Equal(t, "ESME_RINVDSTADR (0x0000000B)", m1.Details)
	require.Equal(t, 1, sms.callsTo(ps[1]), "a permanent failure is not retried")

	require.Equal(t, 3, w.message(msgs[2].ID).Attempts)
	require.Equal(t, 2, w.message(msgs[3].ID).Attempts)
	for _, m := range msgs[4:] {
		got := w.message(m.ID)
		require.Equal(t, messaging.StatusSent, got.Status)
		require.Equal(t, 3, got.Attempts)
	}
}

// readySMS is a fakeSMS that can send only once ready is closed
// (delivery.ReadyWaiter), like an SMPP client waiting for its bind.
type readySMS struct {
	*fakeSMS
	ready chan struct{}
	waits atomic.Int32
}

func (r *readySMS) WaitReady(ctx context.Context) error {
	r.waits.Add(1)
	select {
	case <-r.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestClaimsWaitForReadySender: while the sender says it cannot send
// (ReadyWaiter), no message is claimed, so none uses up an attempt; once it
// can, every message goes out on its first attempt.
func TestClaimsWaitForReadySender(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := &readySMS{fakeSMS: newFakeSMS(), ready: make(chan struct{})}
	cfg := fastConfig(s)
	cfg.SMS = sms
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(5, 100)})
	run(t, d)
	require.Eventually(t, func() bool { return sms.waits.Load() > 0 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // several poll intervals of fastConfig
	for _, m := range msgs {
		got := w.message(m.ID)
		require.Equal(t, messaging.StatusPending, got.Status)
		require.Zero(t, got.Attempts)
	}
	require.Empty(t, sms.sends())

	close(sms.ready)
	w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
	for _, m := range msgs {
		got := w.message(m.ID)
		require.Equal(t, messaging.StatusSent, got.Status)
		require.Equal(t, 1, got.Attempts)
	}
}

// TestOnlyInProgressCampaigns: messages of a Ready campaign wait until it
// starts; those of a transactional campaign go at once; a campaign without
// an approved sender fails its messages.
func TestOnlyInProgressCampaigns(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	cfg := fastConfig(s)
	cfg.SMS = sms
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	ready, readyMsgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(5, 200), status: messaging.CampaignReady})
	tx, _ := w.campaign(spec{channel: messaging.ChannelSMS, mode: messaging.ModeTransactional, phones: phones(3, 300)})
	orphan, orphanMsgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(2, 400), noSender: true})
	run(t, d)

	w.waitCampaign(tx.ID, "transactional messages sent", func(c messaging.Campaign) bool { return c.Counts.Sent == 3 })
	got := w.waitCampaign(orphan.ID, "sender-less campaign completed", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
	require.Equal(t, messaging.StatusCounts{Failed: 2}, got.Counts)
	require.Equal(t, "No approved SMS sender", w.message(orphanMsgs[0].ID).Details)
	require.Equal(t, messaging.CampaignInProgress, w.get(tx.ID).Status, "a transactional campaign never completes")
	for _, m := range readyMsgs {
		require.Zero(t, sms.callsTo(m.Phone), "a Ready campaign sends nothing")
	}
	require.Equal(t, messaging.CampaignReady, w.get(ready.ID).Status)

	w.transition(ready, messaging.CampaignReady, messaging.CampaignInProgress)
	d.Wake()
	got = w.waitCampaign(ready.ID, "started campaign completed", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
	require.Equal(t, messaging.StatusCounts{Sent: 5}, got.Counts)
}

// TestReceiptsIdempotent: a receipt handled twice, concurrently or later,
// counts once; a long message waits for every part.
func TestReceiptsIdempotent(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	sms.outcome = func(delivery.SMS, int) (int, error) { return 3, nil }
	var mu sync.Mutex
	parts := map[string][]string{}
	sms.receipts = func(m delivery.SMS, ids []string) {
		mu.Lock()
		parts[m.To] = ids
		mu.Unlock()
	}
	cfg := fastConfig(s)
	cfg.SMS = sms
	obs := &countingObserver{}
	cfg.Observer = obs
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(20, 500)})
	run(t, d)
	w.waitCampaign(c.ID, "all sent", func(c messaging.Campaign) bool { return c.Counts.Sent == 20 })

	receipt := func(id string) delivery.Receipt {
		return delivery.Receipt{ProviderID: id, State: delivery.StateDelivered, Err: "000", At: time.Now()}
	}
	// Two parts of every message, each twice at once.
	var wg sync.WaitGroup
	for _, m := range msgs {
		for _, id := range parts[m.Phone][:2] {
			for range 2 {
				wg.Go(func() { require.NoError(t, d.HandleReceipt(t.Context(), receipt(id))) })
			}
		}
	}
	wg.Wait()
	require.Equal(t, messaging.StatusCounts{Sent: 20}, w.get(c.ID).Counts, "a long message waits for all its parts")
	for _, m := range msgs {
		require.NoError(t, d.HandleReceipt(t.Context(), receipt(parts[m.Phone][2])))
	}
	require.Equal(t, messaging.StatusCounts{Delivered: 20}, w.get(c.ID).Counts)
	for _, m := range msgs {
		for _, id := range parts[m.Phone] {
			require.NoError(t, d.HandleReceipt(t.Context(), receipt(id)))
		}
	}
	require.Equal(t, messaging.StatusCounts{Delivered: 20}, w.get(c.ID).Counts)
	require.EqualValues(t, 20, obs.receipts[delivery.ReceiptApplied].Load())
	require.EqualValues(t, 40, obs.receipts[delivery.ReceiptPartial].Load())
	require.EqualValues(t, 40+60, obs.receipts[delivery.ReceiptDuplicate].Load())
}

// countingObserver counts receipts by outcome and messages by status.
type countingObserver struct {
	delivery.NopObserver
	receipts [5]atomic.Int64
	mu       sync.Mutex
	messages map[string]int
}

func (o *countingObserver) Receipt(_ string, out delivery.ReceiptOutcome) { o.receipts[out].Add(1) }

func (o *countingObserver) Messages(ch messaging.Channel, st messaging.MessageStatus, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.messages == nil {
		o.messages = map[string]int{}
	}
	o.messages[string(ch)+"/"+string(st)] += n
}

// TestRecoverAtStart: messages left Sending by a dispatcher that died are
// sent again once their lease ended.
func TestRecoverAtStart(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(6, 600)})
	// A process claimed them a while ago and died.
	past := time.Now().Add(-time.Hour)
	claimed, err := s.ClaimDue(t.Context(), delivery.Claim{Channel: messaging.ChannelSMS, Now: time.Now(), LeaseUntil: past.Add(time.Minute), Limit: 4})
	require.NoError(t, err)
	require.Len(t, claimed, 4)

	sms := newFakeSMS()
	cfg := fastConfig(s)
	cfg.SMS = sms
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	run(t, d)
	got := w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
	require.Equal(t, messaging.StatusCounts{Sent: 6}, got.Counts)
	for i, m := range msgs {
		want := 1
		if i < 4 {
			want = 2
		}
		require.Equal(t, want, w.message(m.ID).Attempts, "message %d", i)
		require.Equal(t, 1, sms.callsTo(m.Phone))
	}
}

// blockingSMS holds every Send until released.
type blockingSMS struct {
	started chan string
	release chan struct{}
}

func (b *blockingSMS) Send(ctx context.Context, sms delivery.SMS) (delivery.SMSResult, error) {
	b.started <- sms.To
	select {
	case <-b.release:
		return delivery.SMSResult{PartIDs: []string{"id-" + sms.To}}, nil
	case <-ctx.Done():
		return delivery.SMSResult{}, fmt.Errorf("send: %w", ctx.Err())
	}
}

// TestDrain: when Run's context ends, the sends in flight finish and are
// recorded; sends that outlive the drain timeout are cancelled and their
// messages put back to Pending.
func TestDrain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		release  bool
		want     messaging.StatusCounts
		timeout  time.Duration
		attempts int
	}{
		{"finished", true, messaging.StatusCounts{Sent: 3}, time.Minute, 1},
		{"cancelled", false, messaging.StatusCounts{Pending: 3}, 10 * time.Millisecond, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New()
			w := newWorld(t, s)
			b := &blockingSMS{started: make(chan string, 3), release: make(chan struct{})}
			cfg := fastConfig(s)
			cfg.SMS = b
			cfg.DrainTimeout = tc.timeout
			d, err := delivery.New(cfg)
			require.NoError(t, err)
			c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(3, 700)})
			stop := run(t, d)
			for range 3 {
				<-b.started
			}
			stopped := make(chan struct{})
			go func() { stop(); close(stopped) }()
			if tc.release {
				close(b.release)
			}
			<-stopped
			got := w.get(c.ID)
			require.Equal(t, tc.want, got.Counts)
			for _, m := range msgs {
				require.Equal(t, tc.attempts, w.message(m.ID).Attempts)
			}
		})
	}
}

// TestObserver: the observer sees claims, results and in-flight counts.
func TestObserver(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	sms.outcome = func(m delivery.SMS, call int) (int, error) {
		if m.To[len(m.To)-1] == '0' && call == 1 {
			return 0, errThrottled
		}
		return 1, nil
	}
	cfg := fastConfig(s)
	cfg.SMS = sms
	obs := &countingObserver{}
	cfg.Observer = obs
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	c, _ := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(10, 800)})
	stop := run(t, d)
	w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
	stop()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Equal(t, map[string]int{"Smpp/Sending": 11, "Smpp/Pending": 1, "Smpp/Sent": 10}, obs.messages)
}

// TestObserverCountsEveryMove: every status a message moves to is counted
// once, also when its receipts came before its Sent was recorded (kept,
// then applied with the Sent) and when a second failed part of a long
// message decides its status again.
func TestObserverCountsEveryMove(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	sms.outcome = func(delivery.SMS, int) (int, error) { return 2, nil }
	var d *delivery.Dispatcher
	sms.receipts = func(m delivery.SMS, ids []string) {
		state := delivery.StateDelivered
		if strings.HasSuffix(m.To, "1") {
			state = delivery.StateUndeliverable
		}
		for _, id := range ids { // before Send returns: kept until the Sent is recorded
			require.NoError(t, d.HandleReceipt(context.Background(), delivery.Receipt{ProviderID: id, State: state, Err: "001", At: time.Now()}))
		}
	}
	cfg := fastConfig(s)
	cfg.SMS = sms
	obs := &countingObserver{}
	cfg.Observer = obs
	var err error
	d, err = delivery.New(cfg)
	require.NoError(t, err)
	c, _ := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(10, 900)})
	stop := run(t, d)
	got := w.waitCampaign(c.ID, "every receipt applied", func(c messaging.Campaign) bool {
		return c.Counts.Delivered+c.Counts.Failed == 10
	})
	require.Equal(t, messaging.StatusCounts{Delivered: 9, Failed: 1}, got.Counts)
	stop()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Equal(t, map[string]int{"Smpp/Sending": 10, "Smpp/Sent": 10, "Smpp/Delivered": 9, "Smpp/Failed": 1}, obs.messages)
}

// TestConfig: the required store and the lease/timeout relation.
func TestConfig(t *testing.T) {
	_, err := delivery.New(delivery.Config{})
	require.ErrorContains(t, err, "Store is required")
	_, err = delivery.New(delivery.Config{Store: memstore.New(), Lease: time.Second, SendTimeout: time.Minute})
	require.ErrorContains(t, err, "Lease must exceed")
	_, err = delivery.New(delivery.Config{Store: memstore.New(), ReceiptTimeout: 8 * 24 * time.Hour})
	require.ErrorContains(t, err, "ReceiptTimeout must be shorter than Config.ReceiptRetention")
	_, err = delivery.New(delivery.Config{Store: memstore.New(), ClaimLease: time.Second, HeartbeatInterval: 2 * time.Second})
	require.ErrorContains(t, err, "HeartbeatInterval must be shorter")
	d, err := delivery.New(delivery.Config{Store: memstore.New(), SMS: newFakeSMS()})
	require.NoError(t, err, "memstore reads campaigns: the directory defaults to it")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, d.Run(ctx))
	require.Error(t, d.Run(ctx), "Run runs once")
}

// concurrentStore is a store that asks for several results writers.
type concurrentStore struct {
	*memstore.Store
	n int
}

func (s concurrentStore) Features() delivery.Features {
	return delivery.Features{WriteConcurrency: s.n}
}

// TestWriters: the number of results writers comes from Config.Writers,
// else from the store; a send result goes to the writer of its first
// part's receipt, and results spread over every writer.
func TestWriters(t *testing.T) {
	d, err := delivery.New(delivery.Config{Store: memstore.New()})
	require.NoError(t, err)
	require.Equal(t, 1, delivery.Writers(d))
	d, err = delivery.New(delivery.Config{Store: concurrentStore{memstore.New(), 3}})
	require.NoError(t, err)
	require.Equal(t, 3, delivery.Writers(d))
	d, err = delivery.New(delivery.Config{Store: concurrentStore{memstore.New(), 3}, Writers: 4})
	require.NoError(t, err)
	require.Equal(t, 4, delivery.Writers(d))
	// A store that wraps another keeps its features: they are a method of
	// the port, not an interface found by assertion.
	d, err = delivery.New(delivery.Config{Store: &beatStore{Store: memstore.New()}})
	require.NoError(t, err)
	require.Equal(t, 1, delivery.Writers(d))
	pg := struct{ delivery.Store }{concurrentStore{memstore.New(), 2}}
	d, err = delivery.New(delivery.Config{Store: pg})
	require.NoError(t, err)
	require.Equal(t, 2, delivery.Writers(d), "a wrapper embedding the port forwards the store's features")

	ids := messaging.NewIDGenerator(nil)
	differs := 0
	for i := range 200 {
		u := &delivery.StatusUpdate{MessageID: ids.New(), Status: messaging.StatusSent,
			PartIDs: []string{fmt.Sprintf("p%d", i), fmt.Sprintf("q%d", i)}}
		require.True(t, delivery.SameWriter(d, u, u.PartIDs[0]), "part %s", u.PartIDs[0])
		if !delivery.SameWriter(d, u, fmt.Sprintf("p%d", i+1)) {
			differs++
		}
	}
	require.Greater(t, differs, 100, "results spread over the writers")
}

// TestReceiptTimeout: SMS whose receipts do not come within the receipt
// timeout stay Sent, with details naming the timeout, and leave the
// waiting count (Unconfirmed); a receipt that comes after all still
// settles its message.
func TestReceiptTimeout(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	cfg := fastConfig(s)
	cfg.SMS = sms
	cfg.ReceiptTimeout = 150 * time.Millisecond
	cfg.ReceiptSweepInterval = 10 * time.Millisecond
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	var lost sync.Map // receipts the SMSC never sends
	sms.receipts = func(m delivery.SMS, ids []string) {
		if m.To[len(m.To)-1]%2 == 1 {
			lost.Store(m.To, ids)
			return
		}
		receiptsFor(t, d.HandleReceipt)(m, ids)
	}
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(10, 10)})
	run(t, d)
	got := w.waitCampaign(c.ID, "receipts timed out", func(c messaging.Campaign) bool {
		return c.Status == messaging.CampaignCompleted && c.Counts.Unconfirmed == 5
	})
	require.Equal(t, messaging.StatusCounts{Sent: 5, Delivered: 5, Unconfirmed: 5}, got.Counts)
	require.Zero(t, got.Counts.Awaiting())
	for i, m := range msgs {
		got := w.message(m.ID)
		if i%2 == 1 {
			require.Equal(t, messaging.StatusSent, got.Status)
			require.Equal(t, delivery.ReceiptTimeoutDetails(150*time.Millisecond), got.Details)
		} else {
			require.Equal(t, messaging.StatusDelivered, got.Status)
		}
	}
	late, ok := lost.Load(msgs[1].Phone)
	require.True(t, ok)
	receiptsFor(t, d.HandleReceipt)(delivery.SMS{To: msgs[1].Phone}, late.([]string))
	got = w.waitCampaign(c.ID, "a late receipt settled its message", func(c messaging.Campaign) bool { return c.Counts.Delivered == 6 })
	require.Equal(t, messaging.StatusCounts{Sent: 4, Delivered: 6, Unconfirmed: 4}, got.Counts)
	drift, err := s.CheckCounters(t.Context())
	require.NoError(t, err)
	require.Empty(t, drift)
}

// beatStore fails heartbeats while failing is set, and counts recoveries.
type beatStore struct {
	*memstore.Store
	failing    atomic.Bool
	recoveries atomic.Int64
}

func (s *beatStore) Heartbeat(ctx context.Context, owner string, at time.Time) error {
	if s.failing.Load() {
		return errors.New("store unreachable")
	}
	return s.Store.Heartbeat(ctx, owner, at)
}

func (s *beatStore) RecoverClaims(ctx context.Context, r delivery.Recovery) (int, error) {
	s.recoveries.Add(1)
	return s.Store.RecoverClaims(ctx, r)
}

// TestHeartbeatOutage: a dispatcher whose own heartbeats cannot be written
// takes back no other process's claims for a late heartbeat (the others'
// are late for the same reason), and none of its own, and claims nothing
// (its claims would look ownerless to the others); once its heartbeats
// have been written for a claim lease, a dead process's claims come back
// and are sent.
func TestHeartbeatOutage(t *testing.T) {
	s := &beatStore{Store: memstore.New()}
	w := newWorld(t, s.Store)
	c, _ := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(20, 0)})
	past := time.Now().Add(-time.Hour)
	require.NoError(t, s.Heartbeat(t.Context(), "other", past))
	theirs, err := s.ClaimDue(t.Context(), delivery.Claim{Channel: messaging.ChannelSMS, Owner: "other", Now: time.Now(),
		LeaseUntil: time.Now().Add(time.Hour), Limit: 2})
	require.NoError(t, err)
	require.Len(t, theirs, 2)

	s.failing.Store(true)
	sms := newFakeSMS()
	cfg := fastConfig(s)
	cfg.SMS, cfg.Instance = sms, "self"
	cfg.ClaimLease, cfg.RecoverInterval = 300*time.Millisecond, 5*time.Millisecond
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	run(t, d)
	from := s.recoveries.Load()
	waitFor(t, "recoveries during the outage", func() bool { return s.recoveries.Load() >= from+20 })
	for _, m := range theirs {
		require.Equal(t, messaging.StatusSending, w.message(m.ID).Status, "not taken while this process cannot beat either")
	}
	require.Empty(t, sms.sends(), "nothing claimed without a heartbeat")

	s.failing.Store(false)
	got := w.waitCampaign(c.ID, "the dead process's claims taken back and sent", func(c messaging.Campaign) bool {
		return c.Counts.Sent == 20
	})
	require.Equal(t, messaging.StatusCounts{Sent: 20}, got.Counts)
	for _, m := range theirs {
		require.Equal(t, 2, w.message(m.ID).Attempts)
	}
}

// purgeCounter records what each PurgeReceipts call removed, and the
// heartbeats written meanwhile.
type purgeCounter struct {
	delivery.Store
	mu      sync.Mutex
	removed []int
	beatsAt []int64 // heartbeats written before each call
	beats   atomic.Int64
	slow    time.Duration // each purge batch takes this long
}

func (p *purgeCounter) PurgeReceipts(ctx context.Context, before time.Time, limit int) (int, error) {
	time.Sleep(p.slow)
	n, err := p.Store.PurgeReceipts(ctx, before, limit)
	p.mu.Lock()
	p.removed = append(p.removed, n)
	p.beatsAt = append(p.beatsAt, p.beats.Load())
	p.mu.Unlock()
	return n, err
}

func (p *purgeCounter) Heartbeat(ctx context.Context, owner string, at time.Time) error {
	p.beats.Add(1)
	return p.Store.Heartbeat(ctx, owner, at)
}

func (p *purgeCounter) calls() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.removed)
}

// TestReceiptPurgeInBatches: parts past the receipt retention are
// forgotten a batch at a time, batch after batch until none is left, and
// heartbeats go on while the purge works through its backlog.
func TestReceiptPurgeInBatches(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	var clock atomic.Int64 // how far the dispatcher's clock is ahead
	now := func() time.Time { return time.Now().Add(time.Duration(clock.Load())) }
	sms := newFakeSMS() // no receipts: every part stays recorded
	ps := &purgeCounter{Store: s, slow: 20 * time.Millisecond}
	cfg := fastConfig(ps)
	cfg.SMS = sms
	cfg.Now = now
	cfg.PurgeBatch = 5
	cfg.PurgeInterval = 50 * time.Millisecond
	cfg.HeartbeatInterval = 5 * time.Millisecond
	cfg.ReceiptRetention = 72 * time.Hour
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	c, _ := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(12, 0), text: func(int) string { return "hello" }})
	run(t, d)
	w.waitCampaign(c.ID, "every message Sent", func(c messaging.Campaign) bool { return c.Counts.Unsent() == 0 })
	require.Empty(t, slices.DeleteFunc(ps.calls(), func(n int) bool { return n == 0 }), "nothing is old enough yet")

	clock.Store(int64(73 * time.Hour))
	require.Eventually(t, func() bool {
		got := slices.DeleteFunc(ps.calls(), func(n int) bool { return n == 0 })
		return slices.Equal(got, []int{5, 5, 2})
	}, 5*time.Second, 5*time.Millisecond, "removed by batch: %v", ps.calls())
	// Heartbeats were written between the first batch and the last.
	ps.mu.Lock()
	var during []int64
	for i, n := range ps.removed {
		if n > 0 {
			during = append(during, ps.beatsAt[i])
		}
	}
	ps.mu.Unlock()
	require.Greater(t, during[len(during)-1], during[0], "heartbeats while purging")
	// A receipt of a forgotten part is kept, not applied.
	out, err := s.ApplyReceipts(t.Context(), []delivery.Receipt{{ProviderID: "P000001", State: delivery.StateDelivered, Err: "000", At: now()}}, now())
	require.NoError(t, err)
	require.Equal(t, []delivery.ReceiptOutcome{delivery.ReceiptQueued}, out)
}
