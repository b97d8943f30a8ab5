package webhookpost_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/transport/webhookpost"
	"github.com/heraldhq/herald/webhook"
)

func TestPostSendsTheBodyAndHeaders(t *testing.T) {
	type got struct {
		body   string
		header http.Header
	}
	recv := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		recv <- got{string(b), r.Header.Clone()}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	p := webhookpost.New(webhookpost.Config{URLs: webhook.URLPolicy{AllowLoopbackHTTP: true}})
	defer p.Close()
	status, err := p.Post(context.Background(), srv.URL+"/hook", map[string]string{"Herald-Event-Id": "e1", "Content-Type": "application/json"}, []byte(`{"a":1}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status)
	g := <-recv
	require.Equal(t, `{"a":1}`, g.body)
	require.Equal(t, "e1", g.header.Get("Herald-Event-Id"))
	require.Equal(t, "application/json", g.header.Get("Content-Type"))
}

// Without the loopback allowance a request to this machine is refused
// when the connection is made, whatever the URL says.
func TestPostRefusesForbiddenAddresses(t *testing.T) {
	hit := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit <- struct{}{} }))
	defer srv.Close()
	p := webhookpost.New(webhookpost.Config{})
	defer p.Close()
	for _, u := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		status, err := p.Post(context.Background(), u, nil, []byte(`{}`))
		require.ErrorIs(t, err, webhookpost.ErrForbiddenAddress, u)
		require.NotContains(t, err.Error(), "127.0.0.1", "the error, shown to the company, keeps the resolved address to itself")
		require.Zero(t, status)
	}
	require.Empty(t, hit, "the endpoint got nothing")
}

func TestPostDoesNotFollowRedirects(t *testing.T) {
	target := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			target <- struct{}{}
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	p := webhookpost.New(webhookpost.Config{URLs: webhook.URLPolicy{AllowLoopbackHTTP: true}})
	defer p.Close()
	status, err := p.Post(context.Background(), srv.URL+"/hook", nil, []byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusTemporaryRedirect, status)
	require.Empty(t, target)
}

// A slow endpoint ends with the caller's deadline; one that answers 200
// without reading a large body is an answer.
func TestPostSlowAndUnreadingEndpoints(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer slow.Close()
	defer close(release)
	p := webhookpost.New(webhookpost.Config{URLs: webhook.URLPolicy{AllowLoopbackHTTP: true}})
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	status, err := p.Post(ctx, slow.URL, nil, []byte(`{}`))
	require.Error(t, err)
	require.Zero(t, status)

	rude := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer rude.Close()
	status, err = p.Post(context.Background(), rude.URL, nil, []byte(`{"pad":"`+strings.Repeat("x", 4<<10)+`"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
}

// Addresses of special-purpose ranges are refused when dialing, at once,
// whatever the URL's form.
func TestPostRefusesSpecialRanges(t *testing.T) {
	p := webhookpost.New(webhookpost.Config{URLs: webhook.URLPolicy{AllowLoopbackHTTP: true, AllowPrivate: true}})
	defer p.Close()
	for _, host := range []string{"[64:ff9b::a00:1]", "[64:ff9b::a9fe:a9fe]", "[2002:a00:1::]", "[::10.0.0.1]", "[::ffff:0:a00:1]",
		"[fec0::1]", "255.255.255.255", "0.1.2.3", "240.0.0.1", "198.18.0.1", "169.254.169.254", "[fe80::1]", "0.0.0.0"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		status, err := p.Post(ctx, "https://"+host+"/hook", nil, []byte(`{}`))
		cancel()
		require.ErrorIs(t, err, webhookpost.ErrForbiddenAddress, host)
		require.Zero(t, status)
		require.Less(t, time.Since(start), time.Second, "%s is refused before connecting", host)
	}
}

// A redirect to another service on the machine is not followed: the
// other listener sees no connection.
func TestPostRedirectToLoopbackReachesNothing(t *testing.T) {
	var inner atomic.Int64
	internal := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	internal.Config.ConnState = func(net.Conn, http.ConnState) { inner.Add(1) }
	internal.Start()
	defer internal.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/admin", http.StatusFound)
	}))
	defer srv.Close()
	p := webhookpost.New(webhookpost.Config{URLs: webhook.URLPolicy{AllowLoopbackHTTP: true}})
	defer p.Close()
	status, err := p.Post(context.Background(), srv.URL+"/hook", nil, []byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusFound, status)
	require.Zero(t, inner.Load())
}
