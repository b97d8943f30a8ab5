package smscsim

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
)

// Binding types of a session.
const (
	bindNone = iota
	bindReceiver
	bindTransmitter
	bindTransceiver
)

// conn is one client connection: its reader runs in serve, its Writer in
// a goroutine of its own.
type conn struct {
	s    *Server
	nc   net.Conn
	w    *smppwire.Writer // Send(nil): flush, then close
	done chan struct{}
	once sync.Once

	dropMid atomic.Bool // DropMidWindow: close on the next submit_sm

	mu       sync.Mutex
	bindType int
	systemID string
	limiter  bindLimiter // Config.BindRate; nil: unlimited
	seq      uint32
	unacked  map[uint32]*receipt
	acked    []*receipt // Config.ResendAcked: to send again when the connection ends
	closed   bool

	releaseMu  sync.Mutex // one release at a time
	heldMu     sync.Mutex
	held       []heldReq // requests held by a stall, in arrival order
	heldKinds  Stall     // the kinds in held
	heldClosed bool      // the connection ended: hold nothing more
}

func newConn(s *Server, nc net.Conn) *conn {
	done := make(chan struct{})
	return &conn{
		s:       s,
		nc:      nc,
		w:       smppwire.NewWriter(nc, 4096, 10*time.Second, done),
		done:    done,
		unacked: map[uint32]*receipt{},
	}
}

func (cn *conn) binding() (int, string) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.bindType, cn.systemID
}

func (cn *conn) serve() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); cn.writeLoop() }()
	cn.readLoop()
	cn.shutdown()
	wg.Wait()
}

// shutdown closes the connection once; its unanswered receipts go back to
// the scheduler.
func (cn *conn) shutdown() {
	cn.once.Do(func() {
		close(cn.done)
		_ = cn.nc.Close()
		cn.mu.Lock()
		cn.closed = true
		unacked, acked := cn.unacked, cn.acked
		cn.unacked, cn.acked = nil, nil
		cn.mu.Unlock()
		due := time.Now().Add(cn.s.cfg.ResendDelay)
		for _, r := range unacked {
			cn.s.sched.add(r, due)
		}
		for _, r := range acked {
			again := &receipt{
				replayed: true, systemID: r.systemID, id: r.id,
				handset: r.handset, sender: r.sender, text: r.text, state: r.state,
			}
			cn.s.n.receiptsReplayed.Add(1)
			cn.s.sched.add(again, due)
		}
		cn.s.sched.wake()
	})
	cn.dropHeld()
}

// writeLoop runs the Writer; the connection ends when it stops on its
// own (a failed write, or a nil frame queued after a last response).
func (cn *conn) writeLoop() {
	if err := cn.w.Run(); err != nil {
		cn.shutdown()
	}
}

func (cn *conn) readLoop() {
	r := bufio.NewReaderSize(cn.nc, 64<<10)
	for {
		f, err := smppwire.ReadFrame(r)
		if err != nil || cn.ended() || cn.dropsOn(f) {
			// Frames still buffered when the connection ended are
			// never served.
			return
		}
		if !cn.hold(f) {
			cn.serveRequest(f)
		}
	}
}

// ended reports whether the connection was shut down.
func (cn *conn) ended() bool {
	select {
	case <-cn.done:
		return true
	default:
		return false
	}
}

// serveRequest answers one PDU the client sent.
func (cn *conn) serveRequest(f smppwire.Frame) {
	switch f.Header.CommandID {
	case data.BIND_TRANSCEIVER, data.BIND_TRANSMITTER, data.BIND_RECEIVER:
		cn.onBind(f)
	case data.ENQUIRE_LINK:
		cn.w.Send(smppwire.HeaderOnly(data.ENQUIRE_LINK_RESP, data.ESME_ROK, f.Seq()))
	case data.UNBIND:
		cn.w.Send(smppwire.HeaderOnly(data.UNBIND_RESP, data.ESME_ROK, f.Seq()))
		cn.w.Send(nil)
	case data.UNBIND_RESP:
		cn.w.Send(nil)
	case data.SUBMIT_SM:
		cn.onSubmit(f)
	case data.DELIVER_SM_RESP, data.GENERIC_NACK:
		cn.onReceiptResp(f.Seq(), f.Header.CommandStatus)
	case data.ENQUIRE_LINK_RESP:
	default:
		if uint32(f.Header.CommandID)&0x80000000 == 0 {
			cn.w.Send(smppwire.HeaderOnly(data.GENERIC_NACK, data.ESME_RINVCMDID, f.Seq()))
		}
	}
}

