package chatsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Config configures a Server. Every zero value is a usable default.
type Config struct {
	// Token, when set, must be the X-Auth-Token of every request (HTTP 401
	// otherwise).
	Token string
	// ServiceIDs, when set, are the service_id values accepted; others
	// are answered 2 BAD_SERVICE_ID.
	ServiceIDs []string

	// CallbackURL receives the callbacks (Herald's /callbacks/chat). When
	// empty no callback is sent.
	CallbackURL string
	// CallbackSecret keys the X-Content-Signature of callbacks.
	CallbackSecret string
	// CallbackHTTP posts the callbacks. Default: each callback worker
	// posts over a keep-alive HTTP/1.1 connection of its own (an https
	// CallbackURL goes through an http.Client of the simulator's).
	CallbackHTTP *http.Client
	// CallbackTimeout bounds one callback request. Default 5s.
	CallbackTimeout time.Duration
	// CallbackWorkers is how many callbacks are posted at once, each
	// worker over a connection of its own, dialled when it first posts.
	// Default 256: a provider posts the events of many receivers at once,
	// and a receiver that stores concurrent callbacks together (Herald
	// does) gets larger groups.
	CallbackWorkers int
	// CallbackAttempts is how many times one callback is posted before
	// the simulator gives up on it (and on the events after it). Default
	// 10.
	CallbackAttempts int
	// CallbackBackoff bounds the wait between attempts of a callback: it
	// doubles from Min up to Max. Defaults: Min 100ms, Max 5s.
	CallbackBackoff messaging.Backoff
	// CallbackBatch, above 1, makes the callbacks batched: one signed
	// request carries the due events of up to CallbackBatch messages, a
	// JSON array of events each with its own id (docs/chat-provider.md).
	// A due event waits up to CallbackBatchWait (default 100ms) for others
	// to fill its request. Default 0: one event a request.
	CallbackBatch     int
	CallbackBatchWait time.Duration

	// DeliveredDelay is the time between the acceptance of a message and
	// its delivered callback (or its failed callback, for numbers ending
	// 0011). SeenDelay is the time between the delivered callback and the
	// seen one; ReplyDelay between the seen callback and a survey's reply.
	// Zero means at once.
	DeliveredDelay time.Duration
	SeenDelay      time.Duration
	ReplyDelay     time.Duration

	// LateFailureSuffix, when set, makes numbers ending with it accepted
	// and then failed by a callback with error_code 9 (the SMS fallback
	// after acceptance). Empty: no number fails late, as the demo's
	// outcomes by number (docs/tour.md) have it.
	LateFailureSuffix string

	// SeqMemory is how many accepted seq values are remembered for the
	// ALREADY_SENT answer (the oldest are forgotten first). Default
	// 1,048,576.
	SeqMemory int

	// Faults are the faults injected from the start (see SetFaults).
	Faults Faults
	// Record keeps every decoded request for Requests and Received. Leave
	// it off for long runs: it grows without bound.
	Record bool

	// Logger receives the simulator's events. Default: discard.
	Logger *slog.Logger
	// Now gives the timestamps of callbacks. Default time.Now.
	Now func() time.Time
}

// Faults are the misbehaviours a Server injects. Counts start from the
// moment the faults are set.
type Faults struct {
	// FailFirst answers HTTP 500 to the first N send_message requests
	// (with a valid token), without looking at them.
	FailFirst int
	// ThrottleFirst answers HTTP 429 to the N requests after those.
	ThrottleFirst int
	// ThrottleEvery answers HTTP 429 to every Nth request.
	ThrottleEvery int
	// RetryAfter, when positive, is the Retry-After (seconds) of 429s.
	RetryAfter int
	// RespDelay delays every answer to send_message, after the request
	// was processed: an accepted message stays accepted even when the
	// client gives up waiting.
	RespDelay time.Duration
	// DropFirst processes the first N messages that are accepted, then
	// closes their connections without answering: the response is lost.
	DropFirst int
	// StatusFor answers a valid message to one of these numbers with the
	// given status instead of the outcome by number; 0 accepts it. The
	// map is read concurrently: do not change it once set.
	StatusFor map[string]int
	// DuplicateCallbacks posts every callback twice.
	DuplicateCallbacks bool
	// SeenBeforeDelivered sends the seen callback first and the delivered
	// one after it.
	SeenBeforeDelivered bool
}

// faultState is a Faults with its own counters.
type faultState struct {
	Faults
	requests atomic.Int64
	drops    atomic.Int64
}

