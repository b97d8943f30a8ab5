package chaos_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Modes of the fake chat provider.
const (
	providerOK      = "ok"      // accepts every message
	providerTimeout = "timeout" // answers nothing until the client gives up; accepts every other message first
	providerErrors  = "5xx"     // answers 500 and 503
)

// chatProvider is a chat provider speaking the protocol of docs/chat-provider.md
// (POST /send_message, signed callbacks) over real HTTP, whose behaviour
// the test switches while herald sends. It deduplicates by seq, as the
// protocol asks: a seq it accepted before is answered ALREADY_SENT.
type chatProvider struct {
	t           *testing.T
	url         string
	token       string
	callbackURL string
	secret      string

	mu          sync.Mutex
	mode        string
	accepted    map[int64]string          // seq -> message token
	seqsOf      map[string]map[int64]bool // tracking_data -> seqs accepted
	dests       map[string]int            // dest -> acceptances (new seqs)
	requests    map[string]int            // answers by kind
	onAccept    func(accepted int)        // called after each new acceptance
	callbacks   sync.WaitGroup            // delivered callbacks not answered 200 yet
	callbackErr []string                  // callbacks that were never answered 200
}

// sendRequest is the part of a send_message body the provider reads.
type sendRequest struct {
	ServiceID    string `json:"service_id"`
	Dest         string `json:"dest"`
	Seq          int64  `json:"seq"`
	TrackingData string `json:"tracking_data"`
}

// startChatProvider serves the provider on a loopback port; its callbacks
// go to callbackURL signed with secret.
func startChatProvider(t *testing.T, token, callbackURL, secret string) *chatProvider {
	t.Helper()
	p := &chatProvider{t: t, token: token, callbackURL: callbackURL, secret: secret, mode: providerOK,
		accepted: map[int64]string{}, seqsOf: map[string]map[int64]bool{}, dests: map[string]int{}, requests: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /send_message", p.send)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		p.callbacks.Wait()
	})
	p.url = "http://" + ln.Addr().String()
	return p
}

// setMode switches the provider's behaviour.
func (p *chatProvider) setMode(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = mode
}

// count adds one answer of kind.
func (p *chatProvider) count(kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[kind]++
}

// send answers POST /send_message as the provider's mode says.
func (p *chatProvider) send(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Auth-Token") != p.token {
		p.count("401")
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	var req sendRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Seq == 0 || req.TrackingData == "" {
		p.count("400")
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	mode := p.mode
	n := len(p.requests) // any number: alternates the 5xx statuses below
	for _, v := range p.requests {
		n += v
	}
	p.mu.Unlock()

	switch mode {
	case providerErrors:
		status := http.StatusInternalServerError
		if n%2 == 0 {
			status = http.StatusServiceUnavailable
		}
		p.count(fmt.Sprint(status))
		http.Error(w, "provider failure", status)
		return
	case providerTimeout:
		if n%2 == 0 {
			p.accept(req) // accepted, but the answer never comes
		}
		p.count("timeout")
		select {
		case <-r.Context().Done(): // the client gave up
		case <-time.After(time.Minute):
		}
		return
	}
	token, again := p.accept(req)
	status := 0
	if again {
		status = 12 // ALREADY_SENT
		p.count("already sent")
	} else {
		p.count("accepted")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "seq": req.Seq, "message_token": token})
}

// accept records the message of req, unless its seq was accepted before,
// and sends its delivered callback; again is true for a seq known before.
func (p *chatProvider) accept(req sendRequest) (token string, again bool) {
	p.mu.Lock()
	if token, ok := p.accepted[req.Seq]; ok {
		p.mu.Unlock()
		return token, true
	}
	token = fmt.Sprint(900000000000 + req.Seq)
	p.accepted[req.Seq] = token
	if p.seqsOf[req.TrackingData] == nil {
		p.seqsOf[req.TrackingData] = map[int64]bool{}
	}
	p.seqsOf[req.TrackingData][req.Seq] = true
	p.dests[req.Dest]++
	n, onAccept := len(p.accepted), p.onAccept
	p.mu.Unlock()
	if onAccept != nil {
		onAccept(n)
	}
	p.callbacks.Add(1)
	go p.delivered(req, token)
	return token, false
}

// delivered posts the delivered status of a message, signed, until herald
// answers 200 (for up to a minute, every 200ms).
func (p *chatProvider) delivered(req sendRequest, token string) {
	defer p.callbacks.Done()
	time.Sleep(20 * time.Millisecond)
	body, _ := json.Marshal(map[string]any{"event": "status", "message_token": token, "tracking_data": req.TrackingData,
		"status": "delivered", "error_code": 0, "timestamp": time.Now().UnixMilli(), "phone_number": req.Dest})
	mac := hmac.New(sha256.New, []byte(p.secret))
	mac.Write(body)
	sig := hex.EncodeToString(mac.Sum(nil))
	client := &http.Client{Timeout: 10 * time.Second}
	last := ""
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		r, err := http.NewRequest("POST", p.callbackURL, bytes.NewReader(body))
		if err != nil {
			last = err.Error()
			break
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Content-Signature", sig)
		resp, err := client.Do(r)
		if err != nil {
			last = err.Error()
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		last = resp.Status
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.callbackErr = append(p.callbackErr, req.Dest+": "+last)
}

// stats returns what the provider saw: the answers by kind, the numbers
// it accepted (once or more), and the messages it accepted under more than
// one seq (each a duplicate delivery to a person).
func (p *chatProvider) stats() (answers map[string]int, dests map[string]int, duplicated int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	answers = make(map[string]int, len(p.requests))
	for k, v := range p.requests {
		answers[k] = v
	}
	dests = make(map[string]int, len(p.dests))
	for k, v := range p.dests {
		dests[k] = v
	}
	for _, seqs := range p.seqsOf {
		duplicated += len(seqs) - 1
	}
	return answers, dests, duplicated
}
