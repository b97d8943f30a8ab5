package smpp

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"go.opentelemetry.io/otel/trace"
)

// Addressing of submit_sm.
const (
	tonAlphanumeric  = 5
	npiUnknown       = 0
	tonInternational = 1
	npiISDN          = 1
	maxDestLen       = 20
	maxParts         = 255
)

// stableAfter is how long a session must stay up for the bind backoff to
// start again from its minimum.
const stableAfter = time.Minute

// Client is Config.Binds SMPP 3.4 sessions (one by default) with one
// SMSC, transceivers unless Config.BindType says otherwise. It implements
// delivery.SMSSender; its methods are safe for concurrent use.
type Client struct {
	cfg         Config
	log         *slog.Logger
	tracer      trace.Tracer  // nil without Config.Tracer
	spans       partSpans     // traced submits, for their receipts
	receipts    chan struct{} // receipt handlers running
	pace        *pacer        // paces submits at eff, first come first served
	validity    string        // validity_period of every submit_sm
	cfgValidity time.Duration // Config.ValidityPeriod
	addr        addressing
	seq         atomic.Uint32
	ref         atomic.Uint32

	ctx     context.Context // ends at Close: dials and backoff
	cancel  context.CancelFunc
	hctx    context.Context // receipt handlers: ends when Close gives up on them
	hcancel context.CancelFunc
	runDone chan struct{} // closed when every session's run has returned

	isClosed atomic.Bool // mirrors closed, for the receipt path

	mu        sync.Mutex
	sessions  []*session    // Config.Binds of them, for the Client's life
	nbound    int           // sessions bound now
	boundCh   chan struct{} // closed while nbound > 0
	closed    bool
	inUse     int         // submit_sm outstanding on every session: the window in use
	waiters   list.List   // of *waiter: parts waiting for a session with room, retries first
	nprio     int         // retries at the front of waiters
	roomTimer *time.Timer // grants the waiters when a session's rate has room again
	next      int         // the session a pick looks at first, so that ties go round
	maxRate   float64     // the cap: Config.MaxPerSecond, SetMaxPerSecond; 0: none
	eff       float64     // the rate pace runs at (effectiveLocked); 0: unlimited
	climbing  bool        // climb runs
	lastBind  TimedError
	lastLost  TimedError
	lastSub   TimedError

	n counters
}

type counters struct {
	binds, rebinds, bindFailures                atomic.Uint64
	submits, submitErrors, throttled, retries   atomic.Uint64
	receipts, receiptErrors, badReceipts, moMsg atomic.Uint64
}

// Stats are the Client's counters since New, all sessions together.
type Stats struct {
	Bound         bool   // at least one session is bound now
	Binds         uint64 // successful binds, the first of each session included
	Rebinds       uint64 // successful binds after a lost session
	BindFailures  uint64 // failed dials, TLS handshakes or refused binds
	Submits       uint64 // submit_sm written (one per part, retries included)
	SubmitErrors  uint64 // submit_sm that failed a Send: error status, timeout or lost connection
	Throttled     uint64 // submit_sm answered ESME_RTHROTTLED or ESME_RMSGQFUL (retried ones included)
	Retries       uint64 // throttled parts submitted again
	Receipts      uint64 // receipts the handler stored
	ReceiptErrors uint64 // receipts the handler refused (answered ESME_RX_T_APPN)
	BadReceipts   uint64 // receipts that could not be parsed (answered ESME_RX_P_APPN)
	MOMessages    uint64 // deliver_sm that were not receipts
	WindowInUse   int    // submit_sm outstanding now
	Window        int    // Config.Binds × Config.Window
	ReceiptsInUse int    // receipts being handled now
}

