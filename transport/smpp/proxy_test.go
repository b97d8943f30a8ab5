package smpp_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"io"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linxGnu/gosmpp/data"
	"github.com/stretchr/testify/require"
)

// proxy stands between a Client and the simulator: each connection it
// accepts gets one of its own to the target, and the PDUs both ways are
// counted per connection. It can cut one connection, and refuse new ones
// past a number of live connections, so that one session of a Client can
// be dropped and kept from binding again while the others go on.
type proxy struct {
	t      testing.TB
	l      net.Listener
	target string

	mu     sync.Mutex
	conns  []*proxied
	max    int // most live connections; past it a new one is closed at once; <0: no limit
	closed bool
	wg     sync.WaitGroup
}

// proxied is one connection through a proxy.
type proxied struct {
	client, server net.Conn
	bindID         atomic.Uint32 // command_id of the client's first PDU
	submits        atomic.Int64  // submit_sm from the client
	delivers       atomic.Int64  // deliver_sm to the client
	dead           atomic.Bool
	once           sync.Once
}

// startProxy forwards the connections l accepts (a tls.NewListener for
// SMPP over TLS) to target.
func startProxy(t testing.TB, l net.Listener, target string) *proxy {
	t.Helper()
	p := &proxy{t: t, l: l, target: target, max: -1}
	p.wg.Add(1)
	go func() { defer p.wg.Done(); p.accept() }()
	t.Cleanup(func() {
		p.mu.Lock()
		p.closed = true
		conns := p.conns
		p.mu.Unlock()
		_ = l.Close()
		for _, pc := range conns {
			pc.close()
		}
		p.wg.Wait()
	})
	return p
}

// listenTCP listens on an ephemeral loopback port.
func listenTCP(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return l
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) accept() {
	for {
		nc, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed || (p.max >= 0 && p.liveLocked() >= p.max) {
			p.mu.Unlock()
			_ = nc.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			p.mu.Unlock()
			_ = nc.Close()
			continue
		}
		pc := &proxied{client: nc, server: up}
		p.conns = append(p.conns, pc)
		p.wg.Add(2)
		p.mu.Unlock()
		go func() {
			defer p.wg.Done()
			defer pc.close()
			first := true
			pump(nc, up, func(id uint32) {
				if first {
					pc.bindID.Store(id)
					first = false
				}
				if id == uint32(data.SUBMIT_SM) {
					pc.submits.Add(1)
				}
			})
		}()
		go func() {
			defer p.wg.Done()
			defer pc.close()
			pump(up, nc, func(id uint32) {
				if id == uint32(data.DELIVER_SM) {
					pc.delivers.Add(1)
				}
			})
		}()
	}
}

// pump copies PDUs from src to dst, telling each command_id to seen
// before it forwards the PDU, until either side fails.
func pump(src, dst net.Conn, seen func(id uint32)) {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n < 8 || n > 1<<16 {
			return
		}
		buf := make([]byte, n)
		copy(buf, hdr[:])
		if _, err := io.ReadFull(src, buf[8:]); err != nil {
			return
		}
		seen(binary.BigEndian.Uint32(hdr[4:]))
		if _, err := dst.Write(buf); err != nil {
			return
		}
	}
}

func (pc *proxied) close() {
	pc.once.Do(func() {
		pc.dead.Store(true)
		_ = pc.client.Close()
		_ = pc.server.Close()
	})
}

func (p *proxy) liveLocked() int {
	n := 0
	for _, pc := range p.conns {
		if !pc.dead.Load() {
			n++
		}
	}
	return n
}

// live returns the connections not closed yet.
func (p *proxy) live() []*proxied {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*proxied
	for _, pc := range p.conns {
		if !pc.dead.Load() {
			out = append(out, pc)
		}
	}
	return out
}

// byClient returns the connection whose client end is at addr (a
// SessionState.LocalAddr).
func (p *proxy) byClient(addr string) *proxied {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.conns {
		if pc.client.RemoteAddr().String() == addr {
			return pc
		}
	}
	require.FailNow(p.t, "no proxied connection from "+addr)
	return nil
}

// setMax sets the most live connections: past it new ones are closed as
// soon as accepted; -1 for no limit. Live connections stay.
func (p *proxy) setMax(n int) {
	p.mu.Lock()
	p.max = n
	p.mu.Unlock()
}

// selfSigned makes a self-signed certificate for 127.0.0.1, its own CA,
// and a pool that trusts it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "herald test SMSC"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// listenTLS listens on an ephemeral loopback port with TLS, serving cert.
func listenTLS(t testing.TB, cert tls.Certificate) net.Listener {
	t.Helper()
	return tls.NewListener(listenTCP(t), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
}
