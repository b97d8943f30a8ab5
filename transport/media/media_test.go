package media_test

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
	"github.com/heraldhq/herald/transport/media"
)

// server is a TLS test server serving:
//
//	/image.png  200, 12345 bytes, image/png
//	/missing    404
//	/slow       answers nothing for 5 s or until the test ends
//	/redirect/N redirects N+1 times, the last time to /image.png
//	/loop       redirects to itself
//	/downgrade  redirects to an http:// URL
//	/no-head    405 to HEAD, 200 with 777 bytes to GET
type server struct {
	*httptest.Server
	conns   atomic.Int64 // TCP connections accepted
	hits    atomic.Int64
	methods chan string
	agents  chan string
}

func newServer(t *testing.T) *server {
	s := &server{methods: make(chan string, 64), agents: make(chan string, 64)}
	stop := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/image.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", "12345")
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// The request's own context is not watched: a server may cancel it
		// for reasons of its own and answer early, which would let a probe
		// that should time out succeed.
		select {
		case <-stop:
		case <-time.After(5 * time.Second): // far past every timeout the tests set
		}
	})
	mux.HandleFunc("/redirect/{n}", func(w http.ResponseWriter, r *http.Request) {
		n := r.PathValue("n")
		if n == "0" {
			http.Redirect(w, r, "/image.png", http.StatusFound)
			return
		}
		k, _ := strconv.Atoi(n)
		http.Redirect(w, r, "/redirect/"+strconv.Itoa(k-1), http.StatusMovedPermanently)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/downgrade", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+r.Host+"/image.png", http.StatusFound)
	})
	mux.HandleFunc("/no-head", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Length", "777")
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write(make([]byte, 777))
	})
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		select { // recorded for the tests that read them; never blocks
		case s.methods <- r.Method:
		default:
		}
		select {
		case s.agents <- r.UserAgent():
		default:
		}
		mux.ServeHTTP(w, r)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // cancelled probes make the server log
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(stop) }) // runs first: Close waits for handlers
	return s
}

// only allows the server's own address and port, and nothing else on
// this machine.
func (s *server) only() egress.Policy {
	return egress.Policy{AllowAddrs: []netip.AddrPort{netip.MustParseAddrPort(s.Listener.Addr().String())}}
}

// roots trusts the server's certificate.
func (s *server) roots() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return pool
}

func TestProbe(t *testing.T) {
	srv := newServer(t)
	p := media.New(media.Config{Addresses: srv.only(), RootCAs: srv.roots(), MaxRedirects: 3})
	cases := []struct {
		name    string
		path    string
		want    template.MediaInfo
		wantErr error
	}{
		{name: "200 with length", path: "/image.png", want: template.MediaInfo{StatusCode: 200, ContentLength: 12345, ContentType: "image/png"}},
		{name: "404", path: "/missing", want: template.MediaInfo{StatusCode: 404, ContentLength: 19, ContentType: "text/plain; charset=utf-8"}},
		{name: "redirects followed", path: "/redirect/1", want: template.MediaInfo{StatusCode: 200, ContentLength: 12345, ContentType: "image/png"}},
		{name: "redirects at the limit", path: "/redirect/2"},
		{name: "one redirect over the limit", path: "/redirect/3", wantErr: media.ErrTooManyRedirects},
		{name: "redirect loop", path: "/loop", wantErr: media.ErrTooManyRedirects},
		{name: "redirect to http", path: "/downgrade", wantErr: media.ErrNotHTTPS},
		{name: "HEAD refused, GET answers", path: "/no-head", want: template.MediaInfo{StatusCode: 200, ContentLength: 777, ContentType: "application/pdf"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := p.Probe(context.Background(), srv.URL+tc.path)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.want.StatusCode == 0 { // "at the limit": any success will do
				require.Equal(t, 200, info.StatusCode)
				return
			}
			require.Equal(t, tc.want, info)
		})
	}
}

