package smpp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
	"go.opentelemetry.io/otel/trace"
)

var (
	errUnbound           = errors.New("SMSC unbound the session")
	errEnquireUnanswered = errors.New("enquire_link unanswered")
)

// submit is one outstanding submit_sm.
type submit struct {
	seq   uint32
	sess  *session // the session it went on
	epoch uint64   // the session's rate epoch when it took its slot
	sent  time.Time
	done  chan outcome // buffered: receives exactly one outcome
	// trace is the span of its traced Send, kept for the part's receipt
	// (invalid when untraced).
	trace trace.SpanContext
}

// outcome is the end of a submit_sm: the SMSC's message id or an error.
type outcome struct {
	id        string
	err       error
	throttled bool // err is ESME_RTHROTTLED or ESME_RMSGQFUL: the part may be submitted again
}

// answerOutcome is the outcome of a submit_sm answered with status st
// and, for ESME_ROK, message id id.
func (c *Client) answerOutcome(st data.CommandStatusType, id string) outcome {
	if st == data.ESME_ROK {
		return outcome{id: c.cfg.SubmitIDFormat.Canonical(id)}
	}
	return outcome{err: StatusError(uint32(st)), throttled: throttleStatus(st)}
}

// conn is one bound connection of a session. Its reader runs in serve;
// its Writer runs in a goroutine of its own; a ticker goroutine sends
// enquire_link and expires unanswered submits.
type conn struct {
	c    *Client
	sess *session
	nc   net.Conn // the TLS connection over raw, or raw
	raw  net.Conn // the TCP connection
	r    *bufio.Reader
	w    *smppwire.Writer // Send(nil): flush, then close
	done chan struct{}

	stopOnce sync.Once
	cause    error
	wg       sync.WaitGroup

	mu      sync.Mutex
	pending map[uint32]*submit
	closed  bool

	inUse int // window slots taken on it; guarded by Client.mu

	enquireSeq atomic.Uint32 // the unanswered enquire_link, 0 when none
	unbindOnce sync.Once
	unbound    chan struct{} // closed when unbind_resp arrived
}

