package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// Defaults of Config.
const (
	DefaultTimeout    = 10 * time.Second
	DefaultRetries    = 3
	DefaultBackoffMin = 100 * time.Millisecond
	DefaultBackoffMax = 2 * time.Second
	// DefaultProbeInterval is the default of Config.ProbeInterval.
	DefaultProbeInterval = time.Second
)

// maxResponse is the most of a send_message response that is read.
const maxResponse = 64 << 10

// Config configures a Client. Every field but BaseURL has a usable zero
// value.
type Config struct {
	// BaseURL is the provider's API root; requests go to
	// BaseURL + "/send_message". Required, http or https.
	BaseURL string
	// Token is sent in the X-Auth-Token header of every request.
	Token string
	// HTTP is the client requests go through (its redirect policy, jar
	// and timeout apply). Default: the transport of NewTransport, used
	// directly as a RoundTripper (no redirect is followed): it keeps
	// connections alive and up to 512 idle ones to the provider, so that
	// many concurrent senders reuse them instead of dialling, dials
	// within 5s and finishes TLS handshakes within 10s. Client.Close
	// closes its idle connections.
	HTTP *http.Client
	// Timeout bounds one attempt: the request and the reading of its
	// response. Default 10s.
	Timeout time.Duration
	// Retries is how many times one SendChat sends a message again after a
	// transient failure (HTTP 429 or 5xx, status 1 or 7, a timeout, a
	// connection error, an unreadable response), always with the same
	// seq. Default 3; a negative value means no retry.
	Retries int
	// Backoff bounds the wait before a retry: it doubles from Min up to
	// Max, each wait drawn at random between half of it and all of it. A
	// Retry-After header of a 429 or 503 lengthens the wait up to Max.
	// Defaults: Min 100ms, Max 2s.
	Backoff messaging.Backoff
	// ProbeInterval is how often, while the provider does not answer (its
	// last request got a connection error, a timeout or an HTTP 5xx), a
	// dispatcher lane sends one message to find out whether it answers
	// again (see WaitReady and SendLimit). Default 1s.
	ProbeInterval time.Duration
}

// Client sends chat messages to a chat provider (see the package doc). It
// implements delivery.ChatSender and is safe for concurrent use.
type Client struct {
	endpoint string
	token    string
	http     *http.Client
	own      *http.Transport // the transport New made, used directly
	timeout  time.Duration
	retries  int
	backoff  messaging.Backoff
	reads    sync.Pool // *bytes.Buffer for responses

	// The outcome of the last request that got an answer from the
	// provider, and of the last one that did not (a connection error, a
	// timeout, HTTP 5xx): Reachable compares them.
	lastAnswer, lastFailure atomic.Int64 // UnixNano
	failure                 atomic.Pointer[string]
	probe                   time.Duration
}

var _ delivery.ChatSender = (*Client)(nil)

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("chat: Config.BaseURL %q must be an http or https URL", cfg.BaseURL)
	}
	c := &Client{
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/send_message",
		token:    cfg.Token,
		http:     cfg.HTTP,
		timeout:  cfg.Timeout,
		retries:  cfg.Retries,
		backoff:  cfg.Backoff,
		probe:    cfg.ProbeInterval,
	}
	if c.probe <= 0 {
		c.probe = DefaultProbeInterval
	}
	if c.http == nil {
		c.own = NewTransport()
		c.http = &http.Client{Transport: c.own}
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultRetries
	case c.retries < 0:
		c.retries = 0
	}
	c.backoff = c.backoff.Or(messaging.Backoff{Min: DefaultBackoffMin, Max: DefaultBackoffMax})
	c.reads.New = func() any { return bytes.NewBuffer(make([]byte, 0, 512)) }
	return c, nil
}

// NewTransport returns the HTTP transport a Client uses by default: tuned
// for many concurrent requests to one provider host over keep-alive
// connections.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Close closes the idle connections of the HTTP client New made. A Client
// given its own Config.HTTP leaves it alone. Close does not stop sends in
// progress.
func (c *Client) Close() error {
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
	return nil
}