func TestProbeSendsHEAD(t *testing.T) {
	srv := newServer(t)
	p := media.New(media.Config{Addresses: srv.only(), RootCAs: srv.roots(), UserAgent: "test-agent"})
	_, err := p.Probe(context.Background(), srv.URL+"/image.png")
	require.NoError(t, err)
	require.Equal(t, http.MethodHead, <-srv.methods)
	require.Equal(t, "test-agent", <-srv.agents)
	require.EqualValues(t, 1, srv.hits.Load())

	p = media.New(media.Config{Addresses: srv.only(), RootCAs: srv.roots()})
	_, err = p.Probe(context.Background(), srv.URL+"/image.png")
	require.NoError(t, err)
	<-srv.methods
	require.Equal(t, media.DefaultUserAgent, <-srv.agents)
}

func TestProbeTimeout(t *testing.T) {
	srv := newServer(t)
	p := media.New(media.Config{Addresses: srv.only(), RootCAs: srv.roots(), Timeout: 150 * time.Millisecond})
	start := time.Now()
	_, err := p.Probe(context.Background(), srv.URL+"/slow")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 3*time.Second)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
}

func TestProbeCallerCancels(t *testing.T) {
	srv := newServer(t)
	p := media.New(media.Config{Addresses: srv.only(), RootCAs: srv.roots()})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := p.Probe(ctx, srv.URL+"/slow")
	require.ErrorIs(t, err, context.Canceled)
}

func TestProbeRefusesNonHTTPSWithoutRequest(t *testing.T) {
	var hits atomic.Int64
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer plain.Close()
	p := media.New(media.Config{Addresses: egress.Policy{AllowLoopback: true}})
	for _, u := range []string{plain.URL + "/image.png", "ftp://" + strings.TrimPrefix(plain.URL, "http://") + "/a", "//host/a", "https:///a", "::bad"} {
		_, err := p.Probe(context.Background(), u)
		require.ErrorIs(t, err, media.ErrNotHTTPS, u)
	}
	require.Zero(t, hits.Load())
}

func TestProbeUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	p := media.New(media.Config{Timeout: 2 * time.Second, Addresses: egress.Policy{AllowLoopback: true}})
	_, err = p.Probe(context.Background(), "https://"+addr+"/image.png")
	require.Error(t, err)
	require.False(t, errors.Is(err, media.ErrNotHTTPS))
	require.False(t, errors.Is(err, context.DeadlineExceeded), "a closed port is refused at once: %v", err)
}

func TestProbeErrorsHideQuery(t *testing.T) {
	srv := newServer(t)
	p := media.New(media.Config{Addresses: srv.only(), RootCAs: srv.roots(), Timeout: 50 * time.Millisecond})
	_, err := p.Probe(context.Background(), srv.URL+"/slow?signature=secret")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
	require.Contains(t, err.Error(), "/slow")
}

func TestConfigDefaults(t *testing.T) {
	d := media.Config{}.WithDefaults()
	require.Equal(t, 10*time.Second, d.Timeout)
	require.Equal(t, 5, d.MaxRedirects)
	require.Equal(t, media.DefaultUserAgent, d.UserAgent)
	require.Equal(t, 0, media.Config{MaxRedirects: -1}.WithDefaults().MaxRedirects)
	set := media.Config{Timeout: time.Second, MaxRedirects: 2, UserAgent: "x"}
	require.Equal(t, set, set.WithDefaults())
}

func TestNoRedirectsWhenNegative(t *testing.T) {
	srv := newServer(t)
	p := media.New(media.Config{Addresses: srv.only(), RootCAs: srv.roots(), MaxRedirects: -1})
	_, err := p.Probe(context.Background(), srv.URL+"/redirect/0")
	require.ErrorIs(t, err, media.ErrTooManyRedirects)
}