// Stats counts what a Server did.
type Stats struct {
	Requests    int64 // send_message requests received (any answer)
	Accepted    int64 // answered status 0
	AlreadySent int64 // answered status 12
	Rejected    int64 // answered another status
	HTTPErrors  int64 // answered HTTP 401, 429 or 500 (faults included)
	Dropped     int64 // accepted and left unanswered (Faults.DropFirst)

	CallbacksSent      int64 // events answered 200 (duplicates included; each event of a batch)
	CallbackFailures   int64 // event attempts answered otherwise or failed
	CallbacksAbandoned int64 // callbacks given up after CallbackAttempts
	CallbacksPending   int64 // messages whose callbacks are not all sent
}

// Defaults of Config.
const (
	DefaultCallbackTimeout  = 5 * time.Second
	DefaultCallbackWorkers  = 256
	DefaultCallbackAttempts = 10
	DefaultCallbackMin      = 100 * time.Millisecond
	DefaultCallbackMax      = 5 * time.Second
	// DefaultCallbackBatchWait is how long a due event of batched
	// callbacks waits for others.
	DefaultCallbackBatchWait = 100 * time.Millisecond
	DefaultSeqMemory         = 1 << 20
)

// maxRequest is the largest send_message body read.
const maxRequest = 1 << 20

// Server is a chat provider simulator. It is an http.Handler serving POST
// /send_message; Start also serves it on a listener of its own.
type Server struct {
	cfg        Config
	serviceIDs map[string]bool
	log        *slog.Logger
	faults     atomic.Pointer[faultState]
	tokens     atomic.Uint64
	bufs       sync.Pool // *bytes.Buffer

	seqMu   sync.Mutex
	seqs    map[int64]string // accepted seq -> message_token
	seqRing []int64          // accepted seqs in order, for forgetting
	seqNext int

	recMu sync.Mutex
	recs  []Request

	requests, accepted, alreadySent, rejected, httpErrors, dropped atomic.Int64

	cb *callbacks

	srvMu sync.Mutex
	srv   *http.Server
	addr  string

	closeOnce sync.Once
}

// New returns a Server for cfg and starts its callback workers; Close
// stops them.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SeqMemory <= 0 {
		cfg.SeqMemory = DefaultSeqMemory
	}
	s := &Server{
		cfg:  cfg,
		log:  cfg.Logger,
		seqs: make(map[int64]string),
	}
	if len(cfg.ServiceIDs) > 0 {
		s.serviceIDs = make(map[string]bool, len(cfg.ServiceIDs))
		for _, id := range cfg.ServiceIDs {
			s.serviceIDs[id] = true
		}
	}
	s.tokens.Store(uint64(cfg.Now().UnixMicro()))
	s.bufs.New = func() any { return bytes.NewBuffer(make([]byte, 0, 2048)) }
	s.SetFaults(cfg.Faults)
	s.cb = newCallbacks(cfg)
	return s
}

// SetFaults replaces the faults and restarts their counts.
func (s *Server) SetFaults(f Faults) {
	s.faults.Store(&faultState{Faults: f})
}

// Start serves the simulator on addr (use "127.0.0.1:0" for a free port)
// until Close.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("chatsim: listen: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.srvMu.Lock()
	if s.srv != nil {
		s.srvMu.Unlock()
		_ = ln.Close()
		return errors.New("chatsim: already started")
	}
	s.srv, s.addr = srv, ln.Addr().String()
	s.srvMu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("chatsim: serve", "err", err)
		}
	}()
	return nil
}

// URL is the base URL Start serves ("http://127.0.0.1:port"), empty
// before Start.
func (s *Server) URL() string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.addr == "" {
		return ""
	}
	return "http://" + s.addr
}

// Close stops the listener of Start, if any, and the callback workers;
// callbacks not yet sent are dropped.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.srvMu.Lock()
		srv := s.srv
		s.srvMu.Unlock()
		if srv != nil {
			err = srv.Close()
		}
		s.cb.close()
	})
	return err
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests:    s.requests.Load(),
		Accepted:    s.accepted.Load(),
		AlreadySent: s.alreadySent.Load(),
		Rejected:    s.rejected.Load(),
		HTTPErrors:  s.httpErrors.Load(),
		Dropped:     s.dropped.Load(),
	}
	s.cb.stats(&st)
	return st
}

