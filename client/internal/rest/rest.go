// Package rest is the request plumbing shared by package client (the
// company API, /api/v1) and package client/admin (the operators' API,
// /admin/v1): building requests, JSON bodies, the retries of 429 answers
// and the failures that packages client and admin turn into *client.Error.
package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Limits of requests.
const (
	// fallbackWait is the wait of a 429 that tells none.
	fallbackWait = time.Second
	// maxErrorBody is how much of a failed answer's body is read.
	maxErrorBody = 1 << 20
)

// Config is what the options of packages client and admin set; package
// client has the defaults.
type Config struct {
	// HTTPClient sends the requests; nil: http.DefaultClient.
	HTTPClient *http.Client
	// UserAgent is sent with every request when not empty.
	UserAgent string
	// Retries is how many times a 429 is sent again; 0: never.
	Retries int
	// MaxRetryWait is the longest wait before a retry; a 429 asking for
	// longer is returned. 0: no limit but the context's deadline.
	MaxRetryWait time.Duration
	// NewError turns a failure into the error callers get: packages
	// client and admin make it a *client.Error. Nil: the *Failure itself.
	NewError func(*Failure) error
}

// Failure is an answer that is not a success, as received.
type Failure struct {
	Method, Path string // the request: method, and path without the query
	Status       int
	Header       http.Header
	Body         []byte
	// RetryAfter is the wait the answer asked for: its Retry-After header,
	// or the retryAfterSeconds field of its body; 0 when neither.
	RetryAfter time.Duration
}

// Error implements error; packages client and admin return a
// *client.Error instead (see Config.NewError).
func (f *Failure) Error() string {
	return fmt.Sprintf("herald: %s %s: %d %s", f.Method, f.Path, f.Status, http.StatusText(f.Status))
}

// idempotencyKey is the context key of an Idempotency-Key.
type idempotencyKey struct{}

// WithIdempotencyKey returns ctx carrying an Idempotency-Key for the POST
// requests made with it.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// IdempotencyKey returns the key ctx carries, if any.
func IdempotencyKey(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(idempotencyKey{}).(string)
	return k, ok
}

// Caller makes the requests of one API (a base URL and its credentials).
type Caller struct {
	base   string      // scheme://host[/path]/prefix, without a trailing slash
	root   string      // the path of base, for messages
	header http.Header // credentials, sent with every request
	cfg    Config
}

// New returns a Caller for the API under prefix ("/api/v1") of the server
// at baseURL (its root; a baseURL already ending with prefix is taken as
// it is), sending header with every request.
func New(baseURL, prefix string, header http.Header, cfg Config) (*Caller, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("herald: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("herald: base URL %q: want http:// or https:// and a host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("herald: base URL %q: no query or fragment expected", baseURL)
	}
	root := strings.TrimRight(u.EscapedPath(), "/")
	if !strings.HasSuffix(root, prefix) {
		root += prefix
	}
	u.Path, u.RawPath = "", ""
	base := u.String() + root
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.NewError == nil {
		cfg.NewError = func(f *Failure) error { return f }
	}
	return &Caller{base: base, root: root, header: header.Clone(), cfg: cfg}, nil
}

// Do sends a request to path (escaped, under the prefix) with query and,
// when in is not nil, in as its JSON body, and decodes a success's JSON
// body into out when out is not nil. It returns the status of the answer.
// A 429 is retried as the Config says; an answer that is not a success is
// returned as Config.NewError of its Failure; a transport error is wrapped with
// the method and path.
func (c *Caller) Do(ctx context.Context, method, path string, query url.Values, in, out any) (int, error) {
	resp, err := c.send(ctx, method, path, query, in, "application/json")
	if err != nil {
		return 0, err
	}
	defer drain(resp.Body)
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("herald: %s %s: decoding the answer: %w", method, c.root+path, err)
	}
	return resp.StatusCode, nil
}

