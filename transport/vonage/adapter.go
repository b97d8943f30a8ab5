package vonage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// Defaults of an adapter.
const (
	// DefaultTimeout bounds one send when Settings.Client has no timeout
	// of its own and the context no deadline.
	DefaultTimeout = 30 * time.Second
	// CustomerWindow is how long after a person last wrote a free-form
	// WhatsApp message may go to them.
	CustomerWindow = 24 * time.Hour
	// TokenLifetime is the lifetime (exp - iat) of a request token.
	TokenLifetime = 5 * time.Minute
	// maxAnswerBytes caps the answer of a send that is read.
	maxAnswerBytes = 64 << 10
)

// Adapter is one Vonage chat service: it sends the service's messages
// through the Messages API and serves its webhooks. Build it with New (or
// Provider().New).
type Adapter struct {
	s       chatprovider.Settings
	creds   credentials
	url     string
	codes   codeTable
	replays chatprovider.ReplayGuard
	log     *slog.Logger
	now     func() time.Time
	// window is how far a webhook's iat may be from now.
	window time.Duration
	// tokenMu guards the signed request token and when it stops being
	// used (tokenUntil): one RS256 signature serves every send of most of
	// its lifetime.
	tokenMu    sync.Mutex
	tok        string
	tokenUntil time.Time
}

// New builds the adapter of one service from s. s.Reporter is required
// and s.Credentials must hold what CheckCredentials asks. A nil s.Client
// is a client with DefaultTimeout (the router always gives one that dials
// through the egress guard).
func New(_ context.Context, s chatprovider.Settings) (*Adapter, error) {
	if err := checkChannel(s.Channel); err != nil {
		return nil, fmt.Errorf("vonage: %w", err)
	}
	if s.Reporter == nil {
		return nil, errors.New("vonage: Settings.Reporter is required")
	}
	creds, err := parseCredentials(s.Credentials)
	if err != nil {
		return nil, fmt.Errorf("vonage: %w", err)
	}
	if s.Client == nil {
		s.Client = &http.Client{Timeout: DefaultTimeout}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	base := strings.TrimRight(s.BaseURL, "/")
	if base == "" {
		base = BaseURL
	}
	a := &Adapter{
		s:       s,
		creds:   creds,
		url:     base + MessagesPath,
		codes:   newCodeTable(),
		replays: s.Replays,
		log:     s.Logger.With("provider", Name, "chat_service_id", s.ServiceID),
		now:     s.Now,
		window:  DefaultSignatureWindow,
	}
	if a.replays == nil {
		a.replays = NewMemoryReplays(s.Now)
	}
	return a, nil
}

// Close implements chatprovider.Adapter; the adapter holds nothing that
// needs releasing.
func (a *Adapter) Close() error { return nil }

// token returns the request token: the one signed last while it has
// more than a fifth of its lifetime left, else a new one.
func (a *Adapter) token() (string, error) {
	now := a.now()
	a.tokenMu.Lock()
	defer a.tokenMu.Unlock()
	if a.tok != "" && now.Before(a.tokenUntil) {
		return a.tok, nil
	}
	tok, err := SignRS256(a.creds.key, Claims{
		ApplicationID: a.creds.appID,
		IssuedAt:      now.Unix(),
		Expires:       now.Add(TokenLifetime).Unix(),
		ID:            NewJTI(),
	})
	if err != nil {
		return "", err
	}
	// Renewed a fifth of its lifetime before it expires, so that a
	// request signed with it never reaches Vonage expired.
	a.tok, a.tokenUntil = tok, now.Add(TokenLifetime*4/5)
	return tok, nil
}

// sendAnswer is the body of an accepted send.
type sendAnswer struct {
	MessageUUID string `json:"message_uuid"`
}

// SendChat sends m through POST /v1/messages. A type the channel cannot
// carry fails ReasonUnsupported, a free-form WhatsApp message outside the
// customer window ReasonNotPermitted, both without a request. The
// answer's problem code is mapped with ErrorCodes; HTTP 429 is transient
// with RetryAfter from Retry-After, 5xx and network errors are transient,
// 401 and 403 without a code refuse the service.
func (a *Adapter) SendChat(ctx context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	if err := Carries(a.s.Channel, m.Type, m.Config); err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonUnsupported, "", err)
	}
	if a.s.Channel == chatprovider.ChannelWhatsApp && m.Config.ProviderTemplate == nil {
		if err := a.inWindow(ctx, m.To); err != nil {
			return delivery.ChatAccepted{}, err
		}
	}
	if m.Sender == "" {
		m.Sender = a.s.Sender
	}
	req, err := buildRequest(a.s.Channel, m, a.s.CallbackURL)
	if err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonUnsupported, "", err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonRejected, "", fmt.Errorf("vonage: encode the request: %w", err))
	}
	tok, err := a.token()
	if err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonServiceRefused, "", err)
	}
	if _, ok := ctx.Deadline(); !ok && a.s.Client.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonServiceRefused, "", fmt.Errorf("vonage: make the request: %w", err))
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("Authorization", "Bearer "+tok)
	chatprovider.InjectTrace(ctx, hr.Header)
	resp, err := a.s.Client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return delivery.ChatAccepted{}, fmt.Errorf("vonage: send message %s: %w", m.MessageID, ctx.Err())
		}
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, "", fmt.Errorf("vonage: send message %s: %w", m.MessageID, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, "", fmt.Errorf("vonage: read the answer to message %s: %w", m.MessageID, err))
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		var ans sendAnswer
		if err := json.Unmarshal(raw, &ans); err != nil || ans.MessageUUID == "" {
			return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, "", fmt.Errorf("vonage: answer to message %s without message_uuid (HTTP %d)", m.MessageID, resp.StatusCode))
		}
		return delivery.ChatAccepted{ProviderID: ans.MessageUUID}, nil
	}
	return a.failure(m, resp, raw)
}

