// Package vonagesim simulates the Vonage Messages API (v1) for the demo
// and for tests of the vonage adapter: it serves POST /v1/messages as
// the adapter's reference describes it and posts signed webhooks back,
// so that the adapter cannot tell it from the provider.
//
// # Requests
//
// A request must carry a bearer JWT signed RS256 with the private key of
// Config.Credentials whose application_id is its applicationId, iat
// within five minutes of now and exp (when set) not passed: else HTTP 401
// with the provider's problem body. Beyond Config.RatePerSecond requests
// a second it answers 429 with Retry-After. The body is decoded
// strictly: a Content-Type other than JSON, malformed JSON, an unknown
// field, a missing or invalid field, or a field that does not belong to
// the message's type is answered 400 with a problem body whose type ends
// in #1010 (missing) or #1020 (invalid) and names the field in
// invalid_parameters. The rules checked are those of the package
// documentation of vonage (limits of Viber and WhatsApp shapes).
//
// # Outcomes by number
//
// A valid message is answered 202 with a fresh message_uuid. Its status
// webhooks then depend on the last digits of to:
//
//	ends in 0008: submitted, then rejected with error 1240 (blocked)
//	ends in 0009: submitted, then rejected with error 1300 (not on the channel)
//	ends in 0010: submitted, then rejected with error 1310 (no suitable device)
//	otherwise:    submitted, delivered, read; an interactive WhatsApp message
//	              (reply buttons or a list) is then answered with an inbound
//	              reply picking option (last digit of to) mod (number of options)
//
// # Webhooks
//
// Each event is posted alone, as the provider does, to the message's
// webhook_url (statuses) or to Config.CallbackURL (statuses without one,
// and inbound messages), with an Authorization bearer JWT signed HS256
// with the signatureSecret: claims iat, a fresh jti, iss "Vonage",
// application_id and payload_hash (the hex SHA-256 of the body). The
// events of one message go in order, each once the previous was answered
// 2xx; an event answered otherwise is posted again, signed anew, up to
// five times with a doubling wait, then it and the events after it are
// dropped.
package vonagesim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/vonage"
)

// Config configures a Server.
type Config struct {
	// Credentials is the service's credentials object (vonage.Credentials):
	// requests are checked and webhooks signed with it.
	Credentials json.RawMessage
	// Channel is chatprovider.ChannelViber or ChannelWhatsApp: the only
	// channel the simulator accepts.
	Channel string
	// CallbackURL is where webhooks go; may be set later with
	// SetCallbackURL. Empty: webhooks without a webhook_url are dropped.
	CallbackURL string
	// RatePerSecond is how many requests a second are taken before 429.
	// 0: 100.
	RatePerSecond int
	// Logger receives the simulator's logs. Nil: discard.
	Logger *slog.Logger
}

// Timing of the simulated events.
const (
	eventGap        = 20 * time.Millisecond
	webhookAttempts = 5
	webhookBackoff  = 50 * time.Millisecond
	webhookTimeout  = 5 * time.Second
	tokenSkew       = 5 * time.Minute
	maxBodyBytes    = 1 << 20
)

// Server is a running simulator.
type Server struct {
	cfg    Config
	appID  string
	pub    *rsa.PublicKey
	secret []byte
	ln     net.Listener
	srv    *http.Server
	client *http.Client
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	callbackURL string
	window      time.Time // start of the current rate window
	inWindow    int
	accepted    int
	webhooks    int
	closed      bool
}

// DemoCredentials returns a fresh credentials object (a new RSA key, an
// application id and a signature secret) for the demo and for tests:
// make it once and give the same to the simulator and the service.
func DemoCredentials() json.RawMessage {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(fmt.Sprintf("vonagesim: generate a key: %v", err))
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(fmt.Sprintf("vonagesim: encode the key: %v", err))
	}
	b, err := json.Marshal(vonage.Credentials{
		ApplicationID:   newUUID(),
		PrivateKey:      string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		SignatureSecret: randomHex(32),
	})
	if err != nil {
		panic(fmt.Sprintf("vonagesim: encode the credentials: %v", err))
	}
	return b
}

