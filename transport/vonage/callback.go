package vonage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// Webhook limits.
const (
	// DefaultSignatureWindow is how far a webhook token's iat may be from
	// the adapter's clock, either way.
	DefaultSignatureWindow = 5 * time.Minute
	// MaxWebhookBytes caps a webhook body; a larger one is answered 413.
	MaxWebhookBytes = 256 << 10
)

// Webhook is one event Vonage posts: a message status (Status set) or an
// inbound message (MessageType set). Fields not used by Herald are left
// out and ignored.
type Webhook struct {
	MessageUUID string `json:"message_uuid"`
	To          string `json:"to"`
	From        string `json:"from"`
	Timestamp   string `json:"timestamp"`
	Channel     string `json:"channel"`
	ClientRef   string `json:"client_ref,omitempty"`
	// Status webhooks.
	Status string   `json:"status,omitempty"`
	Error  *Problem `json:"error,omitempty"`
	// Inbound webhooks.
	MessageType string          `json:"message_type,omitempty"`
	Text        string          `json:"text,omitempty"`
	Reply       *InboundReply   `json:"reply,omitempty"`
	Button      *InboundButton  `json:"button,omitempty"`
	Context     *InboundContext `json:"context,omitempty"`
}

// InboundReply is the pick of an interactive WhatsApp message (a reply
// button or a list row): the id Herald sent.
type InboundReply struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

// InboundButton is the press of a quick-reply button of a WhatsApp
// template message.
type InboundButton struct {
	Payload string `json:"payload"`
	Text    string `json:"text"`
}

// InboundContext names the message an inbound message answers.
type InboundContext struct {
	MessageUUID string `json:"message_uuid"`
	MessageFrom string `json:"message_from,omitempty"`
}

// apiError is the error body of the adapter's answers.
type apiError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiError{Error: http.StatusText(status), Message: msg})
}

