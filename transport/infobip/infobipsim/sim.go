package infobipsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Config configures a simulator.
type Config struct {
	// Credentials is the service's credentials object (apiKey,
	// callbackUsername, callbackPassword): requests are checked and
	// reports authenticated with them.
	Credentials json.RawMessage
	// Channel is chatprovider.ChannelViber ("viber"), the one channel
	// simulated; empty means viber.
	Channel string
	// CallbackURL is where reports go when a message names no webhook
	// address, and where inbound messages go; may be set later.
	CallbackURL string
	// RatePerSecond is how many requests a second are answered before
	// 429; 0: 100.
	RatePerSecond int
	// Logger receives what the simulator does; nil: discard.
	Logger *slog.Logger
}

// credentials are the fields of Config.Credentials the simulator uses.
type credentials struct {
	APIKey           string `json:"apiKey"`
	CallbackUsername string `json:"callbackUsername"`
	CallbackPassword string `json:"callbackPassword"`
}

// DemoCredentials is a credentials object for the demo and tests: the
// simulator takes it, and so does the infobip adapter.
func DemoCredentials() json.RawMessage {
	return json.RawMessage(`{"apiKey":"demo-infobip-api-key","callbackUsername":"herald","callbackPassword":"demo-callback-password"}`)
}

// Server is a running simulator.
type Server struct {
	cfg   Config
	creds credentials
	log   *slog.Logger
	ln    net.Listener
	srv   *http.Server
	url   string

	mu          sync.Mutex
	callbackURL string
	taken       map[string]bool // message ids accepted, the last maxTaken
	takenOrder  []string
	windowStart time.Time
	windowCount int

	reports *scheduler
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

// Start serves a simulator on addr (like "127.0.0.1:0") until Close or
// until ctx ends.
func Start(ctx context.Context, addr string, cfg Config) (*Server, error) {
	var creds credentials
	if err := json.Unmarshal(cfg.Credentials, &creds); err != nil {
		return nil, fmt.Errorf("infobipsim: credentials: %w", err)
	}
	if creds.APIKey == "" || creds.CallbackUsername == "" || creds.CallbackPassword == "" {
		return nil, errors.New("infobipsim: credentials need apiKey, callbackUsername and callbackPassword")
	}
	if cfg.Channel != "" && cfg.Channel != "viber" {
		return nil, fmt.Errorf("infobipsim: channel %q is not simulated (viber only)", cfg.Channel)
	}
	if cfg.RatePerSecond <= 0 {
		cfg.RatePerSecond = 100
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("infobipsim: listen on %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{
		cfg: cfg, creds: creds, log: log.With("simulator", "infobip"), ln: ln,
		url: "http://" + ln.Addr().String(), callbackURL: cfg.CallbackURL,
		taken: make(map[string]bool), cancel: cancel,
	}
	s.reports = newScheduler(creds, s.log)
	s.reports.defaultURL = func() string {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.callbackURL
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /viber/2/messages", s.send)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.done.Add(2)
	go func() {
		defer s.done.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("infobip simulator stopped", "err", err)
		}
	}()
	go func() {
		defer s.done.Done()
		s.reports.run(ctx)
	}()
	go func() {
		<-ctx.Done()
		_ = s.srv.Close()
	}()
	return s, nil
}

// URL is the simulator's base URL (a service's baseUrl).
func (s *Server) URL() string { return s.url }

// SetCallbackURL sets where reports without an address of their own and
// inbound messages go.
func (s *Server) SetCallbackURL(u string) {
	s.mu.Lock()
	s.callbackURL = u
	s.mu.Unlock()
}

// Close stops the simulator; reports not yet posted are dropped.
func (s *Server) Close() error {
	s.cancel()
	err := s.srv.Close()
	s.done.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("infobipsim: close: %w", err)
	}
	return nil
}

// allow counts a request against the rate of the current second.
func (s *Server) allow(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.windowStart) >= time.Second {
		s.windowStart, s.windowCount = now, 0
	}
	s.windowCount++
	return s.windowCount <= s.cfg.RatePerSecond
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "App "+s.creds.APIKey {
		writeAPIError(w, http.StatusUnauthorized, "E401", "Invalid login details.", nil)
		return
	}
	if !s.allow(time.Now()) {
		w.Header().Set("Retry-After", "1")
		writeAPIError(w, http.StatusTooManyRequests, "E429", "Too many requests.", nil)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeAPIError(w, http.StatusUnsupportedMediaType, "E415", "Content-Type must be application/json.", nil)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "E400", "Request cannot be read.", nil)
		return
	}
	req, violations := decode(body)
	if len(violations) > 0 {
		writeAPIError(w, http.StatusBadRequest, "E400", "Request cannot be processed.", violations)
		return
	}
	resp := sendResponse{BulkID: newID()}
	s.mu.Lock()
	for _, m := range req.Messages {
		for _, d := range m.Destinations {
			id := d.MessageID
			if id == "" {
				id = newID()
			}
			if s.taken[id] {
				resp.Messages = append(resp.Messages, answer{MessageID: id, Destination: d.To, Status: statusDuplicate()})
				continue
			}
			s.remember(id)
			resp.Messages = append(resp.Messages, answer{MessageID: id, Destination: d.To, Status: statusPending()})
			s.reports.add(outcome(m, d.To, id, time.Now()))
		}
	}
	s.mu.Unlock()
	s.log.Info("infobip simulator accepted", "messages", len(resp.Messages))
	writeJSON(w, http.StatusOK, resp)
}

// maxTaken is how many accepted message ids the simulator remembers.
const maxTaken = 1 << 17

// remember records an accepted message id, forgetting the oldest past
// maxTaken. Called with s.mu held.
func (s *Server) remember(id string) {
	s.taken[id] = true
	s.takenOrder = append(s.takenOrder, id)
	if len(s.takenOrder) > maxTaken {
		delete(s.taken, s.takenOrder[0])
		s.takenOrder = s.takenOrder[1:]
	}
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type violation struct {
	Property  string `json:"property"`
	Violation string `json:"violation"`
}

type apiError struct {
	ErrorCode   string      `json:"errorCode"`
	Description string      `json:"description"`
	Action      string      `json:"action"`
	Violations  []violation `json:"violations"`
	Resources   []resource  `json:"resources"`
}

type resource struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

func writeAPIError(w http.ResponseWriter, status int, code, desc string, vs []violation) {
	if vs == nil {
		vs = []violation{}
	}
	writeJSON(w, status, apiError{
		ErrorCode: code, Description: desc, Action: "Check the request and send it again.", Violations: vs,
		Resources: []resource{{Name: "API endpoint documentation",
			URL: "https://www.infobip.com/docs/api/channels/viber/viber-business-messages/send-viber-messages"}},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
