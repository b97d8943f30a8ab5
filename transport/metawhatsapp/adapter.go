package metawhatsapp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// CustomerWindow is how long after a person's last message WhatsApp
// takes free-form messages to them.
const CustomerWindow = 24 * time.Hour

// RequestTimeout bounds one request to the Graph API; an earlier
// deadline of ctx or of Settings.Client comes first.
const RequestTimeout = 30 * time.Second

// maxAnswerBytes caps the body of an answer read.
const maxAnswerBytes = 1 << 20

// Adapter is one WhatsApp service's connection to the Cloud API: it sends
// the service's messages and serves its webhook.
type Adapter struct {
	s        chatprovider.Settings
	creds    Credentials
	endpoint string // {BaseURL}/{phone number id}/messages
	replays  chatprovider.ReplayGuard
	retakes  retakes
	macKey   []byte
	log      *slog.Logger
	now      func() time.Time
}

// New builds the adapter of one service. Settings.Sender must be the
// business phone number id, Settings.Credentials a valid credentials
// object, Settings.Client and Settings.Reporter set.
func New(_ context.Context, s chatprovider.Settings) (*Adapter, error) {
	if err := checkChannel(s.Channel); err != nil {
		return nil, errorf("service %d: %w", s.ServiceID, err)
	}
	creds, err := ParseCredentials(s.Credentials)
	if err != nil {
		return nil, errorf("service %d: %w", s.ServiceID, err)
	}
	if s.Sender == "" || strings.Trim(s.Sender, "0123456789") != "" {
		return nil, errorf("service %d: the sender must be the business phone number id (digits), got %q", s.ServiceID, s.Sender)
	}
	if s.Client == nil {
		return nil, errorf("service %d: Settings.Client is required", s.ServiceID)
	}
	if s.Reporter == nil {
		return nil, errorf("service %d: Settings.Reporter is required", s.ServiceID)
	}
	base := s.BaseURL
	if base == "" {
		base = BaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errorf("service %d: baseUrl %q is not an http(s) URL", s.ServiceID, base)
	}
	a := &Adapter{
		s:        s,
		creds:    creds,
		endpoint: strings.TrimRight(base, "/") + "/" + s.Sender + "/messages",
		replays:  s.Replays,
		macKey:   []byte(creds.AppSecret),
		log:      s.Logger,
		now:      s.Now,
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("provider", Name, "chatServiceId", s.ServiceID)
	if a.now == nil {
		a.now = time.Now
	}
	if a.replays == nil {
		a.replays = chatprovider.NewMemoryGuard(a.now, chatprovider.DefaultGuardKeys)
	}
	return a, nil
}

// Close releases nothing: the client belongs to the caller.
func (a *Adapter) Close() error { return nil }

// SendChat sends one message. Its errors are *delivery.SendError made by
// delivery.ChatFailure, or wrap ctx's error when ctx ended.
func (a *Adapter) SendChat(ctx context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	if err := Carries(a.s.Channel, m.Type, m.Config); err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonUnsupported, "", errorf("message %s: %w", m.MessageID, err))
	}
	if !validNumber(m.To) {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonInvalidNumber, "",
			errorf("message %s: %q is not an international number of 7 to 15 digits", m.MessageID, m.To))
	}
	if m.Config.ProviderTemplate == nil {
		if err := a.checkWindow(ctx, m); err != nil {
			return delivery.ChatAccepted{}, err
		}
	}
	msg, err := buildMessage(m)
	if err != nil {
		return delivery.ChatAccepted{}, err
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonRejected, "", errorf("message %s: encode: %w", m.MessageID, err))
	}
	return a.post(ctx, m.MessageID, body)
}

// validNumber: digits only, 7 to 15 of them (E.164 without its +).
func validNumber(s string) bool {
	return len(s) >= 7 && len(s) <= 15 && strings.Trim(s, "0123456789") == ""
}