// TestValidateMediaOverHTTP runs the template media check through the
// real prober.
func TestValidateMediaOverHTTP(t *testing.T) {
	srv := newServer(t)
	p := media.New(media.Config{Addresses: srv.only(), RootCAs: srv.roots()})
	tm := &messaging.Template{Name: "v", Channel: messaging.ChannelChat, MessageType: messaging.TypeVideo, ChatServiceID: 1,
		Config: &messaging.ChatConfig{VideoURL: srv.URL + "/image.png", ThumbnailURL: srv.URL + "/missing", Duration: 12}}
	err := template.ValidateMedia(context.Background(), p, tm)
	var e *messaging.Error
	require.True(t, errors.As(err, &e), "got %v", err)
	require.Equal(t, []string{"typeSpecificConfig.thumbnailUrl"}, keys(e.Fields))
	require.EqualValues(t, 12345, tm.Config.FileSize)
	require.Equal(t, 12, tm.Config.Duration)

	tm.Config.ThumbnailURL = srv.URL + "/redirect/1"
	require.NoError(t, template.ValidateMedia(context.Background(), p, tm))
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// With the production policy, a media server on this machine gets no
// connection, whether the URL names its address or a host name that
// resolves to it; the error says the address is not allowed.
func TestProbeRefusesNonPublicAddressesWithoutConnecting(t *testing.T) {
	srv := newServer(t)
	p := media.New(media.Config{RootCAs: srv.roots()})
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, u := range []string{srv.URL + "/image.png", "https://localhost:" + port + "/image.png", "https://[::ffff:127.0.0.1]:" + port + "/image.png"} {
		_, err := p.Probe(context.Background(), u)
		require.ErrorIs(t, err, egress.ErrNotAllowed, u)
	}
	require.Zero(t, srv.conns.Load(), "no TCP connection reached the server")
	require.Zero(t, srv.hits.Load())
}

// The special-purpose ranges found accepted before are refused at once,
// before any packet is sent (nothing answers at most of them).
func TestProbeRefusesSpecialRanges(t *testing.T) {
	p := media.New(media.Config{Timeout: 5 * time.Second, Addresses: egress.Policy{AllowPrivate: true}})
	for _, host := range []string{"[64:ff9b::a00:1]", "[64:ff9b::a9fe:a9fe]", "[2002:a00:1::]", "[::10.0.0.1]", "[::ffff:0:a00:1]",
		"[fec0::1]", "255.255.255.255", "0.1.2.3", "240.0.0.1", "198.18.0.1", "169.254.169.254", "[fe80::1]", "203.0.113.9"} {
		start := time.Now()
		_, err := p.Probe(context.Background(), "https://"+host+"/a.png")
		require.ErrorIs(t, err, egress.ErrNotAllowed, host)
		require.Less(t, time.Since(start), time.Second, host)
	}
}

// A redirect from the one allowed server to another service on the same
// machine is refused: the other service sees no connection, whether the
// redirect names its address or a host name.
func TestProbeRedirectToLoopbackReachesNothing(t *testing.T) {
	internal := newServer(t)
	_, port, _ := net.SplitHostPort(internal.Listener.Addr().String())
	targets := []string{internal.URL + "/image.png", "https://localhost:" + port + "/image.png"}
	var next atomic.Int64
	outside := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, targets[int(next.Add(1)-1)%len(targets)], http.StatusFound)
	}))
	outside.Config.ErrorLog = log.New(io.Discard, "", 0)
	outside.StartTLS()
	t.Cleanup(outside.Close)
	pool := internal.roots()
	pool.AddCert(outside.Certificate())
	p := media.New(media.Config{RootCAs: pool,
		Addresses: egress.Policy{AllowAddrs: []netip.AddrPort{netip.MustParseAddrPort(outside.Listener.Addr().String())}}})
	for range targets {
		_, err := p.Probe(context.Background(), outside.URL+"/admin.png")
		require.ErrorIs(t, err, egress.ErrNotAllowed)
	}
	require.EqualValues(t, len(targets), next.Load(), "the allowed server was asked each time")
	require.Zero(t, internal.conns.Load(), "the internal service saw no connection")
}