// dial connects to the SMSC for session s, over TLS when Config.TLS is
// set, and binds as Config.BindType says.
func (c *Client) dial(ctx context.Context, s *session) (*conn, error) {
	d := net.Dialer{Timeout: c.cfg.BindTimeout, KeepAlive: 30 * time.Second}
	raw, err := d.DialContext(ctx, "tcp", c.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	defer stop()
	fail := func(what string, err error) (*conn, error) {
		_ = raw.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	_ = raw.SetDeadline(time.Now().Add(c.cfg.BindTimeout))
	nc := raw
	if c.cfg.TLS != nil {
		tc := tls.Client(raw, c.cfg.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail("TLS handshake", err)
		}
		nc = tc
	}
	bt, respID, name := pdu.Transceiver, data.BIND_TRANSCEIVER_RESP, "bind_transceiver"
	if c.cfg.BindType == BindTransmitter {
		bt, respID, name = pdu.Transmitter, data.BIND_TRANSMITTER_RESP, "bind_transmitter"
	}
	req := pdu.NewBindRequest(bt)
	req.SystemID, req.Password, req.SystemType = c.cfg.SystemID, c.cfg.Password, c.cfg.SystemType
	req.SetSequenceNumber(int32(c.nextSeq()))
	if _, err := nc.Write(smppwire.Encode(req)); err != nil {
		return fail("write "+name, err)
	}
	r := bufio.NewReaderSize(nc, 64<<10)
	for {
		f, err := smppwire.ReadFrame(r)
		if err != nil {
			return fail("read "+name+"_resp", err)
		}
		switch f.Header.CommandID {
		case respID, data.GENERIC_NACK:
			if f.Header.CommandStatus != data.ESME_ROK {
				return fail("bind refused", errors.New(StatusError(uint32(f.Header.CommandStatus)).Details))
			}
			if f.Header.CommandID == data.GENERIC_NACK {
				return fail("bind refused", errors.New("generic_nack"))
			}
			_ = raw.SetDeadline(time.Time{})
			return c.newConn(s, nc, raw, r), nil
		case data.ENQUIRE_LINK:
			if _, err := nc.Write(smppwire.HeaderOnly(data.ENQUIRE_LINK_RESP, data.ESME_ROK, f.Seq())); err != nil {
				return fail("write enquire_link_resp", err)
			}
		}
	}
}

func (c *Client) newConn(s *session, nc, raw net.Conn, r *bufio.Reader) *conn {
	done := make(chan struct{})
	return &conn{
		c:       c,
		sess:    s,
		nc:      nc,
		raw:     raw,
		r:       r,
		w:       smppwire.NewWriter(nc, c.cfg.Window+c.cfg.ReceiptConcurrency+16, c.cfg.BindTimeout, done),
		done:    done,
		pending: make(map[uint32]*submit, c.cfg.Window),
		unbound: make(chan struct{}),
	}
}

// ended reports whether the connection has ended.
func (cn *conn) ended() bool {
	select {
	case <-cn.done:
		return true
	default:
		return false
	}
}

// serve runs the session until the connection ends and returns why.
// Every submit still outstanding then fails with ErrConnectionLost.
func (cn *conn) serve() error {
	cn.wg.Add(2)
	go func() { defer cn.wg.Done(); cn.writeLoop() }()
	go func() { defer cn.wg.Done(); cn.tickLoop() }()
	cn.shutdown(cn.readLoop())
	cn.wg.Wait()
	return cn.cause
}

// shutdown ends the connection once: it is closed (the TCP connection
// under TLS, so that no close_notify waits on a stuck peer) and the
// outstanding submits fail.
func (cn *conn) shutdown(cause error) {
	cn.stopOnce.Do(func() {
		cn.cause = cause
		close(cn.done)
		_ = cn.raw.Close()
		cn.mu.Lock()
		cn.closed = true
		pending := cn.pending
		cn.pending = nil
		cn.mu.Unlock()
		for _, s := range pending {
			cn.settle(s, outcome{err: transientErr("connection lost", ErrConnectionLost)})
		}
	})
}

// settle releases the window slot of a submit taken out of pending and
// hands it its outcome. An accepted or throttled one tells the session's
// rate; a throttled one is not (yet) a failure: Send gives up on it or
// submits it again.
func (cn *conn) settle(s *submit, o outcome) {
	c := cn.c
	switch {
	case o.err == nil:
	case o.throttled:
		c.n.throttled.Add(1)
	default:
		c.n.submitErrors.Add(1)
	}
	c.settled(cn, s, o)
	s.done <- o
}

// submit registers s and queues its frame; false when the session has
// already ended (nothing was sent).
func (cn *conn) submit(s *submit, frame []byte) bool {
	cn.mu.Lock()
	if cn.closed {
		cn.mu.Unlock()
		return false
	}
	s.sent = time.Now()
	cn.pending[s.seq] = s
	cn.mu.Unlock()
	cn.w.Send(frame) // when the session ends meanwhile, shutdown fails s
	return true
}

// finish ends the outstanding submit seq; false when there is none (it
// expired, or the SMSC answered a sequence number it was never sent).
func (cn *conn) finish(seq uint32, o outcome) bool {
	cn.mu.Lock()
	s, ok := cn.pending[seq]
	if ok {
		delete(cn.pending, seq)
	}
	cn.mu.Unlock()
	if ok && o.err == nil && s.trace.IsValid() {
		// Kept before the reader reads on: the receipt may come next.
		cn.c.spans.add(s.trace, o.id)
	}
	if ok {
		cn.settle(s, o)
	}
	return ok
}

// expire fails the submits unanswered for SubmitTimeout.
func (cn *conn) expire(now time.Time) {
	limit := now.Add(-cn.c.cfg.SubmitTimeout)
	var late []*submit
	cn.mu.Lock()
	for seq, s := range cn.pending {
		if !s.sent.After(limit) {
			late = append(late, s)
			delete(cn.pending, seq)
		}
	}
	cn.mu.Unlock()
	for _, s := range late {
		cn.settle(s, outcome{err: transientErr("no submit_sm_resp in time", ErrSubmitTimeout)})
	}
}

// writeLoop runs the Writer and ends the session when it stops: a nil
// frame (queued after unbind_resp) closes the connection once what came
// before it is flushed.
func (cn *conn) writeLoop() {
	switch err := cn.w.Run(); {
	case errors.Is(err, smppwire.ErrCloseRequested):
		cn.shutdown(errUnbound)
	case err != nil:
		cn.shutdown(err)
	}
}

func (cn *conn) tickLoop() {
	el := time.NewTicker(cn.c.cfg.EnquireLink)
	defer el.Stop()
	reap := time.NewTicker(min(max(cn.c.cfg.SubmitTimeout/10, 5*time.Millisecond), time.Second))
	defer reap.Stop()
	for {
		select {
		case <-cn.done:
			return
		case <-el.C:
			if cn.enquireSeq.Load() != 0 {
				cn.shutdown(errEnquireUnanswered)
				return
			}
			seq := cn.c.nextSeq()
			cn.enquireSeq.Store(seq)
			cn.w.Send(smppwire.HeaderOnly(data.ENQUIRE_LINK, data.ESME_ROK, seq))
		case now := <-reap.C:
			cn.expire(now)
		}
	}
}

func (cn *conn) readLoop() error {
	for {
		f, err := smppwire.ReadFrame(cn.r)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		seq := f.Seq()
		switch f.Header.CommandID {
		case data.SUBMIT_SM_RESP:
			cn.onSubmitResp(f)
		case data.DELIVER_SM:
			cn.onDeliver(f)
		case data.ENQUIRE_LINK:
			cn.w.Send(smppwire.HeaderOnly(data.ENQUIRE_LINK_RESP, data.ESME_ROK, seq))
		case data.ENQUIRE_LINK_RESP:
			cn.enquireSeq.CompareAndSwap(seq, 0)
		case data.UNBIND:
			cn.w.Send(smppwire.HeaderOnly(data.UNBIND_RESP, data.ESME_ROK, seq))
			cn.w.Send(nil)
		case data.UNBIND_RESP:
			cn.unbindOnce.Do(func() { close(cn.unbound) })
		case data.GENERIC_NACK:
			st := f.Header.CommandStatus
			if !cn.finish(seq, outcome{err: StatusError(uint32(st)), throttled: throttleStatus(st)}) {
				cn.c.log.Warn("smpp generic_nack", "seq", seq, "status", st.String())
			}
		case data.ALERT_NOTIFICATION:
			// has no response; nothing to do
		default:
			if uint32(f.Header.CommandID)&0x80000000 == 0 {
				// a request this client does not serve
				cn.w.Send(smppwire.HeaderOnly(data.GENERIC_NACK, data.ESME_RINVCMDID, seq))
			}
		}
	}
}

func (cn *conn) onSubmitResp(f smppwire.Frame) {
	seq := f.Seq()
	var id string
	if f.Header.CommandStatus == data.ESME_ROK {
		id = f.CString()
	}
	if !cn.finish(seq, cn.c.answerOutcome(f.Header.CommandStatus, id)) {
		cn.c.log.Debug("smpp submit_sm_resp for no outstanding submit", "seq", seq, "status", f.Header.CommandStatus.String())
	}
}

// onDeliver hands a deliver_sm to a handler goroutine, waiting while
// ReceiptConcurrency are running. The deliver_sm_resp goes out when the
// handler is done. Once the Client is closing, deliver_sm are left
// unanswered for the SMSC to deliver again.
func (cn *conn) onDeliver(f smppwire.Frame) {
	c := cn.c
	seq := f.Seq()
	p, err := f.Decode()
	d, ok := p.(*pdu.DeliverSM)
	if err != nil || !ok {
		c.n.badReceipts.Add(1)
		c.log.Error("smpp undecodable deliver_sm", "err", err)
		cn.w.Send(smppwire.WithCString(data.DELIVER_SM_RESP, data.ESME_RX_P_APPN, seq, ""))
		return
	}
	if c.isClosed.Load() {
		return
	}
	select {
	case c.receipts <- struct{}{}:
	case <-cn.done:
		return
	}
	go func() {
		defer func() { <-c.receipts }()
		st := c.handleDeliver(d)
		cn.w.Send(smppwire.WithCString(data.DELIVER_SM_RESP, st, seq, ""))
	}()
}

// handleDeliver stores a receipt and tells the status to answer.
func (c *Client) handleDeliver(d *pdu.DeliverSM) data.CommandStatusType {
	if !isReceipt(d.EsmClass) {
		return c.handleInbound(d)
	}
	r, err := receiptOf(d, c.cfg.ReceiptLocation, c.cfg.Now(), c.cfg.SubmitIDFormat, c.cfg.ReceiptIDFormat)
	if err != nil {
		c.n.badReceipts.Add(1)
		c.log.Error("smpp unreadable receipt", "err", err)
		return data.ESME_RX_P_APPN
	}
	if c.cfg.ReceiptHandler == nil {
		c.n.receipts.Add(1)
		return data.ESME_ROK
	}
	ctx, cancel := context.WithTimeout(c.hctx, c.cfg.ReceiptTimeout)
	defer cancel()
	ctx, span := c.startReceipt(ctx, r)
	if span != nil {
		defer span.End()
	}
	if err := c.cfg.ReceiptHandler(ctx, r); err != nil {
		c.n.receiptErrors.Add(1)
		c.log.WarnContext(ctx, "smpp receipt not stored; the SMSC will send it again", "provider_id", r.ProviderID, "state", r.State, "err", err)
		return data.ESME_RX_T_APPN
	}
	c.n.receipts.Add(1)
	return data.ESME_ROK
}

// handleInbound hands a mobile-originated part to the InboundHandler and
// tells the status to answer. The log carries neither the text nor the
// whole number: both are personal data.
func (c *Client) handleInbound(d *pdu.DeliverSM) data.CommandStatusType {
	p := inboundOf(d, c.cfg.Now())
	if c.cfg.InboundHandler == nil {
		c.n.moMsg.Add(1)
		c.log.Debug("smpp mobile-originated part dropped: no handler", "to", p.To)
		return data.ESME_ROK
	}
	ctx, cancel := context.WithTimeout(c.hctx, c.cfg.ReceiptTimeout)
	defer cancel()
	ctx, span := c.startInbound(ctx, p)
	err := c.cfg.InboundHandler(ctx, p)
	endInbound(span, err)
	if err != nil {
		c.log.WarnContext(ctx, "smpp mobile-originated part not stored; the SMSC will send it again", "to", p.To, "err", err)
		return data.ESME_RX_T_APPN
	}
	c.n.moMsg.Add(1)
	return data.ESME_ROK
}

// unbind ends the session politely: unbind, wait for unbind_resp (up to
// ctx or BindTimeout), close.
func (cn *conn) unbind(ctx context.Context) {
	if cn.w.Send(smppwire.HeaderOnly(data.UNBIND, data.ESME_ROK, cn.c.nextSeq())) {
		t := time.NewTimer(cn.c.cfg.BindTimeout)
		defer t.Stop()
		select {
		case <-cn.unbound:
		case <-cn.done:
		case <-ctx.Done():
		case <-t.C:
		}
	}
	cn.shutdown(ErrClosed)
}
