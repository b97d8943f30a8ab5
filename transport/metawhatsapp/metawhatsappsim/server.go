package metawhatsappsim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/transport/chatprovider"
)

// Config configures a Server.
type Config struct {
	// Credentials is the service's credentials object (accessToken,
	// appSecret, verifyToken): requests must carry the access token,
	// webhooks are signed with the app secret.
	Credentials json.RawMessage
	// Channel is chatprovider.ChannelWhatsApp (empty means it); the
	// simulator serves no other.
	Channel string
	// CallbackURL is where webhooks go; may be set later with
	// SetCallbackURL. Webhooks wait while it is empty.
	CallbackURL string
	// RatePerSecond is how many requests a second are taken before the
	// answer is 429. 0: 100.
	RatePerSecond int
	// Logger receives the simulator's logs. Default: discard.
	Logger *slog.Logger
}

// Timing of the webhooks after a message is accepted.
const (
	sentDelay      = 5 * time.Millisecond
	deliveredDelay = 25 * time.Millisecond
	readDelay      = 50 * time.Millisecond
	replyDelay     = 75 * time.Millisecond
	// flushDelay is how long the poster waits once a webhook is due, so
	// that the statuses due together go in one request.
	flushDelay = 10 * time.Millisecond
	// maxBatch is the most statuses one webhook carries.
	maxBatch = 100
	// maxPending bounds the webhooks waiting; beyond, new ones are
	// dropped.
	maxPending = 1 << 20
	// attempts is how many times one webhook is posted before it is
	// given up.
	attempts = 8
)

// Names the simulated business account shows.
const (
	wabaID         = "100000000000001"
	displayPhone   = "15550000000"
	maxRequestBody = 1 << 20
)

type credentials struct {
	AccessToken string `json:"accessToken"`
	AppSecret   string `json:"appSecret"`
	VerifyToken string `json:"verifyToken"`
}

// DemoCredentials are credentials for the demo and tests.
func DemoCredentials() json.RawMessage {
	return json.RawMessage(`{"accessToken":"demo-access-token","appSecret":"demo-app-secret","verifyToken":"demo-verify-token"}`)
}

// Server is a running simulator.
type Server struct {
	creds  credentials
	rate   int
	log    *slog.Logger
	ln     net.Listener
	http   *http.Server
	client *http.Client
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}
	seq    atomic.Uint64

	mu          sync.Mutex
	callbackURL string
	pending     []event // sorted by due
	tokens      float64
	refilled    time.Time
}

// event is one webhook object due at a time: a status or a message.
type event struct {
	due     time.Time
	phoneID string
	status  map[string]any
	message map[string]any
	contact string // wa_id of a message's sender
}