// New validates cfg and returns a Client whose sessions start binding at
// once, in the background; Send waits for one. Call Close to end it.
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{
		cfg:      cfg,
		log:      cfg.Logger.With("smsc", cfg.Addr),
		receipts: make(chan struct{}, cfg.ReceiptConcurrency),
		validity: relativeValidity(cfg.ValidityPeriod), cfgValidity: cfg.ValidityPeriod,
		addr:    cfg.addressing(),
		boundCh: make(chan struct{}),
		runDone: make(chan struct{}),
	}
	if cfg.Tracer != nil {
		c.tracer = cfg.Tracer.Tracer(tracerName)
	}
	c.ref.Store(rand.Uint32())
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.maxRate = capRate(cfg.MaxPerSecond)
	c.eff = c.maxRate
	c.pace = newPacer(c.eff)
	c.hctx, c.hcancel = context.WithCancel(context.Background())
	// Every session exists before the first runs: a running session reads
	// them all (the Client's rate is the sum of theirs).
	now := time.Now()
	for i := range cfg.Binds {
		s := &session{idx: i, log: c.log.With("session", i)}
		s.rate.start(c.maxRate, now)
		c.sessions = append(c.sessions, s)
	}
	var runs sync.WaitGroup
	for _, s := range c.sessions {
		runs.Go(func() { c.run(s) })
	}
	go func() { runs.Wait(); close(c.runDone) }()
	return c, nil
}

// Stats returns the Client's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	bound, inUse := c.nbound > 0, c.inUse
	c.mu.Unlock()
	return Stats{
		Bound:         bound,
		Binds:         c.n.binds.Load(),
		Rebinds:       c.n.rebinds.Load(),
		BindFailures:  c.n.bindFailures.Load(),
		Submits:       c.n.submits.Load(),
		SubmitErrors:  c.n.submitErrors.Load(),
		Throttled:     c.n.throttled.Load(),
		Retries:       c.n.retries.Load(),
		Receipts:      c.n.receipts.Load(),
		ReceiptErrors: c.n.receiptErrors.Load(),
		BadReceipts:   c.n.badReceipts.Load(),
		MOMessages:    c.n.moMsg.Load(),
		WindowInUse:   inUse,
		Window:        c.cfg.Binds * c.cfg.Window,
		ReceiptsInUse: len(c.receipts),
	}
}

// WaitBound waits until at least one session is bound, ctx ends or the
// Client is closed.
func (c *Client) WaitBound(ctx context.Context) error {
	for {
		c.mu.Lock()
		n, ch, closed := c.nbound, c.boundCh, c.closed
		c.mu.Unlock()
		if closed {
			return transientErr("client closed", ErrClosed)
		}
		if n > 0 {
			return nil
		}
		select {
		case <-ch:
		case <-c.ctx.Done():
		case <-ctx.Done():
			return fmt.Errorf("smpp: waiting for a bound session: %w", ctx.Err())
		}
	}
}

// WaitReady is WaitBound: it makes the Client a delivery.ReadyWaiter, so
// that a dispatcher claims no message while no session is bound.
func (c *Client) WaitReady(ctx context.Context) error { return c.WaitBound(ctx) }

// Close stops accepting Sends, waits (up to ctx) for the outstanding
// submit_sm of every session to be answered and for the receipts being
// handled to be stored and acknowledged, unbinds and closes the
// connections. Receipts arriving meanwhile are left unanswered for the
// SMSC to send again; handlers still running when ctx ends see their
// context cancelled.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.runDone
		return nil
	}
	c.closed = true
	c.isClosed.Store(true)
	c.mu.Unlock()
	c.cancel()

	var err error
	tick := time.NewTicker(2 * time.Millisecond)
drain:
	for len(c.receipts) > 0 || c.liveInUse() > 0 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			c.hcancel()
			c.mu.Lock()
			inUse := c.inUse
			c.mu.Unlock()
			err = fmt.Errorf("smpp: close: %d submits unanswered, %d receipts being handled: %w",
				inUse, len(c.receipts), ctx.Err())
			// handlers see their context end; wait for them to return,
			// and leave the unanswered submits to the unbind
			for len(c.receipts) > 0 {
				<-tick.C
			}
			break drain
		}
	}
	tick.Stop()
	c.hcancel()
	var unbinds sync.WaitGroup
	for _, cn := range c.boundConns() {
		unbinds.Go(func() { cn.unbind(ctx) })
	}
	unbinds.Wait()
	<-c.runDone
	return err
}

// nextSeq returns a sequence number in 1..0x7FFFFFFF.
func (c *Client) nextSeq() uint32 {
	for {
		if s := c.seq.Add(1) & 0x7FFFFFFF; s != 0 {
			return s
		}
	}
}