// WaitIdle waits until every callback scheduled so far was sent or given
// up, or ctx ends.
func (s *Server) WaitIdle(ctx context.Context) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for s.cb.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("chatsim: %d messages with callbacks pending: %w", s.cb.pending.Load(), ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Requests returns every decoded request in arrival order (Config.Record).
func (s *Server) Requests() []Request {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	return append([]Request(nil), s.recs...)
}

// Received returns the decoded requests to dest in arrival order
// (Config.Record), repeats included.
func (s *Server) Received(dest string) []Request {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	var out []Request
	for _, r := range s.recs {
		if r.Dest == dest {
			out = append(out, r)
		}
	}
	return out
}

// ServeHTTP implements http.Handler: POST /send_message.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/send_message" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.requests.Add(1)
	if s.cfg.Token != "" && r.Header.Get("X-Auth-Token") != s.cfg.Token {
		s.httpErrors.Add(1)
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	f := s.faults.Load()
	k := f.requests.Add(1)
	switch {
	case k <= int64(f.FailFirst):
		s.httpErrors.Add(1)
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	case k <= int64(f.FailFirst+f.ThrottleFirst) || (f.ThrottleEvery > 0 && k%int64(f.ThrottleEvery) == 0):
		s.httpErrors.Add(1)
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		http.Error(w, "throttled", http.StatusTooManyRequests)
		return
	}

	buf := s.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 64<<10 {
			s.bufs.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxRequest)); err != nil {
		s.httpErrors.Add(1)
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}

	var req Request
	status, token := s.process(r, buf.Bytes(), &req, f)
	req.Status = status
	if s.cfg.Record && req.Raw != nil {
		s.recMu.Lock()
		s.recs = append(s.recs, req)
		s.recMu.Unlock()
	}

	if status == StatusSuccess && f.DropFirst > 0 && f.drops.Add(1) <= int64(f.DropFirst) {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				s.dropped.Add(1)
				_ = c.Close()
				return
			}
		}
	}
	if f.RespDelay > 0 {
		t := time.NewTimer(f.RespDelay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}

	out := buf.Bytes()[len(buf.Bytes()):] // reuse the buffer's spare room
	out = append(out, `{"status":`...)
	out = strconv.AppendInt(out, int64(status), 10)
	if status != StatusSuccess {
		out = append(out, `,"status_message":"`...)
		out = append(out, statusName(status)...)
		out = append(out, '"')
	}
	out = append(out, `,"seq":`...)
	out = strconv.AppendInt(out, req.Seq, 10)
	if token != "" {
		out = append(out, `,"message_token":"`...)
		out = append(out, token...)
		out = append(out, '"')
	}
	out = append(out, "}\n"...)
	w.Header()["Content-Type"] = []string{"application/json"}
	_, _ = w.Write(out)
}

// process decodes, validates and answers one request: the status and, for
// 0 and 12, the message_token.
func (s *Server) process(r *http.Request, body []byte, req *Request, f *faultState) (int, string) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.rejected.Add(1)
		return StatusBadData, ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(req); err != nil || dec.More() {
		s.rejected.Add(1)
		return StatusBadData, ""
	}
	if s.cfg.Record {
		req.Raw = append(json.RawMessage(nil), body...)
	}

	if st := req.validate(s.serviceIDs); st != StatusSuccess {
		s.rejected.Add(1)
		return st, ""
	}
	status, failLater := outcomeByNumber(req.Dest, s.cfg.LateFailureSuffix)
	if st, ok := f.StatusFor[req.Dest]; ok {
		status, failLater = st, false
	}

	s.seqMu.Lock()
	if tok, ok := s.seqs[req.Seq]; ok {
		s.seqMu.Unlock()
		s.alreadySent.Add(1)
		return StatusAlreadySent, tok
	}
	if status != StatusSuccess {
		s.seqMu.Unlock()
		s.rejected.Add(1)
		return status, ""
	}
	token := strconv.FormatUint(s.tokens.Add(1), 10)
	s.remember(req.Seq, token)
	s.seqMu.Unlock()
	s.accepted.Add(1)
	if tp := r.Header.Get("traceparent"); tp != "" {
		// A request of a traced send: the line ties the trace to what
		// the simulator did with it.
		req.Traceparent = tp
		s.log.Info("chatsim: traced request accepted", "traceparent", tp, "seq", req.Seq, "message_token", token)
	}
	s.cb.schedule(req, token, failLater, f)
	return StatusSuccess, token
}

// remember records an accepted seq, forgetting the oldest past
// SeqMemory. seqMu is held.
func (s *Server) remember(seq int64, token string) {
	if len(s.seqRing) < s.cfg.SeqMemory {
		s.seqRing = append(s.seqRing, seq)
	} else {
		delete(s.seqs, s.seqRing[s.seqNext])
		s.seqRing[s.seqNext] = seq
		s.seqNext = (s.seqNext + 1) % s.cfg.SeqMemory
	}
	s.seqs[seq] = token
}