// Start serves the simulator on addr ("127.0.0.1:0" for a free port)
// until ctx ends or Close.
func Start(ctx context.Context, addr string, cfg Config) (*Server, error) {
	if cfg.Channel != "" && cfg.Channel != chatprovider.ChannelWhatsApp {
		return nil, fmt.Errorf("metawhatsappsim: the simulator serves the %s channel, not %q", chatprovider.ChannelWhatsApp, cfg.Channel)
	}
	var c credentials
	if err := json.Unmarshal(cfg.Credentials, &c); err != nil || c.AccessToken == "" || c.AppSecret == "" || c.VerifyToken == "" {
		return nil, errors.New("metawhatsappsim: Credentials must hold accessToken, appSecret and verifyToken")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metawhatsappsim: listen %s: %w", addr, err)
	}
	s := &Server{
		creds:       c,
		rate:        cfg.RatePerSecond,
		log:         cfg.Logger,
		ln:          ln,
		client:      &http.Client{Timeout: 5 * time.Second},
		done:        make(chan struct{}),
		wake:        make(chan struct{}, 1),
		callbackURL: cfg.CallbackURL,
	}
	if s.rate <= 0 {
		s.rate = 100
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.tokens, s.refilled = float64(s.rate), time.Now()
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	go s.post()
	go func() {
		<-s.ctx.Done()
		_ = s.http.Close()
	}()
	return s, nil
}

// APIVersion is the Graph API version in URL. Requests naming another
// version are served alike.
const APIVersion = "v23.0"

// URL is the base URL a service's baseUrl takes: the simulator's address
// and the Graph API version (http://127.0.0.1:port/v23.0).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() + "/" + APIVersion }

// SetCallbackURL sets where webhooks go.
func (s *Server) SetCallbackURL(u string) {
	s.mu.Lock()
	s.callbackURL = u
	s.mu.Unlock()
	s.nudge()
}

// Close stops serving and posting; webhooks not yet posted are dropped.
func (s *Server) Close() error {
	s.cancel()
	err := s.http.Close()
	<-s.done
	return err
}

// VerifyCallback makes Meta's verification request to the callback URL,
// as when the webhook is configured: GET with hub.mode, hub.verify_token
// and hub.challenge; the answer must be the challenge.
func (s *Server) VerifyCallback(ctx context.Context) error {
	s.mu.Lock()
	cb := s.callbackURL
	s.mu.Unlock()
	if cb == "" {
		return errors.New("metawhatsappsim: no callback URL")
	}
	challenge := strconv.FormatUint(randUint(), 10)
	q := url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {s.creds.VerifyToken}, "hub.challenge": {challenge}}
	sep := "?"
	if strings.Contains(cb, "?") {
		sep = "&"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cb+sep+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("metawhatsappsim: verify: %w", err)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("metawhatsappsim: verify: %w", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
	if res.StatusCode != http.StatusOK || string(b) != challenge {
		return fmt.Errorf("metawhatsappsim: verify: HTTP %d, the challenge was not echoed", res.StatusCode)
	}
	return nil
}

// parsePath reads /{version}/{phone number id}/messages, the version
// like v23.0.
func parsePath(p string) (phoneID string, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) != 4 || parts[0] != "" || parts[3] != "messages" {
		return "", false
	}
	major, minor, dot := strings.Cut(strings.TrimPrefix(parts[1], "v"), ".")
	if !strings.HasPrefix(parts[1], "v") || !dot || !digits(major) || !digits(minor) || !digits(parts[2]) {
		return "", false
	}
	return parts[2], true
}

func digits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// ServeHTTP serves POST /{version}/{phone number id}/messages.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	phoneID, ok := parsePath(r.URL.Path)
	if !ok {
		writeError(w, &apiError{400, 100, "Unsupported post request", "unknown path " + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, &apiError{400, 100, "Unsupported request", "use POST"})
		return
	}
	token, hasToken := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !hasToken || subtle.ConstantTimeCompare([]byte(token), []byte(s.creds.AccessToken)) != 1 {
		writeError(w, &apiError{401, 190, "Invalid OAuth access token", "the access token could not be decrypted"})
		return
	}
	if !s.take() {
		w.Header().Set("Retry-After", "1")
		writeError(w, &apiError{429, 130429, "Rate limit hit", "Cloud API message throughput has been reached"})
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeError(w, invalidParam("Content-Type must be application/json"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, invalidParam("the body could not be read"))
		return
	}
	m, aerr := decode(body)
	if aerr == nil {
		aerr = checkMessage(m)
	}
	if aerr != nil {
		s.log.Info("request refused", "code", aerr.code, "details", aerr.details)
		writeError(w, aerr)
		return
	}
	to := strings.TrimPrefix(m.To, "+")
	wamid := s.wamid(to)
	s.schedule(phoneID, to, wamid, m)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"messaging_product": "whatsapp",
		"contacts":          []map[string]string{{"input": m.To, "wa_id": to}},
		"messages":          []map[string]string{{"id": wamid}},
	})
}

// take spends one token of the rate, refilled continuously.
func (s *Server) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.tokens += now.Sub(s.refilled).Seconds() * float64(s.rate)
	if s.tokens > float64(s.rate) {
		s.tokens = float64(s.rate)
	}
	s.refilled = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

func (s *Server) wamid(to string) string {
	n := s.seq.Add(1)
	raw := fmt.Sprintf("sim:%s:%d:%d", to, n, randUint())
	return "wamid." + base64.StdEncoding.EncodeToString([]byte(raw))
}

// option is one choice of a survey the person may pick.
type option struct {
	kind  string // button_reply, list_reply or quick_reply
	id    string
	title string
}

