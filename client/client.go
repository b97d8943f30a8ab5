package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heraldhq/herald/client/internal/rest"
)

// Defaults of the options.
const (
	// DefaultRetries is how many times a 429 is sent again unless
	// WithRetries says otherwise.
	DefaultRetries = 3
	// DefaultMaxRetryWait is the longest wait before a retry unless
	// WithMaxRetryWait says otherwise: a 429 asking for longer is returned
	// at once.
	DefaultMaxRetryWait = time.Minute
	// DefaultUserAgent is the User-Agent sent unless WithUserAgent says
	// otherwise.
	DefaultUserAgent = "herald-go-client/1"
)

// Client calls the company API of a Herald server (/api/v1) with one
// company's API key. It is safe for concurrent use.
type Client struct {
	rc *rest.Caller
}

// Option configures a Client (and an admin.Client).
type Option func(*rest.Config)

// WithHTTPClient sends the requests with hc instead of
// http.DefaultClient: for its timeouts, transport or proxies.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *rest.Config) {
		if hc != nil {
			c.HTTPClient = hc
		}
	}
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option { return func(c *rest.Config) { c.UserAgent = ua } }

// WithRetries sets how many times a request answered 429 (the company's
// pending capacity is used up) is sent again, after the wait the answer
// asks for (its Retry-After header or retryAfterSeconds field). A wait
// that would pass the context's deadline, or be longer than the maximum
// (WithMaxRetryWait), is not made: the 429 is returned at once, as a
// *Error with RetryAfter. 0 turns retries off. Default DefaultRetries.
//
// Only 429 answers are retried: nothing of such a request was done, and it
// carries the same Idempotency-Key, if any, every time.
func WithRetries(n int) Option { return func(c *rest.Config) { c.Retries = max(n, 0) } }

// WithMaxRetryWait sets the longest wait before retrying a 429; a 429
// asking for longer is returned at once. 0: no limit but the context's
// deadline. Default DefaultMaxRetryWait.
func WithMaxRetryWait(d time.Duration) Option {
	return func(c *rest.Config) { c.MaxRetryWait = max(d, 0) }
}

// config returns the configuration opts make.
func config(opts []Option) rest.Config {
	cfg := rest.Config{HTTPClient: http.DefaultClient, UserAgent: DefaultUserAgent, Retries: DefaultRetries, MaxRetryWait: DefaultMaxRetryWait}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	cfg.NewError = asError
	return cfg
}

// New returns a Client of the server at baseURL (its root, such as
// http://127.0.0.1:8080; a URL ending with /api/v1 is accepted too) that
// authenticates with apiKey (the X-API-Key header).
func New(baseURL, apiKey string, opts ...Option) (*Client, error) {
	if apiKey == "" {
		return nil, errors.New("herald: an API key is required")
	}
	rc, err := rest.New(baseURL, "/api/v1", http.Header{"X-Api-Key": {apiKey}}, config(opts))
	if err != nil {
		return nil, err
	}
	return &Client{rc: rc}, nil
}

// WithIdempotencyKey returns a context whose POST requests carry key as
// their Idempotency-Key header (1 to 255 printable ASCII characters).
// Sending the same request again with the same key within 24 hours gets
// the first answer again and does nothing more, even when the first answer
// was lost; the same key with another request is a 422. Use one key per
// logical operation:
//
//	ctx := client.WithIdempotencyKey(ctx, "otp-4711")
//	res, err := c.SendSMS(ctx, client.DirectSMS{...}) // safe to call again with ctx
//
// Every POST of the API takes a key; other methods ignore it.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return rest.WithIdempotencyKey(ctx, key)
}

// do sends a JSON request and decodes its answer into out.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	_, err := c.rc.Do(ctx, method, path, query, in, out)
	return err
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// Page is one page of a list.
type Page[T any] struct {
	// Items are the page's entries.
	Items []T
	// TotalCount is how many entries match, on every page; TotalPages how
	// many pages they take (0 when none match).
	TotalCount int
	// Page is this page's number, from 1; PageSize its size.
	Page, PageSize, TotalPages int
}

// PageOptions selects a page: Page from 1 (0: the first) and PageSize
// from 1 to 100 (0: the server's default, 20). An iterator (the All...
// methods) starts at Page and asks for pages of PageSize.
type PageOptions struct {
	Page, PageSize int
}

// values sets the page parameters of a query.
func (p PageOptions) values(q url.Values) url.Values {
	if q == nil {
		q = url.Values{}
	}
	if p.Page != 0 {
		q.Set("page", strconv.Itoa(p.Page))
	}
	if p.PageSize != 0 {
		q.Set("pageSize", strconv.Itoa(p.PageSize))
	}
	return q
}

// listPage gets one page of a list whose entries are under key.
func listPage[T any](ctx context.Context, c *Client, path, key string, q url.Values) (*Page[T], error) {
	var items []T
	m, err := c.rc.List(ctx, path, key, q, &items)
	if err != nil {
		return nil, err
	}
	return &Page[T]{Items: items, TotalCount: m.TotalCount, Page: m.Page, PageSize: m.PageSize, TotalPages: m.TotalPages}, nil
}

// all walks the pages fetch gives, from page start (0: the first), until
// the entries yielded reach the total count (or a page comes back empty),
// and stops at the first error, which it yields.
func all[T any](start int, fetch func(page int) (*Page[T], error)) iter.Seq2[T, error] {
	return rest.Walk(start, func(page int) ([]T, rest.PageMeta, error) {
		p, err := fetch(page)
		if err != nil {
			return nil, rest.PageMeta{}, err
		}
		return p.Items, rest.PageMeta{TotalCount: p.TotalCount, Page: p.Page, PageSize: p.PageSize, TotalPages: p.TotalPages}, nil
	})
}