// Start listens on addr ("127.0.0.1:0") and serves the simulator until
// Close or until ctx ends.
func Start(ctx context.Context, addr string, cfg Config) (*Server, error) {
	var c vonage.Credentials
	if err := json.Unmarshal(cfg.Credentials, &c); err != nil {
		return nil, fmt.Errorf("vonagesim: credentials: %w", err)
	}
	key, err := vonage.ParsePrivateKey(c.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("vonagesim: credentials: %w", err)
	}
	if c.ApplicationID == "" || c.SignatureSecret == "" {
		return nil, errors.New("vonagesim: credentials need applicationId and signatureSecret")
	}
	if cfg.Channel != chatprovider.ChannelViber && cfg.Channel != chatprovider.ChannelWhatsApp {
		return nil, fmt.Errorf("vonagesim: channel %q is neither viber nor whatsapp", cfg.Channel)
	}
	if cfg.RatePerSecond <= 0 {
		cfg.RatePerSecond = 100
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("vonagesim: listen on %s: %w", addr, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Server{
		cfg:         cfg,
		appID:       c.ApplicationID,
		pub:         &key.PublicKey,
		secret:      []byte(c.SignatureSecret),
		ln:          ln,
		client:      &http.Client{Timeout: webhookTimeout},
		log:         cfg.Logger.With("simulator", "vonage"),
		ctx:         sctx,
		cancel:      cancel,
		callbackURL: cfg.CallbackURL,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", s.messages)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("vonagesim stopped serving", "error", err)
		}
	}()
	go func() {
		<-sctx.Done()
		_ = s.srv.Close()
	}()
	return s, nil
}

// URL is the simulator's base URL (a service's baseUrl).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// SetCallbackURL sets where webhooks without a webhook_url go.
func (s *Server) SetCallbackURL(u string) {
	s.mu.Lock()
	s.callbackURL = u
	s.mu.Unlock()
}

// Accepted is how many messages the simulator accepted.
func (s *Server) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Webhooks is how many webhooks were answered 2xx.
func (s *Server) Webhooks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhooks
}

// Close stops serving and drops the webhooks not yet posted.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	err := s.srv.Close()
	s.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// problem writes the provider's error body.
func problem(w http.ResponseWriter, status int, typ, title, detail string, params ...vonage.InvalidParameter) {
	t, _ := json.Marshal(title)
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(vonage.Problem{Type: typ, Title: t, Detail: detail, Instance: randomHex(16), InvalidParameters: params})
}

const (
	errorsBase   = "https://developer.vonage.com/api-errors"
	messagesBase = errorsBase + "/messages"
)

// messages serves POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		problem(w, http.StatusMethodNotAllowed, errorsBase+"#method-not-allowed", "Method Not Allowed", "messages are POSTed")
		return
	}
	if err := s.authenticate(r.Header.Get("Authorization")); err != nil {
		s.log.Info("vonagesim refused a request", "error", err)
		problem(w, http.StatusUnauthorized, errorsBase+"#unauthorized", "Unauthorized", "You did not provide correct credentials.")
		return
	}
	if !s.admit() {
		w.Header().Set("Retry-After", "1")
		problem(w, http.StatusTooManyRequests, errorsBase+"#throttled", "Rate Limit Hit",
			fmt.Sprintf("Please wait, then retry your request: at most %d requests a second.", s.cfg.RatePerSecond))
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		problem(w, http.StatusBadRequest, messagesBase+"#1020", "Invalid params", "The body must be application/json.")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		problem(w, http.StatusBadRequest, messagesBase+"#1020", "Invalid params", "The body could not be read.")
		return
	}
	var req request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		field, reason := "body", "is not a valid message"
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			field, reason = strings.Trim(f, `"`), "is not a field of this message"
		}
		problem(w, http.StatusBadRequest, messagesBase+"#1020", "Invalid params", "Your request parameters did not validate.",
			vonage.InvalidParameter{Name: field, Reason: reason})
		return
	}
	if dec.More() {
		problem(w, http.StatusBadRequest, messagesBase+"#1020", "Invalid params", "The body holds more than one JSON value.")
		return
	}
	if bad := validate(s.cfg.Channel, &req); bad != nil {
		code, title := "#1020", "Invalid params"
		if bad.missing {
			code, title = "#1010", "Missing params"
		}
		problem(w, http.StatusBadRequest, messagesBase+code, title, "Your request parameters did not validate.",
			vonage.InvalidParameter{Name: bad.field, Reason: bad.reason})
		return
	}
	uuid := newUUID()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		problem(w, http.StatusServiceUnavailable, errorsBase+"#unavailable", "Service Unavailable", "The simulator is closing.")
		return
	}
	s.accepted++
	s.wg.Add(1)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]string{"message_uuid": uuid})
	go s.play(uuid, req)
}

// authenticate checks a request's bearer token.
func (s *Server) authenticate(h string) error {
	tok, ok := vonage.Bearer(h)
	if !ok {
		return errors.New("no bearer token")
	}
	c, err := vonage.VerifyRS256(s.pub, tok)
	if err != nil {
		return err
	}
	if c.ApplicationID != s.appID {
		return fmt.Errorf("application_id %q is not the application's", c.ApplicationID)
	}
	now := time.Now()
	if iat := time.Unix(c.IssuedAt, 0); c.IssuedAt == 0 || iat.After(now.Add(tokenSkew)) || iat.Before(now.Add(-24*time.Hour)) {
		return errors.New("token iat out of range")
	}
	if c.Expires != 0 && !now.Before(time.Unix(c.Expires, 0)) {
		return errors.New("token expired")
	}
	return nil
}

// admit counts a request against the rate; false beyond it.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.window) >= time.Second {
		s.window, s.inWindow = now, 0
	}
	if s.inWindow >= s.cfg.RatePerSecond {
		return false
	}
	s.inWindow++
	return true
}