// options returns the choices a message offers.
func options(m *reqMessage) []option {
	var out []option
	if in := m.Interactive; in != nil && in.Action != nil {
		for _, b := range in.Action.Buttons {
			if b.Reply != nil {
				out = append(out, option{"button_reply", b.Reply.ID, b.Reply.Title})
			}
		}
		for _, sec := range in.Action.Sections {
			for _, r := range sec.Rows {
				out = append(out, option{"list_reply", r.ID, r.Title})
			}
		}
	}
	if t := m.Template; t != nil {
		for _, c := range t.Components {
			if c.Type == "button" && c.SubType == "quick_reply" && len(c.Parameters) == 1 && c.Parameters[0].Payload != nil {
				out = append(out, option{"quick_reply", *c.Parameters[0].Payload, "Option " + c.Index})
			}
		}
	}
	return out
}

// failure is the error a number's last digits choose.
func failure(to string) map[string]any {
	e := func(code int, title, details string) map[string]any {
		return map[string]any{"code": code, "title": title, "message": title,
			"error_data": map[string]any{"details": details},
			"href":       "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"}
	}
	switch {
	case strings.HasSuffix(to, "0008"):
		return e(131050, "Unable to deliver the message", "The person chose to stop receiving marketing messages from this business.")
	case strings.HasSuffix(to, "0009"):
		return e(131026, "Message undeliverable", "The number has no WhatsApp account.")
	case strings.HasSuffix(to, "0010"):
		return e(131026, "Message undeliverable", "The recipient's WhatsApp version cannot show this message; the app needs an update.")
	case strings.HasSuffix(to, "0047"):
		return e(131047, "Re-engagement message", "More than 24 hours have passed since the person last wrote to this number.")
	}
	return nil
}

// schedule queues the webhooks of an accepted message.
func (s *Server) schedule(phoneID, to, wamid string, m *reqMessage) {
	now := time.Now()
	status := func(st string, at time.Time) map[string]any {
		o := map[string]any{"id": wamid, "status": st, "timestamp": strconv.FormatInt(at.Unix(), 10), "recipient_id": to}
		if m.BizOpaqueCallbackData != nil {
			o["biz_opaque_callback_data"] = *m.BizOpaqueCallbackData
		}
		return o
	}
	var evs []event
	if f := failure(to); f != nil {
		st := status("failed", now)
		st["errors"] = []any{f}
		evs = append(evs, event{due: now.Add(deliveredDelay), phoneID: phoneID, status: st})
	} else {
		st := status("sent", now)
		st["conversation"] = map[string]any{"id": strconv.FormatUint(randUint(), 16), "origin": map[string]any{"type": "service"}}
		st["pricing"] = map[string]any{"billable": true, "pricing_model": "PMP", "category": "service"}
		evs = append(evs,
			event{due: now.Add(sentDelay), phoneID: phoneID, status: st},
			event{due: now.Add(deliveredDelay), phoneID: phoneID, status: status("delivered", now.Add(deliveredDelay))},
			event{due: now.Add(readDelay), phoneID: phoneID, status: status("read", now.Add(readDelay))},
		)
		if opts := options(m); len(opts) > 0 {
			digit := int(to[len(to)-1] - '0')
			o := opts[digit%len(opts)]
			at := now.Add(replyDelay)
			msg := map[string]any{
				"context":   map[string]any{"from": displayPhone, "id": wamid},
				"from":      to,
				"id":        s.wamid(to),
				"timestamp": strconv.FormatInt(at.Unix(), 10),
			}
			switch o.kind {
			case "quick_reply":
				msg["type"] = "button"
				msg["button"] = map[string]any{"payload": o.id, "text": o.title}
			default:
				msg["type"] = "interactive"
				msg["interactive"] = map[string]any{"type": o.kind, o.kind: map[string]any{"id": o.id, "title": o.title}}
			}
			evs = append(evs, event{due: at, phoneID: phoneID, message: msg, contact: to})
		}
	}
	s.mu.Lock()
	if len(s.pending)+len(evs) > maxPending {
		s.mu.Unlock()
		s.log.Warn("webhooks dropped: too many waiting", "message", wamid)
		return
	}
	for _, e := range evs {
		i := sort.Search(len(s.pending), func(i int) bool { return s.pending[i].due.After(e.due) })
		s.pending = append(s.pending, event{})
		copy(s.pending[i+1:], s.pending[i:])
		s.pending[i] = e
	}
	s.mu.Unlock()
	s.nudge()
}

