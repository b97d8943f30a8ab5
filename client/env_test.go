package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/client/internal/contract"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/transport/webhookpost"
	"github.com/heraldhq/herald/webhook"
)

// adminToken is the admin token of the test servers.
const adminToken = "client-test-admin-token"

// serverConfig tunes a test server.
type serverConfig struct {
	limits campaign.Limits
}

// testServer is a real Herald (memstore, a fake SMSC that delivers every
// SMS, a fake chat provider that accepts every message, webhooks to
// loopback allowed) behind its real HTTP handler on a real listener, with
// one company set up: active, with an API key, the approved SMS sender
// "ACME" and a chat service.
type testServer struct {
	URL    string
	Herald *herald.Herald
	Store  *memstore.Store

	CompanyID     messaging.ID
	APIKey        string
	SenderID      int64
	ChatServiceID int64

	srv  *httptest.Server
	stop context.CancelFunc
	done chan error
}

// startServer starts a test server; Close stops it.
func startServer(cfg serverConfig) (*testServer, error) {
	st := memstore.New()
	urls := webhook.URLPolicy{AllowLoopbackHTTP: true}
	h, err := herald.New(herald.Config{
		Store:         st,
		SMS:           func(r delivery.Reporter) (delivery.SMSSender, error) { return &fakeSMSC{receipts: r.Receipt}, nil },
		Chat:          func(delivery.Reporter) (delivery.ChatSender, error) { return fakeChat{}, nil },
		Limits:        cfg.limits,
		Webhooks:      webhook.Config{URLs: urls},
		WebhookPoster: webhookpost.New(webhookpost.Config{URLs: urls}),
	})
	if err != nil {
		return nil, err
	}
	handler, err := server.New(server.Config{Herald: h, AdminToken: adminToken})
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	ts := &testServer{Herald: h, Store: st, srv: httptest.NewServer(handler), stop: stop, done: make(chan error, 1)}
	ts.URL = ts.srv.URL
	go func() { ts.done <- h.Run(ctx) }()
	if err := ts.setUp(context.Background()); err != nil {
		ts.Close()
		return nil, err
	}
	return ts, nil
}

// setUp makes the server's company.
func (ts *testServer) setUp(ctx context.Context) error {
	acc := ts.Herald.Accounts()
	co, err := acc.CreateCompany(ctx, "Acme")
	if err != nil {
		return err
	}
	ts.CompanyID = co.ID
	if err := acc.SetCompanyActive(ctx, co.ID, true); err != nil {
		return err
	}
	if ts.APIKey, err = acc.GenerateAPIKey(ctx, co.ID); err != nil {
		return err
	}
	sd, err := acc.RegisterSMSSender(ctx, co.ID, "ACME")
	if err != nil {
		return err
	}
	ts.SenderID = sd.ID
	if err := acc.ApproveSMSSender(ctx, sd.ID); err != nil {
		return err
	}
	cs, err := acc.AddChatService(ctx, co.ID, "Acme Brand", "svc-acme")
	if err != nil {
		return err
	}
	ts.ChatServiceID = cs.ID
	return nil
}

// Close stops the server and Herald.
func (ts *testServer) Close() {
	ts.srv.Close()
	ts.stop()
	<-ts.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = ts.Herald.Close(ctx)
}

// fakeSMSC accepts every SMS and reports it delivered right after.
type fakeSMSC struct {
	receipts delivery.ReceiptHandler
	n        atomic.Int64
}

func (f *fakeSMSC) Send(_ context.Context, sms delivery.SMS) (delivery.SMSResult, error) {
	id := fmt.Sprintf("smsc-%d", f.n.Add(1))
	go func() {
		_ = f.receipts(context.Background(), delivery.Receipt{ProviderID: id, State: delivery.StateDelivered, Err: "000", At: time.Now()})
	}()
	return delivery.SMSResult{PartIDs: []string{id}}, nil
}

// fakeChat accepts every chat message; nothing reports them further.
type fakeChat struct{}

func (fakeChat) SendChat(_ context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	return delivery.ChatAccepted{ProviderID: "tok-" + m.MessageID.String()}, nil
}

// env is a test server and a client of its company.
type env struct {
	t testing.TB
	*testServer
	c *client.Client
	// calls counts the client's requests, by "METHOD path" and status.
	calls *callLog
	// contract checks every exchange of the env's clients against the
	// OpenAPI document.
	contract *contract.Checker
}

// newEnv starts a test server for t, and a client of its company with
// retries off (tests that retry make their own).
func newEnv(t testing.TB, cfgs ...func(*serverConfig)) *env {
	t.Helper()
	var cfg serverConfig
	for _, f := range cfgs {
		f(&cfg)
	}
	ts, err := startServer(cfg)
	require.NoError(t, err)
	t.Cleanup(ts.Close)
	checker, err := contract.Load()
	require.NoError(t, err)
	e := &env{t: t, testServer: ts, calls: &callLog{}, contract: checker}
	e.c = e.client(client.WithRetries(0))
	return e
}

