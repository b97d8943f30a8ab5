package delivery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/messaging"
)

// lane claims and sends the messages of one channel. Its claimer loop
// claims a batch when enough of its concurrency is free and hands each
// claimed message to one of concurrency workers; the worker sends the
// message, hands the result to the update committer and waits for it to be
// stored before it frees its place. So at most concurrency messages of the
// lane are claimed and not recorded at any time.
type lane struct {
	d        *Dispatcher
	ch       messaging.Channel
	capacity int
	send     func(ctx context.Context, j job) (*StatusUpdate, string)
	ready    ReadyWaiter     // nil when the sender cannot tell
	limiter  SendLimiter     // nil when the sender sets no bound
	picker   ConnectorPicker // nil when the sender has one connector
	loads    connLoads       // the SMS in flight by connector (picker)
	wake     chan struct{}
	jobs     chan job

	mu       sync.Mutex
	inFlight int
	freed    chan struct{}  // signalled when places are freed
	procs    sync.WaitGroup // claimed messages not settled yet
}

// job is a claimed message with what its send needs.
type job struct {
	m      messaging.Message
	route  Route
	seq    int64
	batch  *sendBatch
	flight *flight // of its campaign: halted by a pause or a cancel
	conn   string  // the connector it was counted on (ConnectorPicker)
	full   bool    // its connector held its budget: back to Pending unsent
}

// sendBatch bounds the sends of one claim by Config.SendTimeout: one
// deadline for the batch rather than a timer per message.
type sendBatch struct {
	ctx    context.Context
	cancel context.CancelFunc
	left   atomic.Int32
	// claim is the span of the claim that took the batch's messages,
	// when it was sampled: the parent of sends outside a kept trace.
	claim trace.SpanContext
}

// done records that one send of the batch ended.
func (b *sendBatch) done() {
	if b.left.Add(-1) == 0 {
		b.cancel()
	}
}

// Results of a send, for Observer.Send.
const (
	resultSent   = "sent"
	resultRetry  = "retry"
	resultFailed = "failed"
	// resultWithdrawn: its campaign was paused or cancelled before it was
	// submitted.
	resultWithdrawn = "withdrawn"
	// resultDeferred: not sent, its connector holding its budget
	// (ConnectorPicker); Pending again at its due time.
	resultDeferred = "deferred"
)

func newLane(d *Dispatcher, ch messaging.Channel, capacity int, sender any, send func(context.Context, job) (*StatusUpdate, string)) *lane {
	ready, _ := sender.(ReadyWaiter)
	limiter, _ := sender.(SendLimiter)
	picker, _ := sender.(ConnectorPicker)
	return &lane{d: d, ch: ch, capacity: capacity, send: send, ready: ready, limiter: limiter, picker: picker, wake: make(chan struct{}, 1), freed: make(chan struct{}, 1),
		jobs: make(chan job, capacity)}
}

