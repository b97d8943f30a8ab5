package webhookpost_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
