package admin_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/client/admin"
	"github.com/heraldhq/herald/client/internal/contract"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/transport/smsroute"
)

// adminToken is the admin token of the test servers.
const adminToken = "admin-test-token"

// testServer is a real Herald on a memstore whose SMS go through the
// routing SMS sender of herald serve (transport/smsroute), reading the
// connectors and routes of the admin API every 50 ms, with fake SMPP
// clients that accept every SMS; behind the real HTTP handler, with the
// admin API on, on a real listener. It has no company.
type testServer struct {
	URL    string
	Herald *herald.Herald

	srv    *httptest.Server
	router atomic.Pointer[smsroute.Router]
	stop   context.CancelFunc
	done   chan error
}

// startServer starts a test server; Close stops it.
func startServer() (*testServer, error) {
	st := memstore.New()
	routes, err := routing.New(routing.Config{Store: st})
	if err != nil {
		return nil, err
	}
	ts := &testServer{done: make(chan error, 1)}
	h, err := herald.New(herald.Config{
		Store: st,
		SMS: func(delivery.Reporter) (delivery.SMSSender, error) {
			r, err := smsroute.New(context.Background(), smsroute.Config{Source: routes, Reload: 50 * time.Millisecond,
				Dial: func(c routing.Connector) (smsroute.Client, error) { return &fakeSMPP{binds: c.Binds}, nil }})
			ts.router.Store(r)
			return r, err
		},
	})
	if err != nil {
		return nil, err
	}
	ts.Herald = h
	handler, err := server.New(server.Config{Herald: h, AdminToken: adminToken})
	if err != nil {
		return nil, err
	}
	ts.srv = httptest.NewServer(handler)
	ts.URL = ts.srv.URL
	ctx, stop := context.WithCancel(context.Background())
	ts.stop = stop
	go func() { ts.done <- h.Run(ctx) }()
	return ts, nil
}

// Close stops the server, Herald and the router.
func (ts *testServer) Close() {
	ts.srv.Close()
	ts.stop()
	<-ts.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = ts.Herald.Close(ctx)
	if r := ts.router.Load(); r != nil {
		_ = r.Close(ctx)
	}
}

// fakeSMPP is the client of one connector: always bound, accepting every
// SMS, never sending a receipt.
type fakeSMPP struct {
	binds int
	sent  atomic.Uint64
}

func (f *fakeSMPP) Send(context.Context, delivery.SMS) (delivery.SMSResult, error) {
	return delivery.SMSResult{PartIDs: []string{fmt.Sprintf("id-%d", f.sent.Add(1))}}, nil
}

func (f *fakeSMPP) Up() bool { return true }

func (f *fakeSMPP) State() routing.State {
	return routing.State{Binds: f.binds, BindsUp: f.binds, Submits: f.sent.Load()}
}

func (f *fakeSMPP) Close(context.Context) error { return nil }

// env is a test server and an admin client of it.
type env struct {
	t testing.TB
	*testServer
	a  *admin.Client
	hc *http.Client // checks exchanges against the OpenAPI document
}

// newEnv starts a test server for t, and an admin client of it whose
// exchanges are checked against the OpenAPI document.
func newEnv(t testing.TB) *env {
	t.Helper()
	ts, err := startServer()
	require.NoError(t, err)
	t.Cleanup(ts.Close)
	checker, err := contract.Load()
	require.NoError(t, err)
	e := &env{t: t, testServer: ts, hc: &http.Client{Transport: checker.Transport(t, http.DefaultTransport)}}
	e.a, err = admin.New(ts.URL, adminToken, client.WithRetries(0), client.WithHTTPClient(e.hc))
	require.NoError(t, err)
	return e
}

// ctx returns a context for one test step.
func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// company is a company onboarded through the admin API.
type company struct {
	id     string
	key    string
	sender int64
	c      *client.Client
}

// onboard sets a company up through the admin API: created, activated,
// given an API key and an approved sender; with a client of its key.
func (e *env) onboard(name, senderID string) company {
	e.t.Helper()
	ctx := e.ctx()
	co, err := e.a.CreateCompany(ctx, name)
	require.NoError(e.t, err)
	_, err = e.a.ActivateCompany(ctx, co.ID)
	require.NoError(e.t, err)
	key, err := e.a.CreateAPIKey(ctx, co.ID, "")
	require.NoError(e.t, err)
	sd, err := e.a.RegisterSMSSender(ctx, co.ID, senderID)
	require.NoError(e.t, err)
	_, err = e.a.ApproveSMSSender(ctx, sd.ID)
	require.NoError(e.t, err)
	c, err := client.New(e.URL, key.APIKey, client.WithRetries(0), client.WithHTTPClient(e.hc))
	require.NoError(e.t, err)
	return company{id: co.ID, key: key.APIKey, sender: sd.ID, c: c}
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
	return e
}

// invalid asserts a 400 "Bad Request" whose validationErrors name field.
func invalid(t testing.TB, err error, field string) *client.Error {
	t.Helper()
	e := apiError(t, err, http.StatusBadRequest, "Bad Request")
	require.Contains(t, e.ValidationErrors, field, "validationErrors: %v", e.ValidationErrors)
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
