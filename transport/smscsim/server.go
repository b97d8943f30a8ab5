package smscsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Server. Every zero value is a usable default.
type Config struct {
	// SystemID and Password, when set, must match those of every bind.
	SystemID string
	Password string
	// ServerSystemID is the system_id answered in bind responses. Default
	// "herald-smsc".
	ServerSystemID string
	// MaxBindsPerSystemID, when above 0, is the most sessions bound at
	// once with one system_id: a bind beyond it is answered
	// ESME_RBINDFAIL and its connection closed. Default 0: unlimited.
	MaxBindsPerSystemID int
	// BindRate, when above 0, is the most submit_sm per second each
	// session may send: by default a token bucket per session, holding a
	// tenth of a second's worth (at least one) and full at bind (see
	// BindLimit for the others). A submit_sm beyond
	// it is answered ESME_RTHROTTLED and not accepted (no message id, no
	// receipt; Record keeps the part with its status, as for other
	// refusals), and it does not count in Faults' counts. Default 0:
	// unlimited.
	BindRate float64
	// BindLimit is how BindRate counts: a token bucket (the default), or
	// fixed or sliding windows of a second, as other SMSCs count.
	BindLimit BindLimit

	// ReceiptDelay is the time between a submit_sm_resp and its receipt.
	// Default 0: right after the response.
	ReceiptDelay time.Duration
	// ResendDelay is the wait before a receipt refused by the client (or
	// left unanswered by a lost connection) is sent again. Default 200ms.
	ResendDelay time.Duration
	// ResendAcked makes the Server a buggy SMSC that sends receipts again
	// after a client acknowledged them: when a connection ends, every
	// receipt acknowledged on it is sent again (once) after ResendDelay,
	// to the next session bound with its system_id. Receipts left
	// unacknowledged are sent again whatever this says. It keeps every
	// receipt acknowledged on a connection until the connection ends.
	ResendAcked bool
	// ReceiptWindow is the most deliver_sm unanswered on one connection.
	// Default 1000.
	ReceiptWindow int
	// OmitReceiptTLVs leaves receipted_message_id and message_state out of
	// receipts, so that clients must read the text.
	OmitReceiptTLVs bool

	// Faults are the faults injected from the start (see SetFaults).
	Faults Faults
	// Stall is stalled from the start (see Server.Stall).
	Stall Stall
	// Record keeps every part received and every reassembled text for
	// Parts and Messages. Leave it off for long runs: it grows without
	// bound.
	Record bool

	// OnSubmit, when set, is called with every submit_sm the Server
	// answers (MessageID "" when it refused it), before the answer is
	// written, on the connection's reader goroutine: keep it short. A
	// program running the simulator can log each one there, so that what
	// the SMSC accepted survives the simulator's own restarts.
	OnSubmit func(Part)
	// Logger receives connection events. Default: discard.
	Logger *slog.Logger
	// Now gives the dates written in receipts. Default time.Now.
	Now func() time.Time
}

// Faults are the misbehaviours a Server injects. Counts start from the
// moment the faults are set.
type Faults struct {
	// ThrottleEvery answers ESME_RTHROTTLED to every Nth submit_sm.
	ThrottleEvery int
	// ThrottleFraction answers ESME_RTHROTTLED to this fraction (0 to 1) of
	// submit_sm, evenly spread: the kth is throttled when
	// floor(k*f) > floor((k-1)*f).
	ThrottleFraction float64
	// Status, when not 0, answers every submit_sm with this command_status
	// (ESME_RINVDSTADR 0x0B, for instance).
	Status uint32
	// RespDelay delays every submit_sm_resp.
	RespDelay time.Duration
	// DropAfter closes the connection that carries the Nth submit_sm,
	// without answering it nor any submit_sm still waiting for its delayed
	// response. It happens once. (DropMidWindow drops every connection
	// open, each on its next submit_sm.)
	DropAfter int
}

// faultState is a Faults with its own submit count.
type faultState struct {
	Faults
	n       atomic.Int64
	dropped atomic.Bool
}