// part is one submit_sm of a text.
type part struct {
	payload []byte
	udh     pdu.UDH
}

// prepared is a text ready to submit.
type prepared struct {
	enc   data.Encoding
	parts []part
}

// prepare validates sms and encodes and splits its text.
func (c *Client) prepare(sms delivery.SMS) (prepared, error) {
	if n := utf8.RuneCountInString(sms.From); n == 0 || n > messaging.MaxSenderIDLen {
		return prepared{}, permanentErr(fmt.Sprintf("invalid sender %q: 1 to %d characters", sms.From, messaging.MaxSenderIDLen))
	}
	for i := 0; i < len(sms.From); i++ {
		if b := sms.From[i]; b < 0x20 || b > 0x7E {
			return prepared{}, permanentErr(fmt.Sprintf("invalid sender %q: printable ASCII only", sms.From))
		}
	}
	if len(sms.To) == 0 || len(sms.To) > maxDestLen {
		return prepared{}, permanentErr(fmt.Sprintf("invalid destination %q", sms.To))
	}
	for i := 0; i < len(sms.To); i++ {
		if sms.To[i] < '0' || sms.To[i] > '9' {
			return prepared{}, permanentErr(fmt.Sprintf("invalid destination %q: digits only", sms.To))
		}
	}
	if sms.Text == "" {
		return prepared{}, permanentErr("empty text")
	}
	seg := template.Segment(sms.Text)
	if seg.Segments > maxParts {
		return prepared{}, permanentErr(fmt.Sprintf("text too long: %d segments, at most %d", seg.Segments, maxParts))
	}
	p := prepared{enc: data.GSM7BIT, parts: make([]part, len(seg.Parts))}
	if seg.Encoding == template.EncodingUCS2 {
		p.enc = data.UCS2
	}
	ref := byte(c.ref.Add(1))
	for i, s := range seg.Parts {
		var payload []byte
		if p.enc == data.UCS2 {
			payload = template.EncodeUCS2(s)
		} else {
			b, err := template.EncodeGSM7(s)
			if err != nil {
				return prepared{}, permanentErr(err.Error())
			}
			payload = b
		}
		p.parts[i].payload = payload
		if len(seg.Parts) > 1 {
			p.parts[i].udh = pdu.UDH{pdu.NewIEConcatMessage(byte(len(seg.Parts)), byte(i+1), ref)}
		}
	}
	return p, nil
}

// relativeValidity is d in the relative time format of SMPP's
// validity_period ("YYMMDDhhmmss000R"), in whole seconds and at most 99
// days; "" (the SMSC's default) for zero or less.
func relativeValidity(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	secs := min(int64(d.Round(time.Second)/time.Second), 99*24*3600)
	secs = max(secs, 1)
	days, rest := secs/86400, secs%86400
	return fmt.Sprintf("0000%02d%02d%02d%02d000R", days, rest/3600, rest%3600/60, rest%60)
}

// submitFrame encodes the submit_sm of one part, with the validity period
// validity (relativeValidity; "" for none) and the addressing a.
func submitFrame(seq uint32, from, to string, enc data.Encoding, pt part, validity string, a addressing) ([]byte, error) {
	sm := pdu.NewSubmitSM().(*pdu.SubmitSM)
	sm.SetSequenceNumber(int32(seq))
	sm.ValidityPeriod = validity
	sm.SourceAddr = pdu.NewAddressWithTonNpi(a.srcTON, a.srcNPI)
	if err := sm.SourceAddr.SetAddress(from); err != nil {
		return nil, err
	}
	sm.DestAddr = pdu.NewAddressWithTonNpi(a.dstTON, a.dstNPI)
	if err := sm.DestAddr.SetAddress(to); err != nil {
		return nil, err
	}
	sm.RegisteredDelivery = data.SM_SMSC_RECEIPT_REQUESTED
	if err := sm.Message.SetMessageDataWithEncoding(pt.payload, enc); err != nil {
		return nil, err
	}
	if pt.udh != nil {
		sm.EsmClass |= data.SM_UDH_GSM
		sm.Message.SetUDH(pt.udh)
	}
	return smppwire.Encode(sm), nil
}