func (cn *conn) onBind(f smppwire.Frame) {
	s := cn.s
	respID := f.Header.CommandID | data.CommandIDType(-0x80000000)
	p, err := f.Decode()
	req, ok := p.(*pdu.BindRequest)
	status := data.ESME_ROK
	cn.mu.Lock()
	already := cn.bindType != bindNone
	cn.mu.Unlock()
	switch {
	case err != nil || !ok:
		status = data.ESME_RINVCMDLEN
	case already:
		status = data.ESME_RALYBND
	case !s.bindsRefusedUntil().IsZero():
		status = data.ESME_RBINDFAIL
	case s.cfg.SystemID != "" && req.SystemID != s.cfg.SystemID:
		status = data.ESME_RINVSYSID
	case s.cfg.Password != "" && req.Password != s.cfg.Password:
		status = data.ESME_RINVPASWD
	}
	bt := bindTransceiver
	switch f.Header.CommandID {
	case data.BIND_TRANSMITTER:
		bt = bindTransmitter
	case data.BIND_RECEIVER:
		bt = bindReceiver
	}
	if status == data.ESME_ROK && !s.claimBind(cn, bt, req.SystemID) {
		status = data.ESME_RBINDFAIL // Config.MaxBindsPerSystemID
	}
	if status != data.ESME_ROK {
		s.n.bindFailures.Add(1)
		s.log.Info("smscsim bind refused", "status", status.String(), "remote", cn.nc.RemoteAddr().String())
		cn.w.Send(smppwire.HeaderOnly(respID, status, f.Seq()))
		if !already {
			cn.w.Send(nil)
		}
		return
	}
	s.n.binds.Add(1)
	s.log.Info("smscsim bound", "system_id", req.SystemID, "type", f.Header.CommandID.String())
	cn.w.Send(smppwire.WithCString(respID, data.ESME_ROK, f.Seq(), s.cfg.ServerSystemID))
	s.sched.wake()
}