// throttle reports whether the kth submit_sm (from 1) is throttled.
func (f *faultState) throttle(k int64) bool {
	if f.ThrottleEvery > 0 && k%int64(f.ThrottleEvery) == 0 {
		return true
	}
	if p := f.ThrottleFraction; p > 0 {
		return int64(float64(k)*p) > int64(float64(k-1)*p)
	}
	return false
}

// Stats are a Server's counters since New.
type Stats struct {
	Connections      int    // open now
	Binds            uint64 // successful binds
	BindFailures     uint64 // refused binds
	Submits          uint64 // submit_sm received and answered (or dropped by Faults.DropAfter)
	Accepted         uint64 // answered ESME_ROK
	Throttled        uint64 // answered ESME_RTHROTTLED, for Config.BindRate or by Faults
	RateLimited      uint64 // answered ESME_RTHROTTLED for Config.BindRate
	Rejected         uint64 // answered with Faults.Status
	Dropped          uint64 // connections closed by Faults.DropAfter, DropMidWindow or DropConnections
	InFlight         int    // submit_sm received and not answered yet, held ones included
	Held             int    // requests held unanswered by a stall now
	Stalled          Stall  // what is stalled now
	MaxInFlight      int    // the most InFlight ever was
	ReceiptsSent     uint64 // deliver_sm receipts written, resends included
	ReceiptsAcked    uint64 // receipts answered ESME_ROK
	ReceiptsRefused  uint64 // receipts answered otherwise (then sent again)
	ReceiptsReplayed uint64 // acknowledged receipts scheduled again (Config.ResendAcked)
	ReceiptsPending  int    // receipts scheduled or unanswered
	// FirstSubmit and LastSubmit are when the first and the latest
	// submit_sm arrived (zero: none yet): Submits over the time between
	// them is the rate the SMSC saw (SubmitsPerSecond tells it second by
	// second).
	FirstSubmit, LastSubmit time.Time
	// BindsRefusedUntil is the end of the RefuseBinds period; zero when
	// binds are not refused now.
	BindsRefusedUntil time.Time
}

// Server is an SMPP 3.4 SMSC simulator. Its methods are safe for
// concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	l      net.Listener
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup

	faults  atomic.Pointer[faultState]
	stalled atomic.Uint32 // a Stall
	ids     atomic.Uint64
	moRef   atomic.Uint32 // the last concatenation reference of SendMO

	refuseBindsUntil atomic.Int64 // UnixNano; 0: binds are not refused

	sched  scheduler
	rec    recorder
	perSec perSecond

	n struct {
		binds, bindFailures, submits, throttled, rejected, dropped     atomic.Uint64
		accepted, rateLimited                                          atomic.Uint64
		receiptsSent, receiptsAcked, receiptsRefused, receiptsReplayed atomic.Uint64
		inFlight, maxInFlight, held                                    atomic.Int64
		firstSubmit, lastSubmit                                        atomic.Int64 // UnixNano; 0: none yet
	}
}

// New returns a Server; it serves once Serve, Start or ListenAndServe is
// called.
func New(cfg Config) *Server {
	if cfg.ServerSystemID == "" {
		cfg.ServerSystemID = "herald-smsc"
	}
	if cfg.ResendDelay <= 0 {
		cfg.ResendDelay = 200 * time.Millisecond
	}
	if cfg.ReceiptWindow <= 0 {
		cfg.ReceiptWindow = 1000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: map[*conn]struct{}{}}
	s.SetFaults(cfg.Faults)
	s.stalled.Store(uint32(cfg.Stall))
	s.sched.init()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.dispatch() }()
	return s
}

// SetFaults replaces the injected faults; their counts start again.
func (s *Server) SetFaults(f Faults) {
	s.faults.Store(&faultState{Faults: f})
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("smscsim: server closed")

// Serve accepts connections on l until Close (then it returns
// ErrServerClosed) or until Accept fails.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = l.Close()
		return ErrServerClosed
	}
	s.l = l
	s.mu.Unlock()
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return fmt.Errorf("smscsim: accept: %w", err)
		}
		cn := newConn(s, nc)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return ErrServerClosed
		}
		s.conns[cn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			cn.serve()
			s.mu.Lock()
			delete(s.conns, cn)
			s.mu.Unlock()
		}()
	}
}