// client returns a client of the env's company whose requests are logged
// in e.calls and checked against the OpenAPI document.
func (e *env) client(opts ...client.Option) *client.Client {
	e.t.Helper()
	opts = append([]client.Option{client.WithHTTPClient(&http.Client{Transport: e.transport(nil)})}, opts...)
	c, err := client.New(e.URL, e.APIKey, opts...)
	require.NoError(e.t, err)
	return c
}

// transport is the transport of the env's clients: exchanges checked
// against the OpenAPI document, then logged in e.calls; after, when not
// nil, sees each answer before the client does.
func (e *env) transport(after func(*http.Response)) http.RoundTripper {
	return e.calls.wrap(e.contract.Transport(e.t, http.DefaultTransport), after)
}

// callLog records the requests a client made and their statuses.
type callLog struct {
	mu    sync.Mutex
	calls []call
}

type call struct {
	method, path string
	status       int
}

// wrap returns a transport that logs every exchange of rt, and calls
// after (when not nil) with each answer before the client sees it.
func (l *callLog) wrap(rt http.RoundTripper, after func(*http.Response)) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return resp, err
		}
		l.mu.Lock()
		l.calls = append(l.calls, call{r.Method, r.URL.Path, resp.StatusCode})
		l.mu.Unlock()
		if after != nil {
			after(resp)
		}
		return resp, nil
	})
}

// count returns how many requests went to method and path.
func (l *callLog) count(method, path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c.method == method && c.path == path {
			n++
		}
	}
	return n
}

// statuses returns the statuses answered to method and path, in order.
func (l *callLog) statuses(method, path string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, c := range l.calls {
		if c.method == method && c.path == path {
			out = append(out, c.status)
		}
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// ctx returns a context for one test step.
func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// apiError asserts that err is a *client.Error with status and name, and
// returns it.
func apiError(t testing.TB, err error, status int, name string) *client.Error {
	t.Helper()
	require.Error(t, err)
	var e *client.Error
	require.True(t, errors.As(err, &e), "want a *client.Error, got %T: %v", err, err)
	require.Equal(t, status, e.StatusCode, "error: %v", err)
	require.Equal(t, name, e.Name, "error: %v", err)
	require.NotEmpty(t, e.Message)
	require.NotEmpty(t, e.RequestID, "every answer carries X-Request-Id")
	return e
}

// invalid asserts a 400 "Bad Request" whose validationErrors name field,
// and returns the error.
func invalid(t testing.TB, err error, field string) *client.Error {
	t.Helper()
	e := apiError(t, err, http.StatusBadRequest, "Bad Request")
	require.Contains(t, e.ValidationErrors, field, "validationErrors: %v", e.ValidationErrors)
	require.NotEmpty(t, e.ValidationErrors[field])
	return e
}

// eventually polls cond every 10 ms until it is true, failing the test
// after 15 seconds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCampaign polls a campaign until ok tells it is as wanted, and
// returns it.
func (e *env) waitCampaign(id string, what string, ok func(*client.CampaignDetail) bool) *client.CampaignDetail {
	e.t.Helper()
	var c *client.CampaignDetail
	eventually(e.t, what, func() bool {
		var err error
		c, err = e.c.GetCampaign(e.ctx(), id)
		require.NoError(e.t, err)
		return ok(c)
	})
	return c
}

// waitStatus polls a campaign until it has status st.
func (e *env) waitStatus(id string, st client.CampaignStatus) *client.CampaignDetail {
	e.t.Helper()
	return e.waitCampaign(id, "campaign "+string(st), func(c *client.CampaignDetail) bool { return c.Status == st })
}

// smsTemplate creates an SMS template from the company's sender.
func (e *env) smsTemplate(name, content string) *client.Template {
	e.t.Helper()
	tpl, err := e.c.CreateSMSTemplate(e.ctx(), client.SMSTemplateInput{Name: name, TemplateContent: content, SMSSenderID: e.SenderID})
	require.NoError(e.t, err)
	return tpl
}

// phone returns the i-th test number.
func phone(i int) string { return fmt.Sprintf("+4477009%05d", i) }

// digits returns the i-th test number normalised.
func digits(i int) string { return phone(i)[1:] }

// recipients returns n recipients, numbers from phone(from).
func recipients(from, n int) []client.Recipient {
	out := make([]client.Recipient, n)
	for i := range out {
		out[i] = client.Recipient{PhoneNumber: phone(from + i)}
	}
	return out
}