// checkWindow fails a free-form message to a person who did not write in
// the last CustomerWindow.
func (a *Adapter) checkWindow(ctx context.Context, m delivery.ChatSend) error {
	if a.s.Contacts == nil {
		return delivery.ChatFailure(delivery.ReasonNotPermitted, "outside the customer service window",
			errorf("message %s: no contact record: a free-form message needs a message from the person in the last 24 h, or a providerTemplate", m.MessageID))
	}
	last, ok, err := a.s.Contacts.LastInbound(ctx, a.s.ServiceID, m.To)
	if err != nil {
		if ctx.Err() != nil {
			return errorf("message %s: %w", m.MessageID, ctx.Err())
		}
		return delivery.ChatFailure(delivery.ReasonTransient, "contacts", errorf("message %s: last inbound: %w", m.MessageID, err))
	}
	if !ok || a.now().Sub(last) >= CustomerWindow {
		return delivery.ChatFailure(delivery.ReasonNotPermitted, "outside the customer service window",
			errorf("message %s: the person has not written in the last 24 h: a free-form message needs a providerTemplate", m.MessageID))
	}
	return nil
}

// answer is the JSON of the Graph API's answers, success and error.
type answer struct {
	Messages []struct {
		ID string `json:"id"`
	} `json:"messages"`
	Error *graphError `json:"error"`
}

type graphError struct {
	Message   string `json:"message"`
	Type      string `json:"type"`
	Code      int    `json:"code"`
	ErrorData struct {
		Details string `json:"details"`
	} `json:"error_data"`
}

func (a *Adapter) post(ctx context.Context, id messaging.ID, body []byte) (delivery.ChatAccepted, error) {
	rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, a.endpoint, bytes.NewReader(body))
	if err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonServiceRefused, "", errorf("message %s: request: %w", id, err))
	}
	req.Header.Set("Authorization", "Bearer "+a.creds.AccessToken)
	chatprovider.InjectTrace(ctx, req.Header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := a.s.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return delivery.ChatAccepted{}, errorf("message %s: %w", id, ctx.Err())
		}
		word := "connection"
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			word = "timeout"
		}
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, word, errorf("message %s: %w", id, err))
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxAnswerBytes))
	if err != nil {
		if ctx.Err() != nil {
			return delivery.ChatAccepted{}, errorf("message %s: %w", id, ctx.Err())
		}
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, "unreadable answer", errorf("message %s: read answer: %w", id, err))
	}
	var ans answer
	jsonErr := json.Unmarshal(raw, &ans)
	if res.StatusCode == http.StatusOK {
		if jsonErr != nil || len(ans.Messages) == 0 || ans.Messages[0].ID == "" {
			return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, "unreadable answer",
				errorf("message %s: HTTP 200 without a message id", id))
		}
		return delivery.ChatAccepted{ProviderID: ans.Messages[0].ID}, nil
	}
	return delivery.ChatAccepted{}, a.failure(id, res, ans.Error)
}

// failure turns an error answer into a *delivery.SendError.
func (a *Adapter) failure(id messaging.ID, res *http.Response, ge *graphError) error {
	code, title, details := -1, "", "" // -1: no error object, judged by the status
	if ge != nil {
		code, title, details = ge.Code, ge.Message, ge.ErrorData.Details
	}
	reason, rateLimit := reasonFor(code, res.StatusCode, details)
	if res.StatusCode == http.StatusTooManyRequests {
		reason, rateLimit = delivery.ReasonTransient, true
	}
	cause := errorf("message %s: HTTP %d", id, res.StatusCode)
	if ge != nil {
		cause = errorf("message %s: HTTP %d, error %d %s", id, res.StatusCode, code, title)
	}
	if details != "" {
		cause = fmt.Errorf("%w (%s)", cause, details)
	}
	if rateLimit {
		cause = fmt.Errorf("%w: %w", delivery.ErrRateLimited, cause)
	}
	word := detail(code, title)
	if ge == nil {
		word = "HTTP " + strconv.Itoa(res.StatusCode)
	}
	se := delivery.ChatFailure(reason, word, cause)
	if rateLimit {
		se.RetryAfter = retryAfter(res.Header.Get("Retry-After"), a.now())
	}
	return se
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.Atoi(h); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// sign returns the hex HMAC-SHA256 of body keyed with the app secret.
func sign(key, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return mac.Sum(nil)
}
