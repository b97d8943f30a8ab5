// Package webhookpost sends Herald's webhook requests over HTTP: the
// webhook.Poster of herald serve. It dials through the egress guard with
// the URL policy's addresses (URLPolicy.Egress), so a host name that
// resolves to the server's own network (or is changed to later) is
// refused at sending time, before any connection, as it is at
// registration. No proxy is used. Redirects are not followed: a 3xx
// answer is a failed attempt, tried again later.
package webhookpost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/webhook"
)

// Config configures a Poster. The zero value sends to public addresses
// only.
type Config struct {
	// URLs says which addresses requests may go to: the same policy as
	// endpoint registration.
	URLs webhook.URLPolicy
	// MaxConnsPerHost bounds the connections to one host. Default 64.
	MaxConnsPerHost int
}

// Poster is a webhook.Poster over net/http.
type Poster struct {
	client *http.Client
}

// maxAnswer is how much of an answer's body is read (and discarded), so
// that the connection can be used again.
const maxAnswer = 64 << 10

// ErrForbiddenAddress means a request's host resolved to an address the
// policy does not allow. It is egress.ErrNotAllowed.
var ErrForbiddenAddress = egress.ErrNotAllowed

// New returns a Poster for cfg.
func New(cfg Config) *Poster {
	if cfg.MaxConnsPerHost <= 0 {
		cfg.MaxConnsPerHost = 64
	}
	dialer := cfg.URLs.Egress().Dialer(net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second})
	tr := &http.Transport{
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: cfg.MaxConnsPerHost,
		MaxConnsPerHost:     cfg.MaxConnsPerHost,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		// No proxy from the environment: a proxy would make the address
		// checks apply to it rather than to the endpoint.
		Proxy: nil,
	}
	return &Poster{client: &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Post implements webhook.Poster. A request made inside a span (a traced
// attempt) carries its W3C trace context (traceparent).
func (p *Poster) Post(ctx context.Context, url string, header map[string]string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("webhook request: %w", err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if trace.SpanContextFromContext(ctx).IsValid() {
		// The attempt's span: the endpoint may join its trace.
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	res, err := p.client.Do(req)
	if errors.Is(err, ErrForbiddenAddress) {
		// The company reads attempts' errors: it learns that the host is
		// refused, not which internal address its name resolves to.
		return 0, fmt.Errorf("webhook request: %w: the host is not a public internet address", ErrForbiddenAddress)
	}
	if err != nil {
		return 0, fmt.Errorf("webhook request: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxAnswer))
	_ = res.Body.Close()
	return res.StatusCode, nil
}

// Close closes the idle connections.
func (p *Poster) Close() {
	p.client.CloseIdleConnections()
}