// failure maps a refused send's answer to its error.
func (a *Adapter) failure(m delivery.ChatSend, resp *http.Response, raw []byte) (delivery.ChatAccepted, error) {
	var p Problem
	_ = json.Unmarshal(raw, &p)
	code := p.Code()
	cause := fmt.Errorf("vonage: message %s refused: HTTP %d %s", m.MessageID, resp.StatusCode, strings.TrimSpace(p.Detail))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || code == ThrottledCode:
		word := strings.TrimSpace("HTTP " + strconv.Itoa(resp.StatusCode) + " " + p.Word())
		se := delivery.ChatFailure(delivery.ReasonTransient, word, fmt.Errorf("%w: %w", delivery.ErrRateLimited, cause))
		se.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), a.now())
		return delivery.ChatAccepted{}, se
	case code == AlreadySentCode:
		return delivery.ChatAccepted{AlreadySent: true}, nil
	case code != 0:
		reason, word := a.codes.reason(code)
		if resp.StatusCode >= 500 && reason != delivery.ReasonTransient {
			reason = delivery.ReasonTransient
		}
		return delivery.ChatAccepted{}, delivery.ChatFailure(reason, word, cause)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout:
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, "HTTP "+strconv.Itoa(resp.StatusCode), cause)
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden,
		resp.StatusCode == http.StatusPaymentRequired, resp.StatusCode == http.StatusNotFound:
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonServiceRefused, strings.TrimSpace("HTTP "+strconv.Itoa(resp.StatusCode)+" "+p.Word()), cause)
	default:
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonRejected, strings.TrimSpace("HTTP "+strconv.Itoa(resp.StatusCode)+" "+p.Word()), cause)
	}
}

// inWindow returns nil when the person wrote to the service within the
// customer window, else the failure of a free-form WhatsApp message.
func (a *Adapter) inWindow(ctx context.Context, phone string) error {
	if a.s.Contacts == nil {
		return delivery.ChatFailure(delivery.ReasonNotPermitted, "outside the customer window",
			errors.New("vonage: a free-form whatsapp message needs a person who wrote within 24 hours, or a providerTemplate"))
	}
	last, ok, err := a.s.Contacts.LastInbound(ctx, a.s.ServiceID, phone)
	if err != nil {
		return delivery.ChatFailure(delivery.ReasonTransient, "", fmt.Errorf("vonage: read when the person last wrote: %w", err))
	}
	if !ok || a.now().Sub(last) > CustomerWindow {
		return delivery.ChatFailure(delivery.ReasonNotPermitted, "outside the customer window",
			errors.New("vonage: the person did not write within 24 hours and the message has no providerTemplate"))
	}
	return nil
}

// retryAfter reads a Retry-After value, seconds or an HTTP date; 0 when
// absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