// Send submits sms, one submit_sm per part, and waits for the SMSC's
// answers; a part the SMSC throttles is submitted again while ctx leaves
// time for it. See the package documentation for the errors.
func (c *Client) Send(ctx context.Context, sms delivery.SMS) (res delivery.SMSResult, err error) {
	ctx, span := c.startSubmit(ctx, sms)
	var binds []int // the bind each part went over, when traced
	if span != nil {
		defer func() { c.endSubmit(span, res, binds, err) }()
	}
	p, err := c.prepare(sms)
	if err != nil {
		return delivery.SMSResult{}, err
	}
	subs := make([]*submit, 0, len(p.parts))
	var sendErr error
	for i, pt := range p.parts {
		var s *submit
		var err error
		if i == 0 && sms.Withdraw != nil {
			s, err = c.submitFirst(ctx, sms, p.enc, pt)
		} else {
			s, err = c.submitPart(ctx, sms, p.enc, pt, nil, nil)
		}
		if errors.Is(err, delivery.ErrWithdrawn) {
			return delivery.SMSResult{}, err
		}
		if err != nil {
			sendErr = err
			break
		}
		subs = append(subs, s)
		if span != nil {
			binds = append(binds, s.sess.idx)
		}
	}
	ids := make([]string, len(subs))
	var permanent, transient error
	for i, s := range subs {
		// A throttled part is worth another try while the text may still
		// go through whole.
		o, err := c.await(ctx, sms, p.enc, p.parts[i], s, sendErr == nil && permanent == nil)
		if err != nil {
			return delivery.SMSResult{}, err
		}
		if o.err != nil {
			if delivery.IsPermanent(o.err) {
				permanent = cmpOr(permanent, o.err)
			} else {
				transient = cmpOr(transient, o.err)
			}
		}
		ids[i] = o.id
	}
	switch {
	case permanent != nil:
		return delivery.SMSResult{}, permanent
	case sendErr != nil:
		return delivery.SMSResult{}, sendErr
	case transient != nil:
		return delivery.SMSResult{}, transient
	}
	return delivery.SMSResult{PartIDs: ids}, nil
}

// withdrawn reports whether the withdraw channel w (nil: never) is
// closed.
func withdrawn(w <-chan struct{}) bool {
	if w == nil {
		return false
	}
	select {
	case <-w:
		return true
	default:
		return false
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Why a throttled part is not submitted again.
var (
	// errNoTimeToRetry: its next try would come after its Send's deadline.
	errNoTimeToRetry = errors.New("throttled; no time left to submit the part again before the deadline")
	// errNotRetried: another part of its text failed already.
	errNotRetried = errors.New("throttled; not submitted again: another part failed")
)

// await waits for the outcome of part pt, submitted as s. Each time the
// SMSC throttles it (it was refused, not accepted), the part is submitted
// again after a pause (retryPause), ahead of the parts not submitted yet
// and on another session than the one that throttled it when one has
// room, as long as retry holds (the Send has not failed already) and ctx
// leaves time for the next try; else the throttled answer, wrapping why
// there is no other try, is the part's outcome. The error is ctx's end
// while a submit_sm_resp is awaited.
func (c *Client) await(ctx context.Context, sms delivery.SMS, enc data.Encoding, pt part, s *submit, retry bool) (outcome, error) {
	for tries := 1; ; tries++ {
		var o outcome
		select {
		case o = <-s.done:
		case <-ctx.Done():
			return outcome{}, fmt.Errorf("smpp: send %s: waiting for submit_sm_resp: %w", sms.MessageID, ctx.Err())
		}
		if !o.throttled || !retry {
			if o.throttled {
				return c.giveUp(o, errNotRetried), nil
			}
			return o, nil
		}
		pause := retryPause(tries)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= pause {
			return c.giveUp(o, errNoTimeToRetry), nil
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return c.giveUp(o, ctx.Err()), nil
		case <-c.ctx.Done():
			t.Stop()
			return c.giveUp(o, ErrClosed), nil
		}
		next, err := c.submitPart(ctx, sms, enc, pt, s.sess, nil)
		if err != nil {
			return c.giveUp(o, err), nil
		}
		c.n.retries.Add(1)
		s = next
	}
}

// giveUp makes the throttled outcome o the failure of its part, with
// cause as the reason why it is not submitted again.
func (c *Client) giveUp(o outcome, cause error) outcome {
	err := &delivery.SendError{Details: o.err.Error(), Err: cause}
	var se *delivery.SendError
	if errors.As(o.err, &se) {
		err.Permanent, err.Code, err.Details = se.Permanent, se.Code, se.Details
	}
	c.n.submitErrors.Add(1)
	c.note(&c.lastSub, err)
	return outcome{err: err}
}

// submitFirst submits the first part of an SMS that may be withdrawn
// (SMS.Withdraw): while it waits for its turn in the pacer or for a window
// slot, the withdrawal makes it give up (delivery.ErrWithdrawn), its place
// freed for the parts behind it. Once it is written, the SMS goes on
// whole: a concatenated message is not cut short.
func (c *Client) submitFirst(ctx context.Context, sms delivery.SMS, enc data.Encoding, pt part) (*submit, error) {
	select {
	case <-sms.Withdraw:
		return nil, fmt.Errorf("smpp: send %s: %w", sms.MessageID, delivery.ErrWithdrawn)
	default:
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-sms.Withdraw:
			cancel(delivery.ErrWithdrawn)
		case <-wctx.Done():
		}
	}()
	s, err := c.submitPart(wctx, sms, enc, pt, nil, sms.Withdraw)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(wctx), delivery.ErrWithdrawn) {
		return nil, fmt.Errorf("smpp: send %s: %w", sms.MessageID, delivery.ErrWithdrawn)
	}
	return s, err
}

