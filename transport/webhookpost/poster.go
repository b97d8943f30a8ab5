// Package webhookpost sends Herald's webhook requests over HTTP: the
// webhook.Poster of herald serve. Its dialer checks every address it
// connects to against the URL policy, so a host name that resolves to
// the server's own network (or is changed to later) is refused at
// sending time as it is at registration. Redirects are not followed: a
// 3xx answer is a failed attempt, tried again later.
package webhookpost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

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
// policy does not allow.
var ErrForbiddenAddress = errors.New("webhookpost: address not allowed")

// New returns a Poster for cfg.
func New(cfg Config) *Poster {
	if cfg.MaxConnsPerHost <= 0 {
		cfg.MaxConnsPerHost = 64
	}
	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
			}
			if !allowed(cfg.URLs, ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrForbiddenAddress, ap.Addr())
			}
			return nil
		},
	}
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

// allowed reports whether the policy lets a request connect to a.
func allowed(p webhook.URLPolicy, a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case webhook.Public(a):
		return true
	case p.AllowPrivate:
		return true
	case p.AllowLoopbackHTTP:
		return a.IsLoopback()
	}
	return false
}

// Post implements webhook.Poster.
func (p *Poster) Post(ctx context.Context, url string, header map[string]string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("webhook request: %w", err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := p.client.Do(req)
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