// waitReady waits until the lane's sender can send (ReadyWaiter); false
// when ctx ended. A sender that fails otherwise (closed) is waited for
// again after the poll interval.
func (l *lane) waitReady(ctx context.Context) bool {
	for l.ready != nil {
		err := l.ready.WaitReady(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		l.d.log.Warn("sender not ready; claiming waits", "channel", l.ch, "err", err)
		if !l.sleep(ctx) {
			return false
		}
	}
	return ctx.Err() == nil
}

// threshold is how many places must be free before the lane claims again
// while sends are in flight: half a batch, so that claims stay large.
func (l *lane) threshold() int {
	return max(1, min(l.d.cfg.BatchSize, l.capacity)/2)
}

// limit is how many messages the lane may have claimed and not recorded
// now: its capacity, or less while the sender bounds its sends
// (SendLimiter).
func (l *lane) limit() int {
	if l.limiter != nil {
		if n := l.limiter.SendLimit(); n > 0 {
			return min(n, l.capacity)
		}
	}
	return l.capacity
}

// reserve takes up to n free places and returns how many it took.
func (l *lane) reserve(n int) int {
	limit := l.limit()
	l.mu.Lock()
	defer l.mu.Unlock()
	n = max(0, min(n, limit-l.inFlight))
	l.inFlight += n
	l.d.obs.InFlight(l.ch, l.inFlight, l.capacity)
	return n
}

// release frees n places.
func (l *lane) release(n int) {
	if n == 0 {
		return
	}
	l.mu.Lock()
	l.inFlight -= n
	l.d.obs.InFlight(l.ch, l.inFlight, l.capacity)
	l.mu.Unlock()
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// waitFree waits until the lane may claim again; false when ctx ended.
// Besides the usual threshold, a capped company that may have messages
// waiting and has turns again (companyRates.wait) makes the lane claim
// with whatever places are free: its turns would otherwise be lost while
// other companies keep the lane busy.
func (l *lane) waitFree(ctx context.Context) bool {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		limit := l.limit()
		l.mu.Lock()
		free, busy := limit-l.inFlight, l.inFlight > 0
		l.mu.Unlock()
		if free >= min(l.threshold(), limit) || (!busy && free > 0) {
			return true
		}
		var turns <-chan time.Time
		if free > 0 {
			if w, ok := l.d.rates.wait(l.ch, l.d.cfg.Now()); ok {
				if w <= 0 {
					return true
				}
				if timer == nil {
					timer = time.NewTimer(w)
				} else {
					timer.Reset(w)
				}
				turns = timer.C
			}
		}
		select {
		case <-l.freed:
		case <-turns:
		case <-ctx.Done():
			return false
		}
	}
}

// sleep waits for the poll interval or a wake-up, or less when a capped
// company that may have messages waiting gets turns again sooner; false
// when ctx ended.
func (l *lane) sleep(ctx context.Context) bool {
	d := l.d.cfg.PollInterval
	if w, ok := l.d.rates.wait(l.ch, l.d.cfg.Now()); ok {
		d = min(d, max(w, time.Millisecond))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.wake:
	case <-ctx.Done():
		return false
	}
	return true
}

// run claims and starts sends until ctx ends; the sends run on sendCtx.
func (l *lane) run(ctx, sendCtx context.Context) {
	d := l.d
	for range l.capacity {
		go func() {
			for j := range l.jobs {
				l.process(j)
			}
		}()
	}
	// The workers end once the jobs handed to them are done; Run waits
	// for those (procs).
	defer close(l.jobs)
	op := "claim_" + map[messaging.Channel]string{messaging.ChannelSMS: "sms", messaging.ChannelChat: "chat"}[l.ch]
	idle := false
	// unknown holds the claims that failed: the store may have stored
	// them all the same (the connection dropped during the commit). Their
	// messages are taken back before the lane claims again; until then
	// nothing else would, this process being alive.
	var unknown []ClaimRef
	for {
		if idle && !l.sleep(ctx) || !idle && !l.waitFree(ctx) || !l.waitReady(ctx) {
			return
		}
		if !d.freshBeat(ctx) {
			// The heartbeat keeps the claim: without a fresh one,
			// another process could take the claim back at once.
			idle = true
			continue
		}
		if len(unknown) > 0 {
			if !l.takeBack(ctx, unknown) {
				idle = true
				continue
			}
			unknown = nil
		}
		want := l.reserve(d.cfg.BatchSize)
		if want == 0 {
			idle = false
			continue
		}
		now := d.cfg.Now()
		sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
		start := time.Now()
		quotas := d.rates.take(now)
		claim := d.flights.beginClaim()
		lease := d.leaseFor(now)
		claimed, err := d.store.ClaimDue(sctx, Claim{Channel: l.ch, Owner: d.cfg.Instance, Now: now, LeaseUntil: lease, Limit: want,
			Quotas: quotas, CampaignQuotas: l.loads.quotas(now)})
		cancel()
		d.rates.settle(l.ch, quotas, claimed)
		d.obs.Batch(op, len(claimed), time.Since(start), err)
		if err != nil {
			d.flights.endClaim(claim)
			l.release(want)
			unknown = append(unknown, ClaimRef{Owner: d.cfg.Instance, LeaseUntil: lease})
			if ctx.Err() == nil {
				d.log.Error("claiming due messages", "channel", l.ch, "err", err)
			}
			idle = true
			continue
		}
		l.release(want - len(claimed))
		idle = len(claimed) < want
		if len(claimed) == 0 {
			d.flights.endClaim(claim)
			continue
		}
		d.obs.Messages(l.ch, messaging.StatusSending, len(claimed))
		claimSpan := d.traceClaim(ctx, l.ch, start, claimed)
		// The claim committed: these messages are processed even when ctx
		// ended meanwhile.
		jobs := l.prepare(withClaim(sendCtx, claimSpan), claimed)
		if len(jobs) == 0 {
			d.flights.endClaim(claim)
			continue
		}
		b := &sendBatch{claim: claimSpan}
		b.ctx, b.cancel = context.WithTimeout(sendCtx, d.cfg.SendTimeout)
		b.left.Store(int32(len(jobs)))
		for _, j := range jobs {
			j.batch = b
			j.flight = d.flights.join(j.m.CampaignID, claim)
			l.place(&j, now)
			l.procs.Add(1)
			l.jobs <- j // never blocks: places were reserved
		}
		d.flights.endClaim(claim)
	}
}

// takeBack puts back to Pending the messages of claims whose outcome is
// unknown (Recovery.Unknown), counted as recovered; false when the store
// did not answer.
func (l *lane) takeBack(ctx context.Context, unknown []ClaimRef) bool {
	d := l.d
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	start := time.Now()
	n, err := d.store.RecoverClaims(sctx, Recovery{Now: d.cfg.Now(), Unknown: unknown})
	d.obs.Batch("recover", n, time.Since(start), err)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("taking back the messages of a failed claim", "channel", l.ch, "claims", len(unknown), "err", err)
		}
		return false
	}
	if n > 0 {
		d.log.Warn("messages of a claim that failed after it was stored put back to Pending", "channel", l.ch, "count", n)
	}
	return true
}