// event is one webhook body.
type event struct {
	MessageUUID string          `json:"message_uuid"`
	To          string          `json:"to"`
	From        string          `json:"from"`
	Timestamp   string          `json:"timestamp"`
	Status      string          `json:"status,omitempty"`
	Error       *vonage.Problem `json:"error,omitempty"`
	Channel     string          `json:"channel"`
	ClientRef   string          `json:"client_ref,omitempty"`
	MessageType string          `json:"message_type,omitempty"`
	Reply       *reply          `json:"reply,omitempty"`
	Context     *replyContext   `json:"context,omitempty"`
	Profile     *profile        `json:"profile,omitempty"`
}

type reply struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type replyContext struct {
	MessageUUID string `json:"message_uuid"`
	MessageFrom string `json:"message_from"`
}

type profile struct {
	Name string `json:"name"`
}

// failures are the outcomes by the number's last digits.
func failure(to string) (int, string, bool) {
	switch {
	case hasSuffix(to, "0008"):
		return 1240, "Illegal Number: the recipient opted out of messages from this sender.", true
	case hasSuffix(to, "0009"):
		return 1300, "Not part of the provider network", true
	case hasSuffix(to, "0010"):
		return 1310, "Not suitable device", true
	}
	return 0, "", false
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// play posts the webhooks of one accepted message, in order.
func (s *Server) play(uuid string, req request) {
	defer s.wg.Done()
	base := event{MessageUUID: uuid, To: req.To, From: req.From, Channel: req.Channel, ClientRef: req.ClientRef}
	statusURL := req.WebhookURL
	var events []event
	add := func(e event) { events = append(events, e) }
	sub := base
	sub.Status = "submitted"
	add(sub)
	if code, detail, failed := failure(req.To); failed {
		e := base
		e.Status = "rejected"
		title, _ := json.Marshal(code)
		e.Error = &vonage.Problem{Type: messagesBase + "#" + strconv.Itoa(code), Title: title, Detail: detail, Instance: randomHex(16)}
		add(e)
	} else {
		for _, st := range []string{"delivered", "read"} {
			e := base
			e.Status = st
			add(e)
		}
	}
	for i, e := range events {
		if !s.wait(eventGap) {
			return
		}
		e.Timestamp = time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		events[i] = e
		if !s.post(statusURL, e) {
			return
		}
	}
	if r, ok := pick(req); ok && events[len(events)-1].Status == "read" {
		if !s.wait(eventGap) {
			return
		}
		in := event{
			MessageUUID: newUUID(), To: req.From, From: req.To, Channel: req.Channel,
			Timestamp:   time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
			MessageType: "reply", Reply: &r,
			Context: &replyContext{MessageUUID: uuid, MessageFrom: req.From},
			Profile: &profile{Name: "Simulated Person"},
		}
		s.post("", in)
	}
}

// pick chooses the option a person answers an interactive message with:
// (last digit of the number) mod (number of options).
func pick(req request) (reply, bool) {
	if req.Custom == nil || req.Custom.Interactive == nil || len(req.To) == 0 {
		return reply{}, false
	}
	in := req.Custom.Interactive
	var opts []reply
	switch in.Type {
	case "button":
		for _, b := range in.Action.Buttons {
			if b.Reply != nil {
				opts = append(opts, reply{ID: b.Reply.ID, Title: b.Reply.Title})
			}
		}
	case "list":
		for _, sec := range in.Action.Sections {
			for _, row := range sec.Rows {
				opts = append(opts, reply{ID: row.ID, Title: row.Title})
			}
		}
	}
	if len(opts) == 0 {
		return reply{}, false
	}
	d := int(req.To[len(req.To)-1] - '0')
	return opts[d%len(opts)], true
}

// wait sleeps d; false when the simulator closes first.
func (s *Server) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// post sends one webhook to url (empty: the callback URL), signed, until
// it is answered 2xx; false when it was given up.
func (s *Server) post(url string, e event) bool {
	if url == "" {
		s.mu.Lock()
		url = s.callbackURL
		s.mu.Unlock()
	}
	if url == "" {
		s.log.Info("vonagesim dropped a webhook: no callback URL", "message_uuid", e.MessageUUID)
		return false
	}
	body, err := json.Marshal(e)
	if err != nil {
		s.log.Error("vonagesim could not encode a webhook", "error", err)
		return false
	}
	backoff := webhookBackoff
	for attempt := 1; attempt <= webhookAttempts; attempt++ {
		status, err := s.postOnce(url, body)
		if err == nil && status >= 200 && status < 300 {
			s.mu.Lock()
			s.webhooks++
			s.mu.Unlock()
			return true
		}
		s.log.Info("vonagesim webhook not taken", "url", url, "status", status, "error", err, "attempt", attempt)
		if attempt < webhookAttempts && !s.wait(backoff) {
			return false
		}
		backoff *= 2
	}
	return false
}

// postOnce signs body anew and posts it.
func (s *Server) postOnce(url string, body []byte) (int, error) {
	tok, err := vonage.SignHS256(s.secret, vonage.Claims{
		IssuedAt:      time.Now().Unix(),
		ID:            newUUID(),
		Issuer:        "Vonage",
		ApplicationID: s.appID,
		PayloadHash:   vonage.PayloadHash(body),
	})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