// SendChat sends m: one POST to send_message, retried (same seq) while the
// failure is transient and retries remain. Status 0 returns the
// message_token; status 12 is a success with AlreadySent. A refusal
// returns a permanent *delivery.SendError with Code the status number and
// Details its name; HTTP 401 a permanent one with Details "BAD_TOKEN". When
// the retries run out the last transient *delivery.SendError is returned.
// When ctx ends the error wraps ctx.Err().
func (c *Client) SendChat(ctx context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	if err := checkMessage(&m); err != nil {
		return delivery.ChatAccepted{}, err
	}
	// The body is a new slice rather than a pooled one: the transport may
	// read it after RoundTrip returned, and only a body it knows to be in
	// memory (a *bytes.Reader) is written in the same packet as the
	// headers, instead of after a separate flush of them.
	body := appendRequest(make([]byte, 0, 384+len(m.Text)), &m, ttlSeconds(m.TTL))

	for attempt := 0; ; attempt++ {
		res, wait, err := c.attempt(ctx, body, m.Ref)
		c.note(err)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return delivery.ChatAccepted{}, fmt.Errorf("chat: send %s: %w", m.MessageID, ctx.Err())
		}
		if err.Permanent || attempt >= c.retries {
			if attempt > 0 {
				err.Err = fmt.Errorf("%d attempts: %w", attempt+1, err.Err)
			}
			return delivery.ChatAccepted{}, err
		}
		wait = max(wait, c.backoff.Delay(attempt+1))
		t := time.NewTimer(min(wait, c.backoff.Max))
		select {
		case <-ctx.Done():
			t.Stop()
			return delivery.ChatAccepted{}, fmt.Errorf("chat: send %s: %w", m.MessageID, ctx.Err())
		case <-t.C:
		}
	}
}

// note records whether a request reached a provider that answered it: a
// connection error, a timeout or an HTTP 5xx did not.
func (c *Client) note(err *delivery.SendError) {
	now := time.Now().UnixNano()
	if err == nil || err.Permanent || !unreachable(err.Details) {
		c.lastAnswer.Store(now)
		return
	}
	d := err.Details
	c.failure.Store(&d)
	c.lastFailure.Store(now)
}

// unreachable tells whether a transient failure's details say that the
// provider could not be reached or could not answer.
func unreachable(details string) bool {
	return details == "connection error" || details == "timeout" || strings.HasPrefix(details, "HTTP 5")
}

// Reachable reports whether the provider answered the last request sent
// to it: nil when it did, or when none was sent yet; an error naming the
// failure (a connection error, a timeout, HTTP 5xx) when the last request
// got no answer. It sends nothing itself: a provider's API has no
// standard way to be probed.
func (c *Client) Reachable(context.Context) error {
	if c.lastFailure.Load() <= c.lastAnswer.Load() {
		return nil
	}
	d := "failed"
	if p := c.failure.Load(); p != nil {
		d = *p
	}
	return messaging.Errorf(messaging.Unavailable, messaging.NameServiceUnavailable, "the chat provider did not answer the last request: %s", d)
}

// down reports whether the last request got no answer.
func (c *Client) down() bool { return c.lastFailure.Load() > c.lastAnswer.Load() }

