package server_test

import (
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/transport/media"
)

// countingTLS is an HTTPS server on loopback that counts the TCP
// connections it accepts and answers every request from h.
type countingTLS struct {
	*httptest.Server
	conns atomic.Int64
}

func newCountingTLS(t *testing.T, h http.Handler) *countingTLS {
	t.Helper()
	s := &countingTLS{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *countingTLS) addrPort() netip.AddrPort {
	return netip.MustParseAddrPort(s.Listener.Addr().String())
}

// TestMediaURLsCannotReachInternalAddresses: a company's chat template
// cannot make Herald connect to the machine's own services or any address
// that is not public, on create, on update, or through a redirect, even
// when Herald would trust the internal service's certificate. The answer
// says the address is not allowed and nothing about the service.
func TestMediaURLsCannotReachInternalAddresses(t *testing.T) {
	internal := newCountingTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2048")
	}))
	outside := newCountingTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved.png" {
			http.Redirect(w, r, internal.URL+"/admin.png", http.StatusFound)
			return
		}
		w.Header().Set("Content-Length", "2048")
	}))
	roots := x509.NewCertPool()
	roots.AddCert(internal.Certificate())
	roots.AddCert(outside.Certificate())
	// The outside server stands for a public host: it alone is allowed.
	p := media.New(media.Config{RootCAs: roots, Timeout: 5 * time.Second,
		Addresses: egress.Policy{AllowAddrs: []netip.AddrPort{outside.addrPort()}}})
	e := newEnv(t, func(c *envConfig) { c.media = p })
	image := func(name, url string) map[string]any {
		return map[string]any{"name": name, "messageType": 2, "chatServiceId": e.chat,
			"typeSpecificConfig": map[string]any{"imageUrl": url}}
	}
	refused := func(t *testing.T, r response) {
		t.Helper()
		m := requireError(t, r, http.StatusBadRequest, "Bad Request", "typeSpecificConfig.imageUrl")
		require.Equal(t, "imageUrl must point at a public internet address", m["validationErrors"].(map[string]any)["typeSpecificConfig.imageUrl"])
	}
	_, port, _ := net.SplitHostPort(internal.Listener.Addr().String())
	urls := []string{
		internal.URL + "/admin.png",
		"https://localhost:" + port + "/admin.png",
		"https://[::ffff:127.0.0.1]:" + port + "/admin.png",
		outside.URL + "/moved.png",
	}
	for _, host := range []string{"[64:ff9b::a00:1]", "[64:ff9b::a9fe:a9fe]", "[2002:a00:1::]", "[::10.0.0.1]", "[::ffff:0:a00:1]",
		"[fec0::1]", "255.255.255.255", "0.1.2.3", "240.0.0.1", "198.18.0.1", "10.0.0.1", "169.254.169.254"} {
		urls = append(urls, "https://"+host+"/a.png")
	}
	for _, u := range urls {
		refused(t, e.do("POST", "/api/v1/templates/chat", image("img", u)))
	}

	r := e.do("POST", "/api/v1/templates/chat", image("logo", outside.URL+"/logo.png"))
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	id := r.obj()["id"].(string)
	for _, u := range urls[:4] {
		refused(t, e.do("PUT", "/api/v1/templates/"+id, image("logo", u)))
	}
	require.Zero(t, internal.conns.Load(), "the internal service saw no connection")
	require.Positive(t, outside.conns.Load())
}

// TestWebhookURLsMustBePublic: registration refuses every special-purpose
// range, IPv4 addresses carried in IPv6 ones included.
func TestWebhookURLsMustBePublic(t *testing.T) {
	e := newEnv(t)
	for _, host := range []string{"[64:ff9b::a00:1]", "[64:ff9b::a9fe:a9fe]", "[2002:a00:1::]", "[::10.0.0.1]", "[::ffff:0:a00:1]",
		"[fec0::1]", "255.255.255.255", "0.1.2.3", "240.0.0.1", "198.18.0.1", "10.0.0.1", "127.0.0.1", "localhost", "[::1]"} {
		r := e.do("POST", "/api/v1/webhooks", map[string]any{"url": "https://" + host + "/hook", "events": []string{"message.status"}})
		m := requireError(t, r, http.StatusBadRequest, "Bad Request", "url")
		require.Contains(t, m["validationErrors"].(map[string]any)["url"], "public internet address", host)
	}
	r := e.do("POST", "/api/v1/webhooks", map[string]any{"url": "https://[64:ff9b::808:808]/hook", "events": []string{"message.status"}})
	require.Equal(t, http.StatusCreated, r.Code, "a public address reached through NAT64: body %s", r.Body)
}