func (s *Server) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// post is the one goroutine posting webhooks, in due order: the
// statuses due together go in one request, each message a request of its
// own. A webhook answered otherwise than 2xx is posted again with a
// growing pause, at most attempts times, before the next one.
func (s *Server) post() {
	defer close(s.done)
	for {
		s.mu.Lock()
		wait := time.Hour
		ready := s.callbackURL != "" && len(s.pending) > 0
		if ready {
			wait = time.Until(s.pending[0].due)
		}
		s.mu.Unlock()
		if !ready || wait > 0 {
			if wait <= 0 {
				wait = time.Hour
			}
			t := time.NewTimer(wait)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-s.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if !s.fullBatchDue() {
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(flushDelay):
			}
		}
		cb, body := s.batch()
		if body != nil {
			s.deliver(cb, body)
		}
	}
}

// fullBatchDue reports whether the next request is full already: the
// first maxBatch webhooks waiting are statuses of one phone number, all
// due. The poster then sends it without waiting for more to gather.
func (s *Server) fullBatchDue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) < maxBatch {
		return false
	}
	now, first := time.Now(), s.pending[0]
	if first.due.After(now) || first.message != nil {
		return false
	}
	for _, e := range s.pending[1:maxBatch] {
		if !joins(first, e, now) {
			return false
		}
	}
	return true
}

// joins tells whether the waiting webhook e goes in the request of the
// status first at now: a status of the same phone number, due.
func joins(first, e event, now time.Time) bool {
	return !e.due.After(now) && e.message == nil && e.phoneID == first.phoneID
}

// batch takes the due webhooks that go in the next request and encodes
// it.
func (s *Server) batch() (string, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if len(s.pending) == 0 || s.pending[0].due.After(now) {
		return "", nil
	}
	value := func(phoneID string) map[string]any {
		return map[string]any{"messaging_product": "whatsapp",
			"metadata": map[string]any{"display_phone_number": displayPhone, "phone_number_id": phoneID}}
	}
	first := s.pending[0]
	var v map[string]any
	n := 1
	if first.message != nil {
		v = value(first.phoneID)
		v["contacts"] = []any{map[string]any{"profile": map[string]any{"name": "Simulated person"}, "wa_id": first.contact}}
		v["messages"] = []any{first.message}
	} else {
		v = value(first.phoneID)
		statuses := []any{first.status}
		for n < len(s.pending) && n < maxBatch {
			e := s.pending[n]
			if !joins(first, e, now) {
				break
			}
			statuses = append(statuses, e.status)
			n++
		}
		v["statuses"] = statuses
	}
	s.pending = append(s.pending[:0:0], s.pending[n:]...)
	body, _ := json.Marshal(map[string]any{"object": "whatsapp_business_account",
		"entry": []any{map[string]any{"id": wabaID, "changes": []any{map[string]any{"value": v, "field": "messages"}}}}})
	return s.callbackURL, body
}

// deliver posts one signed webhook until it is answered 2xx.
func (s *Server) deliver(cb string, body []byte) {
	mac := hmac.New(sha256.New, []byte(s.creds.AppSecret))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	pause := 50 * time.Millisecond
	for i := 1; i <= attempts; i++ {
		req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, cb, bytes.NewReader(body))
		if err != nil {
			s.log.Error("webhook dropped: bad callback URL", "err", err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hub-Signature-256", sig)
		res, err := s.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
			res.Body.Close()
			if res.StatusCode/100 == 2 {
				return
			}
			err = fmt.Errorf("HTTP %d", res.StatusCode)
		}
		s.log.Warn("webhook not taken", "attempt", i, "err", err)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause *= 2
	}
	s.log.Error("webhook given up", "attempts", attempts)
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message":    fmt.Sprintf("(#%d) %s", e.code, e.title),
		"type":       "OAuthException",
		"code":       e.code,
		"error_data": map[string]any{"messaging_product": "whatsapp", "details": e.details},
		"fbtrace_id": "Sim" + strconv.FormatUint(randUint(), 36),
	}})
}

func randUint() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	var n uint64
	for _, x := range b {
		n = n<<8 | uint64(x)
	}
	return n
}