// WaitReady implements delivery.ReadyWaiter: it returns at once while the
// provider answers; while it does not, it returns ProbeInterval after the
// last failure, so that the dispatcher's next claim (one message: see
// SendLimit) probes the provider at that pace instead of every claimed
// message failing in turn.
func (c *Client) WaitReady(ctx context.Context) error {
	for c.down() {
		wait := time.Until(time.Unix(0, c.lastFailure.Load()).Add(c.probe))
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("chat: waiting for the provider: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// SendLimit implements delivery.SendLimiter: 1 while the provider does
// not answer (the last request got a connection error, a timeout or an
// HTTP 5xx), so that one message at a time probes it; 0 (no bound)
// otherwise.
func (c *Client) SendLimit() int {
	if c.down() {
		return 1
	}
	return 0
}

// checkMessage refuses a message no provider could take.
func checkMessage(m *delivery.ChatSend) *delivery.SendError {
	switch {
	case !m.Type.Valid():
		return &delivery.SendError{Permanent: true, Reason: delivery.ReasonRejected, Details: fmt.Sprintf("invalid message type %d", int(m.Type))}
	case m.To == "":
		return &delivery.SendError{Permanent: true, Reason: delivery.ReasonRejected, Details: "no destination number"}
	case m.Sender == "":
		return &delivery.SendError{Permanent: true, Reason: delivery.ReasonRejected, Details: "no chat service id"}
	case m.Ref == 0:
		return &delivery.SendError{Permanent: true, Reason: delivery.ReasonRejected, Details: "no seq"}
	}
	return nil
}

// sendResponse is the JSON answer to send_message.
type sendResponse struct {
	Status        *int         `json:"status"`
	StatusMessage string       `json:"status_message"`
	Seq           int64        `json:"seq"`
	MessageToken  messageToken `json:"message_token"`
}

// messageToken accepts a token sent as a JSON string or number.
type messageToken string

// UnmarshalJSON implements json.Unmarshaler. encoding/json hands it a
// valid JSON value: a number is its own text, and a string without escapes
// or non-ASCII bytes is the text between its quotes.
func (t *messageToken) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*t = ""
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		*t = messageToken(b)
	case len(b) >= 2 && b[0] == '"' && plainASCII(b[1:len(b)-1]):
		*t = messageToken(b[1 : len(b)-1])
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = messageToken(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("message_token: %w", err)
		}
		*t = messageToken(n)
	}
	return nil
}

// plainASCII reports whether b holds printable ASCII but quotes and
// backslashes only.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// attempt makes one request. On failure it returns a *delivery.SendError
// and the wait the provider asked for (Retry-After), if any.
func (c *Client) attempt(ctx context.Context, body []byte, seq int64) (delivery.ChatAccepted, time.Duration, *delivery.SendError) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return delivery.ChatAccepted{}, 0, &delivery.SendError{Permanent: true, Reason: delivery.ReasonRejected, Details: "bad request", Err: err}
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["X-Auth-Token"] = []string{c.token}
	chatprovider.InjectTrace(ctx, req.Header)

	var resp *http.Response
	if c.own != nil {
		// No redirects to follow nor cookies to keep: the transport
		// alone saves http.Client's per-request header copies.
		resp, err = c.own.RoundTrip(req)
	} else {
		resp, err = c.http.Do(req)
	}
	if err != nil {
		details := "connection error"
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			details = "timeout"
		}
		return delivery.ChatAccepted{}, 0, &delivery.SendError{Reason: delivery.ReasonTransient, Details: details, Err: err}
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // keep the connection reusable
		_ = resp.Body.Close()
	}()

	switch code := resp.StatusCode; {
	case code == http.StatusOK:
	case code == http.StatusUnauthorized:
		return delivery.ChatAccepted{}, 0, &delivery.SendError{Permanent: true, Reason: delivery.ReasonServiceRefused, Details: "BAD_TOKEN",
			Err: errors.New("chat: provider answered HTTP 401: check the provider token")}
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
		wait := retryAfter(resp.Header.Get("Retry-After"))
		return delivery.ChatAccepted{}, wait, &delivery.SendError{Reason: delivery.ReasonTransient, Details: "HTTP " + strconv.Itoa(code),
			RetryAfter: wait, Err: fmt.Errorf("chat: provider answered HTTP %d", code)}
	case code >= 400 && code < 500:
		return delivery.ChatAccepted{}, 0, &delivery.SendError{Permanent: true, Reason: delivery.ReasonRejected, Details: "HTTP " + strconv.Itoa(code),
			Err: fmt.Errorf("chat: provider answered HTTP %d", code)}
	default:
		return delivery.ChatAccepted{}, 0, &delivery.SendError{Reason: delivery.ReasonTransient, Details: "HTTP " + strconv.Itoa(code),
			Err: fmt.Errorf("chat: unexpected HTTP %d", code)}
	}

	buf := c.reads.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxResponse {
			buf.Reset()
			c.reads.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, maxResponse)); err != nil {
		details := "connection error"
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			details = "timeout"
		}
		return delivery.ChatAccepted{}, 0, &delivery.SendError{Reason: delivery.ReasonTransient, Details: details, Err: fmt.Errorf("chat: reading the response: %w", err)}
	}
	var r sendResponse
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil || r.Status == nil {
		if err == nil {
			err = errors.New("no status")
		}
		return delivery.ChatAccepted{}, 0, &delivery.SendError{Reason: delivery.ReasonTransient, Details: "malformed response", Err: fmt.Errorf("chat: response: %w", err)}
	}
	if r.Seq != 0 && r.Seq != seq {
		return delivery.ChatAccepted{}, 0, &delivery.SendError{Reason: delivery.ReasonTransient, Details: "malformed response",
			Err: fmt.Errorf("chat: response for seq %d to the request of seq %d", r.Seq, seq)}
	}
	switch st := *r.Status; st {
	case StatusSuccess:
		return delivery.ChatAccepted{ProviderID: string(r.MessageToken)}, 0, nil
	case StatusAlreadySent:
		return delivery.ChatAccepted{ProviderID: string(r.MessageToken), AlreadySent: true}, 0, nil
	default:
		se := StatusError(st)
		if r.StatusMessage != "" && r.StatusMessage != se.Details {
			se.Err = fmt.Errorf("chat: provider: %s", r.StatusMessage)
		}
		return delivery.ChatAccepted{}, 0, se
	}
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryAfter parses a Retry-After header given in seconds (0 when absent
// or a date).
func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}