// submitPart paces, takes a window slot on a bound session with room in
// its rate (see pick) and writes one part on it. A retry of a part the
// SMSC throttled on session throttledOn (nil for a first try) takes its
// turn before the parts that were not submitted yet, and goes to another
// session when one has room. A part with a withdraw channel (the first
// of an SMS that may be withdrawn) is not written once it is closed.
func (c *Client) submitPart(ctx context.Context, sms delivery.SMS, enc data.Encoding, pt part, throttledOn *session, withdraw <-chan struct{}) (*submit, error) {
	// The message's own validity (what is left of it) wins over the
	// configured one when shorter.
	validity := c.validity
	if sms.Validity > 0 && (c.cfgValidity <= 0 || sms.Validity < c.cfgValidity) {
		validity = relativeValidity(sms.Validity)
	}
	prio := throttledOn != nil
	for {
		ep, err := c.pace.wait(ctx, c.ctx.Done(), prio)
		if errors.Is(err, errPacerDone) {
			return nil, transientErr("client closed", ErrClosed)
		}
		if err != nil {
			return nil, fmt.Errorf("smpp: send %s: pacing: %w", sms.MessageID, err)
		}
		for {
			g, err := c.acquire(ctx, sms.MessageID, ep, prio, throttledOn)
			if errors.Is(err, errStaleTurn) {
				// The rate went down while the part waited for a
				// session: its turn was given at the old rate. Take one
				// at the new rate, before the parts that came later.
				prio = true
				break
			}
			if err != nil {
				return nil, err
			}
			cn := g.cn
			if withdrawn(withdraw) {
				c.unuse(cn)
				return nil, fmt.Errorf("smpp: send %s: %w", sms.MessageID, delivery.ErrWithdrawn)
			}
			s := &submit{seq: c.nextSeq(), sess: cn.sess, epoch: g.epoch, done: make(chan outcome, 1)}
			if c.tracer != nil {
				s.trace = trace.SpanContextFromContext(ctx)
			}
			frame, err := submitFrame(s.seq, sms.From, sms.To, enc, pt, validity, c.addr)
			if err != nil {
				c.unuse(cn)
				return nil, permanentErr(fmt.Sprintf("encode submit_sm: %v", err))
			}
			if !cn.submit(s, frame) {
				c.unuse(cn)
				continue // the session ended before the part was registered: use another
			}
			c.n.submits.Add(1)
			cn.sess.submits.Add(1)
			return s, nil
		}
	}
}