func (cn *conn) onSubmit(f smppwire.Frame) {
	s := cn.s
	bt, systemID := cn.binding()
	if bt != bindTransmitter && bt != bindTransceiver {
		cn.w.Send(smppwire.HeaderOnly(data.SUBMIT_SM_RESP, data.ESME_RINVBNDSTS, f.Seq()))
		return
	}
	p, err := f.Decode()
	sm, ok := p.(*pdu.SubmitSM)
	if err != nil || !ok {
		cn.w.Send(smppwire.HeaderOnly(data.SUBMIT_SM_RESP, data.ESME_RINVMSGLEN, f.Seq()))
		return
	}
	s.n.submits.Add(1)
	arrived := time.Now()
	at := arrived.UnixNano()
	s.n.firstSubmit.CompareAndSwap(0, at)
	s.n.lastSubmit.Store(at)
	fs := s.faults.Load()
	status := data.ESME_ROK
	if !cn.allowSubmit(arrived) {
		status = data.ESME_RTHROTTLED
		s.n.throttled.Add(1)
		s.n.rateLimited.Add(1)
	} else {
		k := fs.n.Add(1)
		if fs.DropAfter > 0 && k >= int64(fs.DropAfter) && fs.dropped.CompareAndSwap(false, true) {
			s.n.dropped.Add(1)
			s.log.Info("smscsim dropping the connection", "after_submits", k)
			cn.shutdown()
			return
		}
		switch {
		case fs.Status != 0:
			status = data.CommandStatusType(fs.Status)
			s.n.rejected.Add(1)
		case fs.throttle(k):
			status = data.ESME_RTHROTTLED
			s.n.throttled.Add(1)
		}
	}
	if status == data.ESME_ROK {
		s.n.accepted.Add(1)
	}
	s.perSec.add(arrived, status == data.ESME_ROK, status == data.ESME_RTHROTTLED)
	s.inFlight(1)
	now := s.cfg.Now()
	var id string
	var resp []byte
	if status == data.ESME_ROK {
		id = s.newID()
		resp = smppwire.WithCString(data.SUBMIT_SM_RESP, status, f.Seq(), id)
	} else {
		resp = smppwire.HeaderOnly(data.SUBMIT_SM_RESP, status, f.Seq())
	}
	if s.cfg.Record || s.cfg.OnSubmit != nil {
		p := partOf(sm, f.Seq(), systemID, id, uint32(status))
		if s.cfg.OnSubmit != nil {
			s.cfg.OnSubmit(p)
		}
		if s.cfg.Record {
			s.rec.add(p)
		}
	}
	var r *receipt
	if status == data.ESME_ROK {
		r = newReceipt(sm, id, systemID, now)
	}
	if d := fs.RespDelay; d > 0 {
		time.AfterFunc(d, func() {
			s.inFlight(-1) // before the response can reach the client
			sent := cn.w.Send(resp)
			if sent && r != nil {
				s.sched.add(r, time.Now().Add(s.cfg.ReceiptDelay))
				s.sched.wake()
			}
		})
		return
	}
	s.inFlight(-1)
	sent := cn.w.Send(resp)
	if sent && r != nil {
		s.sched.add(r, time.Now().Add(s.cfg.ReceiptDelay))
		s.sched.wake()
	}
}

// deliver writes receipt r on this session; false when it is closed or its
// receipt window is full.
func (cn *conn) deliver(r *receipt) bool {
	cn.mu.Lock()
	if cn.closed || len(cn.unacked) >= cn.s.cfg.ReceiptWindow {
		cn.mu.Unlock()
		return false
	}
	cn.seq++
	if cn.seq > 0x7FFFFFFF {
		cn.seq = 1
	}
	seq := cn.seq
	cn.unacked[seq] = r
	cn.mu.Unlock()
	if !cn.w.Send(r.frame(seq, !cn.s.cfg.OmitReceiptTLVs)) {
		return true // shutdown took it back from unacked
	}
	cn.s.n.receiptsSent.Add(1)
	return true
}

func (cn *conn) onReceiptResp(seq uint32, status data.CommandStatusType) {
	s := cn.s
	cn.mu.Lock()
	r, ok := cn.unacked[seq]
	if ok {
		delete(cn.unacked, seq)
		if status == data.ESME_ROK && s.cfg.ResendAcked && !r.replayed {
			cn.acked = append(cn.acked, r)
		}
	}
	cn.mu.Unlock()
	if !ok {
		return
	}
	if status == data.ESME_ROK {
		s.n.receiptsAcked.Add(1)
		s.sched.done()
	} else {
		s.n.receiptsRefused.Add(1)
		r.attempts++
		s.sched.add(r, time.Now().Add(s.cfg.ResendDelay))
	}
	s.sched.wake()
}

// outcomeOf chooses a receipt's outcome by the destination number.
func outcomeOf(dest string) (stat, errCode string, state byte) {
	switch {
	case strings.HasSuffix(dest, "0001"):
		return "UNDELIV", "001", data.SM_STATE_UNDELIVERABLE
	case strings.HasSuffix(dest, "0002"):
		return "EXPIRED", "002", data.SM_STATE_EXPIRED
	case strings.HasSuffix(dest, "0003"):
		return "REJECTD", "003", data.SM_STATE_REJECTED
	}
	return "DELIVRD", "000", data.SM_STATE_DELIVERED
}