// Start listens on addr ("127.0.0.1:0" for an ephemeral port) and serves
// in the background; Addr tells the address.
func (s *Server) Start(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("smscsim: listen %s: %w", addr, err)
	}
	s.mu.Lock()
	s.l = l
	s.mu.Unlock()
	go func() { _ = s.Serve(l) }()
	return nil
}

// ListenAndServe listens on addr and serves until ctx ends or Close; it
// returns nil then.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("smscsim: listen %s: %w", addr, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()
	if err := s.Serve(l); !errors.Is(err, ErrServerClosed) {
		return err
	}
	return nil
}

// Addr is the address the Server listens on, "" before it does.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.l == nil {
		return ""
	}
	return s.l.Addr().String()
}

// Close stops listening, closes every connection and stops the receipt
// dispatcher. Receipts not yet acknowledged are lost.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	l := s.l
	conns := make([]*conn, 0, len(s.conns))
	for cn := range s.conns {
		conns = append(conns, cn)
	}
	s.mu.Unlock()
	var err error
	if l != nil {
		err = l.Close()
	}
	for _, cn := range conns {
		cn.shutdown()
	}
	s.sched.stop()
	s.wg.Wait()
	return err
}

// DropConnections closes every open connection at once, as a failing SMSC
// would; the Server goes on accepting new ones.
func (s *Server) DropConnections() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for cn := range s.conns {
		conns = append(conns, cn)
	}
	s.mu.Unlock()
	for _, cn := range conns {
		s.n.dropped.Add(1)
		cn.shutdown()
	}
}

// Stats returns the Server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	conns := len(s.conns)
	s.mu.Unlock()
	return Stats{
		Connections:       conns,
		Binds:             s.n.binds.Load(),
		BindFailures:      s.n.bindFailures.Load(),
		Submits:           s.n.submits.Load(),
		Accepted:          s.n.accepted.Load(),
		Throttled:         s.n.throttled.Load(),
		RateLimited:       s.n.rateLimited.Load(),
		Rejected:          s.n.rejected.Load(),
		Dropped:           s.n.dropped.Load(),
		InFlight:          int(s.n.inFlight.Load()),
		Held:              int(s.n.held.Load()),
		Stalled:           s.stalledNow(),
		MaxInFlight:       int(s.n.maxInFlight.Load()),
		ReceiptsSent:      s.n.receiptsSent.Load(),
		ReceiptsAcked:     s.n.receiptsAcked.Load(),
		ReceiptsRefused:   s.n.receiptsRefused.Load(),
		ReceiptsReplayed:  s.n.receiptsReplayed.Load(),
		ReceiptsPending:   s.sched.pending(),
		FirstSubmit:       unixNano(s.n.firstSubmit.Load()),
		LastSubmit:        unixNano(s.n.lastSubmit.Load()),
		BindsRefusedUntil: s.bindsRefusedUntil(),
	}
}

// unixNano is the time of n nanoseconds since the epoch; zero when n is 0.
func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// receivers returns the sessions that may take receipts for systemID:
// those bound with it, else every receiving session.
func (s *Server) receivers(systemID string) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var same, any []*conn
	for cn := range s.conns {
		bt, id := cn.binding()
		if bt == bindReceiver || bt == bindTransceiver {
			any = append(any, cn)
			if id == systemID {
				same = append(same, cn)
			}
		}
	}
	if len(same) > 0 {
		return same
	}
	return any
}

// newID returns a fresh message id.
func (s *Server) newID() string {
	return fmt.Sprintf("%012X", s.ids.Add(1))
}

func (s *Server) inFlight(delta int64) {
	v := s.n.inFlight.Add(delta)
	for {
		m := s.n.maxInFlight.Load()
		if v <= m || s.n.maxInFlight.CompareAndSwap(m, v) {
			return
		}
	}
}
