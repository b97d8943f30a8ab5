// Package media is the HTTP implementation of template.MediaProber: it
// checks that a media URL of a chat template answers an HTTP HEAD request,
// and reports its status, size and type.
//
// Only https URLs are probed, redirects included; a refused URL is never
// requested. Redirects are followed up to Config.MaxRedirects. A server
// that refuses HEAD (405 Method Not Allowed or 501 Not Implemented) is
// asked again with GET, whose body is closed unread.
//
// A template's URLs are a tenant's choice, so every connection goes
// through the egress guard: an address the policy does not allow
// (Config.Addresses; by default every address that is not globally
// reachable) is refused before any packet is sent, whether the URL names
// it, a host name resolves to it, or a redirect leads to it. The error
// then wraps egress.ErrNotAllowed. No proxy is used.
package media

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/template"
)

// Defaults of Config.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultMaxRedirects = 5
	DefaultUserAgent    = "Herald-MediaProbe/1.0"
)

// ErrNotHTTPS is returned for a URL, or a redirect target, that is not an
// absolute https URL.
var ErrNotHTTPS = errors.New("not an https URL")

// ErrTooManyRedirects is returned when a probe meets more redirects than
// Config.MaxRedirects.
var ErrTooManyRedirects = errors.New("too many redirects")

// Config configures a Prober. The zero value gives the defaults.
type Config struct {
	// Timeout bounds one probe, redirects and the GET retry included.
	// Zero means DefaultTimeout (10 s, the API's reachability limit).
	Timeout time.Duration
	// MaxRedirects is how many redirects one probe follows. Zero means
	// DefaultMaxRedirects (5); a negative value follows none.
	MaxRedirects int
	// Addresses says which addresses probes may connect to. The zero
	// value allows globally reachable addresses only.
	Addresses egress.Policy
	// RootCAs verifies the servers' certificates. Nil means the system's
	// roots.
	RootCAs *x509.CertPool
	// UserAgent is sent with every request. Empty means DefaultUserAgent.
	UserAgent string
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRedirects == 0 {
		c.MaxRedirects = DefaultMaxRedirects
	}
	if c.MaxRedirects < 0 {
		c.MaxRedirects = 0
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	return c
}

// Prober probes media URLs over HTTP. It is safe for concurrent use.
type Prober struct {
	client    *http.Client
	addresses egress.Policy
	timeout   time.Duration
	userAgent string
}

var _ template.MediaProber = (*Prober)(nil)

// New returns a Prober configured by cfg.
func New(cfg Config) *Prober {
	cfg = cfg.WithDefaults()
	dialer := cfg.Addresses.Dialer(net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second})
	client := &http.Client{Transport: &http.Transport{
		DialContext:         dialer.DialContext,
		Proxy:               nil, // a proxy would be checked instead of the media host
		TLSClientConfig:     &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: cfg.Timeout,
		ForceAttemptHTTP2:   true,
		DisableKeepAlives:   true, // probes are rare and go to many hosts
	}}
	p := &Prober{client: client, addresses: cfg.Addresses, timeout: cfg.Timeout, userAgent: cfg.UserAgent}
	maxRedirects := cfg.MaxRedirects
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return fmt.Errorf("after %d: %w", maxRedirects, ErrTooManyRedirects)
		}
		if err := p.checkURL(req.URL); err != nil {
			return fmt.Errorf("redirect to %s: %w", redact(req.URL), err)
		}
		return nil
	}
	return p
}

// Probe sends a HEAD request to rawURL and reports the final response's
// status, Content-Length (-1 when not given) and Content-Type. Any status
// is a result, not an error; errors are a refused URL (ErrNotHTTPS), a
// network failure, a timeout (context.DeadlineExceeded in the chain) and
// ErrTooManyRedirects.
func (p *Prober) Probe(ctx context.Context, rawURL string) (template.MediaInfo, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return template.MediaInfo{}, fmt.Errorf("probe media: %w: %v", ErrNotHTTPS, err)
	}
	if err := p.checkURL(u); err != nil {
		return template.MediaInfo{}, fmt.Errorf("probe media %s: %w", redact(u), err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()

	info, err := p.do(ctx, http.MethodHead, u)
	if err == nil && (info.StatusCode == http.StatusMethodNotAllowed || info.StatusCode == http.StatusNotImplemented) {
		info, err = p.do(ctx, http.MethodGet, u)
	}
	if err != nil {
		return template.MediaInfo{}, fmt.Errorf("probe media %s: %w", redact(u), err)
	}
	return info, nil
}

// do sends one request and closes its response at once.
func (p *Prober) do(ctx context.Context, method string, u *url.URL) (template.MediaInfo, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return template.MediaInfo{}, fmt.Errorf("new %s request: %w", method, err)
	}
	req.Header.Set("User-Agent", p.userAgent)
	req.Header.Set("Accept", "*/*")
	resp, err := p.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named by the caller's wrapping
		}
		return template.MediaInfo{}, fmt.Errorf("%s: %w", method, err)
	}
	_ = resp.Body.Close() // a HEAD body is empty; a GET body is not wanted
	return template.MediaInfo{
		StatusCode:    resp.StatusCode,
		ContentLength: resp.ContentLength,
		ContentType:   resp.Header.Get("Content-Type"),
	}, nil
}

// checkURL accepts absolute https URLs with a host, and refuses at once a
// host written as an address the policy does not allow (host names are
// checked by the dialer, once resolved).
func (p *Prober) checkURL(u *url.URL) error {
	if !strings.EqualFold(u.Scheme, "https") || u.Host == "" {
		return ErrNotHTTPS
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	port := uint16(443)
	if ps := u.Port(); ps != "" {
		n, err := strconv.ParseUint(ps, 10, 16)
		if err != nil {
			return ErrNotHTTPS
		}
		port = uint16(n)
	}
	if err := p.addresses.Check(netip.AddrPortFrom(a, port)); err != nil {
		return fmt.Errorf("host: %w", err)
	}
	return nil
}

// redact names a URL in errors without its credentials, query or fragment,
// which may hold secrets such as signed-URL tokens.
func redact(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return r.String()
}