// place counts j on the connector its SMS goes through, when the sender
// tells (ConnectorPicker). An SMS whose connector holds its budget already
// is marked full: it goes back to Pending without being sent, and gives its
// place back at once. A campaign's first claim, before the lane knows its
// connector, may so take more than the room left without holding it.
func (l *lane) place(j *job, now time.Time) {
	if l.picker == nil {
		return
	}
	name, budget := l.picker.PickConnector(l.d.smsOf(*j))
	if name == "" {
		return
	}
	if !l.loads.take(j.m.CampaignID, name, budget, now) {
		j.full = true
		return
	}
	j.conn = name
}

// prepare finds the route of every claimed message (and, for chat, its
// sequence number). Messages that cannot be prepared are settled at once.
func (l *lane) prepare(ctx context.Context, claimed []messaging.Message) []job {
	d := l.d
	jobs := make([]job, 0, len(claimed))
	failed := map[messaging.ID]error{}
	for _, m := range claimed {
		if _, bad := failed[m.CampaignID]; bad {
			continue
		}
		if _, ok := d.routes.Get(m.CampaignID, d.cfg.Now()); ok {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
		r, err := d.cfg.Directory.Route(sctx, m.CompanyID, m.CampaignID)
		cancel()
		if err != nil {
			failed[m.CampaignID] = err
			continue
		}
		d.routes.Put(m.CampaignID, r, d.cfg.Now())
	}
	var seqs []int64
	if l.ch == messaging.ChannelChat {
		ids := make([]messaging.ID, len(claimed))
		for i, m := range claimed {
			ids[i] = m.ID
		}
		sctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
		start := time.Now()
		var err error
		seqs, err = d.store.ChatSeqs(sctx, ids)
		cancel()
		d.obs.Batch("chat_seqs", len(ids), time.Since(start), err)
		if err != nil {
			d.log.ErrorContext(ctx, "assigning chat sequence numbers", "err", err)
			for _, m := range claimed {
				l.settle(ctx, m, d.retry(m))
			}
			return nil
		}
	}
	for i, m := range claimed {
		if err := failed[m.CampaignID]; err != nil {
			if messaging.IsCode(err, messaging.NotFound) {
				l.settle(ctx, m, d.fail(m, "Campaign not found"))
			} else {
				d.log.ErrorContext(ctx, "reading a campaign's route", "campaign", m.CampaignID, "err", err)
				l.settle(ctx, m, d.retry(m))
			}
			continue
		}
		r, _ := d.routes.Get(m.CampaignID, d.cfg.Now())
		if exp := Expiry(&m, r); !exp.IsZero() && !d.cfg.Now().Before(exp) {
			// Its moment passed while it waited: it never reaches a
			// provider, and a chat message gets no fallback.
			l.settle(ctx, m, d.fail(m, messaging.DetailsExpired))
			continue
		}
		if r.Window != nil {
			if open, next := r.Window.Open(d.cfg.Now(), d.zoneOf(m.Phone, r)); !open {
				// Outside the window in the recipient's time: back to
				// Pending until it opens.
				l.settle(ctx, m, &StatusUpdate{MessageID: m.ID, Status: messaging.StatusPending, At: d.cfg.Now(), DueAt: next})
				continue
			}
		}
		j := job{m: m, route: r}
		if seqs != nil {
			j.seq = seqs[i]
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// settle records the outcome of a message that is not sent, and frees its
// place.
func (l *lane) settle(ctx context.Context, m messaging.Message, u *StatusUpdate) {
	l.procs.Add(1)
	go func() {
		defer l.procs.Done()
		defer l.release(1)
		l.record(ctx, m, u, nil)
	}()
}

// record hands u to the committer and waits until it is stored; queued,
// when not nil, is called once u is queued. ctx carries the trace of what
// is logged.
func (l *lane) record(ctx context.Context, m messaging.Message, u *StatusUpdate, queued func()) {
	if u == nil {
		if queued != nil {
			queued()
		}
		return
	}
	if _, err := l.d.writerOf(u).Do(context.Background(), result{update: u, ch: l.ch}, queued); err != nil {
		l.d.log.ErrorContext(ctx, "a send result was not recorded: the message stays Sending until its lease ends",
			"message", m.ID, "status", u.Status, "err", err)
	}
}

// process sends one message and records the result.
func (l *lane) process(j job) {
	defer l.procs.Done()
	defer l.release(1)
	start := time.Now()
	var u *StatusUpdate
	var result string
	// What is logged about the message carries its send's trace, else its
	// claim's.
	ctx := withClaim(j.batch.ctx, j.batch.claim)
	switch {
	case j.flight.isHalted():
		u, result = l.d.withdrawn(j)
	case j.full:
		u, result = l.d.deferred(j)
	default:
		sctx, span := l.d.startSend(j.batch.ctx, l.ch, &j.m, j.batch.claim)
		u, result = l.send(sctx, j)
		endSend(span, result)
		if span != nil {
			ctx = sctx
		}
	}
	l.d.flights.leave(j.m.CampaignID, j.flight)
	if j.conn != "" {
		l.loads.remove(j.conn)
	}
	j.batch.done()
	l.d.obs.Send(l.ch, time.Since(start), result)
	var queued func()
	if u != nil && len(u.PartIDs) > 0 {
		// Receipts of these parts that arrive meanwhile queue behind the
		// Sent, and so find their parts.
		done := l.d.parts.add(u.PartIDs)
		queued = func() { l.d.parts.remove(u.PartIDs, done) }
	}
	l.record(ctx, j.m, u, queued)
}

// smsOf is the SMS of job j: from the campaign's sender (its fallback
// sender for a fallback SMS; empty when none is approved).
func (d *Dispatcher) smsOf(j job) SMS {
	m := j.m
	from := j.route.SMSSender
	if m.IsFallback() {
		from = j.route.FallbackSender
	}
	sms := SMS{MessageID: m.ID, CompanyID: m.CompanyID, From: from, To: m.Phone, Text: m.Content}
	if j.flight != nil {
		sms.Withdraw = j.flight.halted
	}
	return sms
}

// sendSMS submits an SMS (or a fallback SMS) through the SMS port.
func (d *Dispatcher) sendSMS(ctx context.Context, j job) (*StatusUpdate, string) {
	m := j.m
	sms := d.smsOf(j)
	if sms.From == "" {
		return d.fail(m, "No approved SMS sender"), resultFailed
	}
	if exp := Expiry(&m, j.route); !exp.IsZero() {
		sms.Validity = max(time.Second, exp.Sub(d.cfg.Now()).Round(time.Second))
	}
	res, err := d.cfg.SMS.Send(ctx, sms)
	if err != nil {
		if isWithdrawn(err) {
			return d.withdrawn(j)
		}
		return d.failure(ctx, m, err)
	}
	u := &StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent, At: d.cfg.Now(), PartIDs: res.PartIDs, Route: res.Connector}
	if len(res.PartIDs) > 0 {
		u.ProviderMessageID = res.PartIDs[0]
	}
	return u, resultSent
}

// sendChat sends a chat message through the chat port. A permanent
// failure goes through Config.OnChatFailure.
func (d *Dispatcher) sendChat(ctx context.Context, j job) (*StatusUpdate, string) {
	m := j.m
	if j.route.ChatServiceID == 0 {
		return d.fail(m, "No chat service"), resultFailed
	}
	cm := ChatSend{MessageID: m.ID, CompanyID: m.CompanyID, ServiceID: j.route.ChatServiceID, Sender: j.route.ChatSender,
		To: m.Phone, Ref: j.seq, TTL: d.cfg.ChatTTL, Type: j.route.MessageType, Text: m.Content}
	if exp := Expiry(&m, j.route); !exp.IsZero() {
		// Providers take 30 s at least.
		left := max(MinChatTTL, exp.Sub(d.cfg.Now()).Round(time.Second))
		if cm.TTL <= 0 || left < cm.TTL {
			cm.TTL = left
		}
	}
	switch {
	case m.Config != nil:
		cm.Config = *m.Config
	case j.route.Config != nil:
		cm.Config = *j.route.Config
	}
	if !cm.Type.Valid() {
		cm.Type = messaging.TypeSimpleText
	}
	res, err := d.cfg.Chat.SendChat(ctx, cm)
	if err == nil {
		return &StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent, At: d.cfg.Now(), ProviderMessageID: res.ProviderID}, resultSent
	}
	var se *SendError
	if d.cfg.OnChatFailure != nil && errors.As(err, &se) && se.Permanent {
		hctx, cancel := context.WithTimeout(d.drainCtx(), d.cfg.StoreTimeout)
		handled, herr := d.cfg.OnChatFailure(hctx, m, se)
		cancel()
		switch {
		case herr != nil:
			d.log.ErrorContext(ctx, "handling a chat failure; the message will be sent again", "message", m.ID, "err", herr)
			return d.retry(m), resultRetry
		case handled:
			return nil, resultFailed
		}
	}
	return d.failure(ctx, m, err)
}

// failure is the update after a failed send: Failed when permanent or out
// of attempts, else Pending again after a backoff. ctx is the send's.
func (d *Dispatcher) failure(ctx context.Context, m messaging.Message, err error) (*StatusUpdate, string) {
	switch {
	case IsPermanent(err):
		return d.fail(m, failureDetails(err)), resultFailed
	case d.drainCtx().Err() != nil:
		// Run gave up draining: the send may or may not have reached the
		// provider; the message is sent again.
		return &StatusUpdate{MessageID: m.ID, Status: messaging.StatusPending, At: d.cfg.Now(), DueAt: d.cfg.Now()}, resultRetry
	case m.Attempts >= d.cfg.MaxAttempts:
		return d.fail(m, fmt.Sprintf("Gave up after %d attempts: %s", m.Attempts, failureDetails(err))), resultFailed
	}
	d.log.DebugContext(ctx, "send failed; retrying later", "message", m.ID, "channel", m.Channel, "attempt", m.Attempts, "err", err)
	u := d.retry(m)
	var se *SendError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		// The provider asked to wait: the retry waits at least that long.
		u.DueAt = later(u.DueAt, u.At.Add(se.RetryAfter))
	}
	return u, resultRetry
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// retry is the update putting m back to Pending after its backoff.
func (d *Dispatcher) retry(m messaging.Message) *StatusUpdate {
	now := d.cfg.Now()
	return &StatusUpdate{MessageID: m.ID, Status: messaging.StatusPending, At: now,
		DueAt: now.Add(d.cfg.RetryBackoff.Delay(m.Attempts))}
}

// fail is the update ending m Failed with details.
func (d *Dispatcher) fail(m messaging.Message, details string) *StatusUpdate {
	return &StatusUpdate{MessageID: m.ID, Status: messaging.StatusFailed, At: d.cfg.Now(), Details: details}
}

// maxDetails bounds the details stored on a failed message.
const maxDetails = 500

// failureDetails is the short reason stored for a failed send: the
// failure's details with its code ("USER_BLOCKED (8)"), or the error.
func failureDetails(err error) string {
	var s string
	var se *SendError
	switch {
	case !errors.As(err, &se):
		s = err.Error()
	case se.Details != "" && se.Code != "" && se.Code != se.Details:
		s = fmt.Sprintf("%s (%s)", se.Details, se.Code)
	case se.Details != "":
		s = se.Details
	case se.Code != "":
		s = se.Code
	default:
		s = err.Error()
	}
	if len(s) > maxDetails {
		cut := maxDetails
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// zoneOf is the zone of a recipient for route r's window: the window's
// own, else the one Config.Zones tells from the number, else UTC.
func (d *Dispatcher) zoneOf(phone string, r Route) *time.Location {
	if r.WindowZone != nil {
		return r.WindowZone
	}
	if d.cfg.Zones != nil {
		if loc := d.cfg.Zones.Location(phone); loc != nil {
			return loc
		}
	}
	return time.UTC
}