// Open sends a request without a body like Do, asking for the media type
// accept, and returns the body of its success, which the caller closes.
func (c *Caller) Open(ctx context.Context, method, path string, query url.Values, accept string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, method, path, query, nil, accept)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// send sends the request, retrying 429s, and returns a success's answer.
func (c *Caller) send(ctx context.Context, method, path string, query url.Values, in any, accept string) (*http.Response, error) {
	target := c.base + path
	path = c.root + path // in messages: the whole path
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, fmt.Errorf("herald: %s %s: encoding the request: %w", method, path, err)
		}
	}
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	for attempt := 0; ; attempt++ {
		req, err := c.request(ctx, method, target, body, accept)
		if err != nil {
			return nil, fmt.Errorf("herald: %s %s: %w", method, path, err)
		}
		resp, err := c.cfg.HTTPClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("herald: %s %s: %w", method, path, err)
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		drain(resp.Body)
		f := &Failure{Method: method, Path: path, Status: resp.StatusCode, Header: resp.Header, Body: raw,
			RetryAfter: retryAfter(resp.Header, raw, time.Now())}
		apiErr := c.cfg.NewError(f)
		if resp.StatusCode != http.StatusTooManyRequests || attempt >= c.cfg.Retries {
			return nil, apiErr
		}
		wait := f.RetryAfter
		if wait <= 0 {
			wait = fallbackWait
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w (not retried: %w)", apiErr, err)
		}
		if !c.mayWait(ctx, wait) {
			return nil, apiErr
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (gave up waiting %s to retry: %w)", apiErr, wait, ctx.Err())
		case <-t.C:
		}
	}
}

// mayWait tells whether a retry may wait d: within MaxRetryWait and
// before the context's deadline.
func (c *Caller) mayWait(ctx context.Context, d time.Duration) bool {
	if c.cfg.MaxRetryWait > 0 && d > c.cfg.MaxRetryWait {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) > d
}

// request builds one attempt of a request.
func (c *Caller) request(ctx context.Context, method, target string, body []byte, accept string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.cfg.UserAgent != "" {
		req.Header.Set("User-Agent", c.cfg.UserAgent)
	}
	if key, ok := IdempotencyKey(ctx); ok && method == http.MethodPost {
		req.Header.Set("Idempotency-Key", key)
	}
	return req, nil
}

// RetryAfter reads the wait an answer asks for: its Retry-After header (in
// seconds or as an HTTP date, counted from now), else the
// retryAfterSeconds field of its JSON body; 0 when neither.
func RetryAfter(h http.Header, body []byte, now time.Time) time.Duration {
	return retryAfter(h, body, now)
}

func retryAfter(h http.Header, body []byte, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0)
		}
	}
	var b struct {
		RetryAfterSeconds float64 `json:"retryAfterSeconds"`
	}
	if json.Unmarshal(body, &b) == nil && b.RetryAfterSeconds > 0 {
		return time.Duration(b.RetryAfterSeconds * float64(time.Second))
	}
	return 0
}

// drain reads what is left of a body (a little) and closes it, so that the
// connection can be used again.
func drain(rc io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, 64<<10))
	_ = rc.Close()
}

// PageMeta is the paging part of a list answer.
type PageMeta struct {
	TotalCount, Page, PageSize, TotalPages int
}

// List gets one page of a list whose entries are under key, decoding them
// into items (a pointer to a slice).
func (c *Caller) List(ctx context.Context, path, key string, query url.Values, items any) (PageMeta, error) {
	var raw map[string]json.RawMessage
	if _, err := c.Do(ctx, http.MethodGet, path, query, nil, &raw); err != nil {
		return PageMeta{}, err
	}
	var m PageMeta
	for _, f := range []struct {
		name string
		dst  any
	}{{key, items}, {"totalCount", &m.TotalCount}, {"page", &m.Page}, {"pageSize", &m.PageSize}, {"totalPages", &m.TotalPages}} {
		v, ok := raw[f.name]
		if !ok {
			return PageMeta{}, fmt.Errorf("herald: GET %s: the answer has no %s", c.root+path, f.name)
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return PageMeta{}, fmt.Errorf("herald: GET %s: decoding %s: %w", c.root+path, f.name, err)
		}
	}
	return m, nil
}

// Walk iterates over the entries of the pages fetch gives, from page start
// (0: the first), until the entries reach the total count (or a page comes
// back empty), and stops at the first error, which it yields.
func Walk[T any](start int, fetch func(page int) ([]T, PageMeta, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		first := max(start, 1)
		seen := 0
		for page := first; ; page++ {
			items, m, err := fetch(page)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			seen += len(items)
			if len(items) == 0 || (first-1)*m.PageSize+seen >= m.TotalCount {
				return
			}
		}
	}
}