// ServeHTTP takes Vonage's webhooks for the service: message statuses and
// inbound messages, each posted as one JSON object (a JSON array of them
// is taken too). The Authorization header must hold a bearer JWT signed
// HS256 with the signature secret whose payload_hash is the SHA-256 of
// the body and whose iat is within DefaultSignatureWindow; a token taken
// before (its jti, else the token itself) is refused. Both answer 401
// and report nothing. A webhook without an Authorization header, which
// Vonage may post after an error of its own, is answered 503 so that
// Vonage posts it again, signed; it reports nothing either. The statuses of a request go to one
// Reporter.ChatStatuses call, then each inbound message to
// Reporter.ChatInbound; the answer is 200 only when all returned nil, 500
// otherwise so that Vonage posts again (and the token's replay key is
// forgotten when the guard is a chatprovider.ReplayForgetter).
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "webhooks are POSTed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "webhook body too large")
			return
		}
		writeError(w, http.StatusBadRequest, "webhook body unreadable")
		return
	}
	if r.Header.Get("Authorization") == "" {
		// Vonage may post a webhook unsigned after an error of its own,
		// and signs it when it posts again after a 5xx answer.
		a.log.WarnContext(r.Context(), "vonage webhook without a signature: asked again")
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "webhook not signed, send it again signed")
		return
	}
	rk, err := a.check(r.Header.Get("Authorization"), body)
	if err != nil {
		a.log.WarnContext(r.Context(), "vonage webhook refused", "error", err)
		writeError(w, http.StatusUnauthorized, "webhook signature refused")
		return
	}
	seen, err := a.replays.Seen(r.Context(), rk.key, rk.until)
	if err != nil {
		a.log.ErrorContext(r.Context(), "vonage webhook replay guard failed", "error", err)
		writeError(w, http.StatusInternalServerError, "webhook not checked against replays, send again")
		return
	}
	if seen {
		a.log.WarnContext(r.Context(), "vonage webhook refused: token taken before (replay)")
		writeError(w, http.StatusUnauthorized, "webhook signature refused")
		return
	}
	key := rk.key
	events, err := parseWebhooks(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	statuses, inbound, err := a.reports(r.Context(), events)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(statuses) > 0 {
		if _, err := a.s.Reporter.ChatStatuses(r.Context(), statuses); err != nil {
			a.log.ErrorContext(r.Context(), "vonage statuses not stored", "error", err, "count", len(statuses))
			a.forget(r.Context(), key)
			writeError(w, http.StatusInternalServerError, "statuses not stored, send again")
			return
		}
	}
	for _, in := range inbound {
		if _, err := a.s.Reporter.ChatInbound(r.Context(), in); err != nil {
			a.log.ErrorContext(r.Context(), "vonage inbound message not stored", "error", err)
			a.forget(r.Context(), key)
			writeError(w, http.StatusInternalServerError, "inbound message not stored, send again")
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// forget removes a webhook's replay key after its report failed, when
// the guard can, so that the same delivery posted again is taken.
func (a *Adapter) forget(ctx context.Context, key string) {
	f, ok := a.replays.(chatprovider.ReplayForgetter)
	if !ok {
		return
	}
	if err := f.Forget(context.WithoutCancel(ctx), key); err != nil {
		a.log.WarnContext(ctx, "vonage webhook replay key not forgotten", "error", err)
	}
}

// replayKey is what a verified token is remembered by, and until when.
type replayKey struct {
	key   string
	until time.Time
}

// check verifies a webhook's token against the body and the clock.
func (a *Adapter) check(authorization string, body []byte) (replayKey, error) {
	tok, ok := Bearer(authorization)
	if !ok {
		return replayKey{}, errors.New("no bearer token")
	}
	c, err := VerifyHS256(a.creds.secret, tok)
	if err != nil {
		return replayKey{}, err
	}
	sum := sha256.Sum256(body)
	want := hex.EncodeToString(sum[:])
	if subtle.ConstantTimeCompare([]byte(strings.ToLower(c.PayloadHash)), []byte(want)) != 1 {
		return replayKey{}, errors.New("payload_hash does not match the body")
	}
	now := a.now()
	iat := time.Unix(c.IssuedAt, 0)
	if c.IssuedAt == 0 || iat.Before(now.Add(-a.window)) || iat.After(now.Add(a.window)) {
		return replayKey{}, fmt.Errorf("token issued at %s, outside the window", iat.UTC().Format(time.RFC3339))
	}
	if c.Expires != 0 && !now.Before(time.Unix(c.Expires, 0)) {
		return replayKey{}, errors.New("token expired")
	}
	id := c.ID
	if id == "" {
		s := sha256.Sum256([]byte(tok))
		id = "token:" + hex.EncodeToString(s[:])
	}
	return replayKey{key: fmt.Sprintf("vonage:%d:%s", a.s.ServiceID, id), until: iat.Add(a.window)}, nil
}

// parseWebhooks reads one webhook object or an array of them.
func parseWebhooks(body []byte) ([]Webhook, error) {
	b := bytes.TrimSpace(body)
	if len(b) > 0 && b[0] == '[' {
		var ws []Webhook
		if err := json.Unmarshal(b, &ws); err != nil {
			return nil, errors.New("malformed webhook JSON")
		}
		return ws, nil
	}
	var w Webhook
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, errors.New("malformed webhook JSON")
	}
	return []Webhook{w}, nil
}

// reports maps webhooks to reports. Submitted statuses, repeats of a send
// (code 1320), statuses of messages Herald did not send (their
// client_ref is not a Herald message id) and inbound kinds Herald does
// not take (media, locations) report nothing.
func (a *Adapter) reports(ctx context.Context, events []Webhook) ([]delivery.ChatStatus, []delivery.ChatInbound, error) {
	var ss []delivery.ChatStatus
	var ins []delivery.ChatInbound
	for i, e := range events {
		at, err := a.timestamp(e.Timestamp)
		if err != nil {
			return nil, nil, fmt.Errorf("event %d: %w", i, err)
		}
		switch {
		case e.Status != "":
			st, ok, err := a.status(ctx, e, at)
			if err != nil {
				return nil, nil, fmt.Errorf("event %d: %w", i, err)
			}
			if ok {
				ss = append(ss, st)
			}
		case e.MessageType != "":
			if in, ok := a.inbound(ctx, e, at); ok {
				ins = append(ins, in)
			}
		default:
			return nil, nil, fmt.Errorf("event %d is neither a status nor an inbound message", i)
		}
	}
	return ss, ins, nil
}

// timestamp reads an event's ISO 8601 time; now when absent.
func (a *Adapter) timestamp(s string) (time.Time, error) {
	if s == "" {
		return a.now().UTC(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05Z0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q is not ISO 8601", s)
}

// status maps a status webhook; false when it reports nothing.
func (a *Adapter) status(ctx context.Context, e Webhook, at time.Time) (delivery.ChatStatus, bool, error) {
	switch e.Status {
	case "submitted", "delivered", "read", "rejected", "undeliverable":
	default:
		return delivery.ChatStatus{}, false, fmt.Errorf("unknown status %q", e.Status)
	}
	id, err := messaging.ParseID(e.ClientRef)
	if err != nil {
		// A message another sender of the same Vonage application sent:
		// signed by Vonage, but none of Herald's.
		a.log.InfoContext(ctx, "vonage status of a message Herald did not send", "message_uuid", e.MessageUUID, "status", e.Status)
		return delivery.ChatStatus{}, false, nil
	}
	st := delivery.ChatStatus{MessageID: id, ProviderID: e.MessageUUID, At: at}
	switch e.Status {
	case "submitted":
		return st, false, nil
	case "delivered":
		st.Status = messaging.StatusDelivered
	case "read":
		st.Status = messaging.StatusSeen
	case "rejected", "undeliverable":
		st.Status = messaging.StatusFailed
		st.Reason, st.Detail = delivery.ReasonRejected, e.Status
		if e.Status == "undeliverable" {
			st.Reason = delivery.ReasonTransient
		}
		if e.Error != nil {
			code := e.Error.Code()
			if code == AlreadySentCode {
				return st, false, nil
			}
			if code != 0 {
				st.Reason, st.Detail = a.codes.reason(code)
			}
		}
	default:
		return st, false, fmt.Errorf("unknown status %q", e.Status)
	}
	return st, true, nil
}

// inbound maps an inbound message; false when Herald takes nothing of it.
func (a *Adapter) inbound(ctx context.Context, e Webhook, at time.Time) (delivery.ChatInbound, bool) {
	in := delivery.ChatInbound{ServiceID: a.s.ServiceID, CompanyID: a.s.CompanyID, Sender: e.To, Phone: e.From, At: at, OptionIndex: -1}
	switch e.MessageType {
	case "text":
		in.Kind, in.Text = delivery.InboundText, e.Text
	case "reply":
		if e.Reply == nil {
			return in, false
		}
		in.Text = e.Reply.Title
		if id, n, ok := ParseOptionID(e.Reply.ID); ok {
			in.Kind, in.MessageID, in.OptionIndex = delivery.InboundReply, id, n
		} else {
			in.Kind = delivery.InboundText
		}
	case "button":
		if e.Button == nil {
			return in, false
		}
		in.Text = e.Button.Text
		if id, n, ok := ParseOptionID(e.Button.Payload); ok {
			in.Kind, in.MessageID, in.OptionIndex = delivery.InboundReply, id, n
		} else {
			in.Kind = delivery.InboundText
		}
	default:
		a.log.InfoContext(ctx, "vonage inbound message of a kind Herald does not take", "message_type", e.MessageType)
		return in, false
	}
	return in, true
}

// MemoryReplays is a ReplayGuard in memory: the default of an adapter
// whose Settings.Replays is nil. It forgets keys once their time passed.
type MemoryReplays struct {
	mu    sync.Mutex
	now   func() time.Time
	keys  map[string]time.Time
	added int
}

// NewMemoryReplays returns an empty guard on the clock now (nil:
// time.Now).
func NewMemoryReplays(now func() time.Time) *MemoryReplays {
	if now == nil {
		now = time.Now
	}
	return &MemoryReplays{now: now, keys: make(map[string]time.Time)}
}

// Forget implements chatprovider.ReplayForgetter.
func (g *MemoryReplays) Forget(_ context.Context, key string) error {
	g.mu.Lock()
	delete(g.keys, key)
	g.mu.Unlock()
	return nil
}

// Seen implements chatprovider.ReplayGuard.
func (g *MemoryReplays) Seen(_ context.Context, key string, until time.Time) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if t, ok := g.keys[key]; ok && now.Before(t) {
		return true, nil
	}
	g.keys[key] = until
	g.added++
	if g.added >= 1024 {
		g.added = 0
		for k, t := range g.keys {
			if !now.Before(t) {
				delete(g.keys, k)
			}
		}
	}
	return false, nil
}
