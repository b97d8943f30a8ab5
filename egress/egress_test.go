package egress_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/egress"
)

// TestClassify holds the addresses found accepted from outside, a sample of
// every registry row, and public addresses that must stay reachable.
func TestClassify(t *testing.T) {
	tests := []struct {
		addr string
		want egress.Class
	}{
		// Found accepted by webhook registration.
		{"64:ff9b::a00:1", egress.Special},                       // NAT64 of 10.0.0.1
		{"64:ff9b::a9fe:a9fe", egress.Special},                   // NAT64 of 169.254.169.254
		{"2002:a00:1::", egress.Special},                         // 6to4 of 10.0.0.1
		{"::10.0.0.1", egress.Special},                           // IPv4-compatible
		{"::ffff:0:a00:1", egress.Special},                       // IPv4-translated 10.0.0.1
		{"fec0::1", egress.Special},                              // site-local
		{"255.255.255.255", egress.Special},                      // limited broadcast
		{"0.1.2.3", egress.Special},                              // this network
		{"240.0.0.1", egress.Special},                            // reserved
		{"198.18.0.1", egress.Special},                           // benchmarking
		{"10.0.0.1", egress.Private},                             // private-use
		{"::ffff:10.0.0.1", egress.Private},                      // IPv4-mapped: the IPv4 address
		{"::ffff:127.0.0.1", egress.Loopback},                    // IPv4-mapped loopback
		{"64:ff9b::7f00:1", egress.Special},                      // NAT64 of loopback is not this machine
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", egress.Special}, // Teredo, client 10.0.0.1
		{"2001:0:a00:1:8000:63bf:3fff:fdd2", egress.Special},     // Teredo, server 10.0.0.1

		// IPv4 registry rows.
		{"0.0.0.0", egress.Special},
		{"100.64.0.1", egress.Private},
		{"100.127.255.254", egress.Private},
		{"127.0.0.1", egress.Loopback},
		{"127.255.0.9", egress.Loopback},
		{"169.254.169.254", egress.Special},
		{"172.16.0.1", egress.Private},
		{"172.31.255.255", egress.Private},
		{"192.0.0.1", egress.Special},
		{"192.0.0.8", egress.Special},
		{"192.0.0.9", egress.Global}, // PCP anycast, globally reachable
		{"192.0.0.10", egress.Global},
		{"192.0.0.170", egress.Special},
		{"192.0.2.10", egress.Special},
		{"192.31.196.1", egress.Global},
		{"192.52.193.1", egress.Global},
		{"192.88.99.1", egress.Special},
		{"192.168.1.1", egress.Private},
		{"192.175.48.1", egress.Global},
		{"198.19.255.255", egress.Special},
		{"198.51.100.7", egress.Special},
		{"203.0.113.7", egress.Special},
		{"224.0.0.1", egress.Special},
		{"239.255.255.250", egress.Special},
		{"250.1.2.3", egress.Special},

		// IPv6 registry rows.
		{"::1", egress.Loopback},
		{"::", egress.Special},
		{"64:ff9b:1::a00:1", egress.Special},
		{"64:ff9b:1::808:808", egress.Special},
		{"100::1", egress.Special},
		{"2001:2::1", egress.Special},
		{"2001:5::1", egress.Special}, // IETF protocol assignments
		{"2001:1::1", egress.Global},
		{"2001:1::3", egress.Global},
		{"2001:3::1", egress.Global},
		{"2001:4:112::1", egress.Global},
		{"2001:10::1", egress.Special},
		{"2001:20::1", egress.Global},
		{"2001:db8::1", egress.Special},
		{"2620:4f:8000::1", egress.Global},
		{"3fff::1", egress.Special},
		{"5f00::1", egress.Special},
		{"fc00::1", egress.Private},
		{"fd12:3456::1", egress.Private},
		{"fe80::1", egress.Special},
		{"fe80::1%eth0", egress.Special},
		{"ff02::1", egress.Special},
		{"ff0e::1", egress.Special},
		{"4000::1", egress.Special}, // outside global unicast

		// Public addresses, some carried inside IPv6 ones.
		{"8.8.8.8", egress.Global},
		{"1.1.1.1", egress.Global},
		{"93.184.216.34", egress.Global},
		{"100.63.255.255", egress.Global},
		{"100.128.0.1", egress.Global},
		{"172.32.0.1", egress.Global},
		{"223.255.255.255", egress.Global},
		{"2001:4860:4860::8888", egress.Global},
		{"2a00:1450:4007:80f::200e", egress.Global},
		{"::ffff:8.8.8.8", egress.Global},
		{"64:ff9b::808:808", egress.Global},                     // NAT64 of 8.8.8.8
		{"2002:808:808::1", egress.Global},                      // 6to4 of 8.8.8.8
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", egress.Global}, // Teredo, client 8.8.8.8
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		got, name := egress.Classify(a)
		require.Equal(t, tt.want, got, "%s (%s)", tt.addr, name)
		require.Equal(t, tt.want == egress.Global, egress.Public(a), tt.addr)
	}
	c, _ := egress.Classify(netip.Addr{})
	require.Equal(t, egress.Special, c)
}

func TestPolicy(t *testing.T) {
	test := netip.MustParseAddrPort("127.0.0.1:8443")
	strict, dev, private, narrow := egress.Policy{}, egress.Policy{AllowLoopback: true}, egress.Policy{AllowPrivate: true},
		egress.Policy{AllowAddrs: []netip.AddrPort{test}}
	tests := []struct {
		policy egress.Policy
		addr   string
		ok     bool
	}{
		{strict, "8.8.8.8:443", true},
		{strict, "127.0.0.1:443", false},
		{strict, "10.0.0.1:443", false},
		{strict, "[::ffff:127.0.0.1]:443", false},
		{dev, "127.0.0.1:443", true},
		{dev, "[::1]:443", true},
		{dev, "[::ffff:127.0.0.1]:443", true},
		{dev, "10.0.0.1:443", false},
		{dev, "[64:ff9b::7f00:1]:443", false},
		{dev, "0.0.0.0:443", false},
		{private, "10.0.0.1:443", true},
		{private, "[fd00::1]:443", true},
		{private, "100.64.0.1:443", true},
		{private, "127.0.0.1:443", true},
		{private, "169.254.169.254:80", false},
		{private, "[fe80::1]:443", false},
		{private, "[64:ff9b::a00:1]:443", false},
		{private, "198.18.0.1:443", false},
		{narrow, "127.0.0.1:8443", true},
		{narrow, "[::ffff:127.0.0.1]:8443", true},
		{narrow, "127.0.0.1:8444", false},
		{narrow, "[::1]:8443", false},
		{narrow, "8.8.8.8:443", true},
	}
	for _, tt := range tests {
		err := tt.policy.Check(netip.MustParseAddrPort(tt.addr))
		if tt.ok {
			require.NoError(t, err, "%s with %+v", tt.addr, tt.policy)
		} else {
			require.ErrorIs(t, err, egress.ErrNotAllowed, "%s with %+v", tt.addr, tt.policy)
		}
	}
	require.True(t, narrow.AllowsAddr(test.Addr()))
	require.False(t, narrow.AllowsAddr(netip.MustParseAddr("127.0.0.2")))
	require.False(t, strict.AllowsAddr(netip.MustParseAddr("127.0.0.1")))
	require.True(t, dev.AllowsAddr(netip.MustParseAddr("::1")))
}

// listener counts the connections it accepts.
type listener struct {
	net.Listener
	accepted atomic.Int64
}

func listen(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &listener{Listener: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return l
}

func (l *listener) addrPort() netip.AddrPort { return netip.MustParseAddrPort(l.Addr().String()) }

func TestDialerRefusesBeforeConnecting(t *testing.T) {
	ctx := context.Background()
	ln, other := listen(t), listen(t)
	d := egress.Policy{AllowAddrs: []netip.AddrPort{other.addrPort()}}.Dialer(net.Dialer{Timeout: time.Second})

	_, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	require.ErrorIs(t, err, egress.ErrNotAllowed)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_, err = d.DialContext(ctx, "tcp", net.JoinHostPort("localhost", port))
	require.ErrorIs(t, err, egress.ErrNotAllowed)
	// Refused before any packet: an address nothing answers at fails at once.
	for _, a := range []string{"10.0.0.1:443", "[64:ff9b::a9fe:a9fe]:80", "198.18.0.1:443", "[fec0::1]:443"} {
		start := time.Now()
		_, err = d.DialContext(ctx, "tcp", a)
		require.ErrorIs(t, err, egress.ErrNotAllowed, a)
		require.Less(t, time.Since(start), 500*time.Millisecond, a)
	}

	c, err := d.DialContext(ctx, "tcp", other.Addr().String())
	require.NoError(t, err, "the one allowed address is reached")
	_ = c.Close()
	require.Eventually(t, func() bool { return other.accepted.Load() == 1 }, 2*time.Second, 10*time.Millisecond)
	require.Zero(t, ln.accepted.Load(), "the refused listener saw no connection")

	// A Control of the caller's own does not replace the check.
	base := net.Dialer{Timeout: time.Second, Control: func(string, string, syscall.RawConn) error { return nil }}
	_, err = egress.Policy{}.Dialer(base).DialContext(ctx, "tcp", ln.Addr().String())
	require.ErrorIs(t, err, egress.ErrNotAllowed)
	require.Zero(t, ln.accepted.Load(), "the refused listener saw no connection")
}

// TestDialerChecksResolvedAddresses resolves a public-looking name to this
// machine through a DNS server of the test's: the check sees the address
// connected to, not the name.
func TestDialerChecksResolvedAddresses(t *testing.T) {
	ln := listen(t)
	dns := fakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns)
	}}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	host := net.JoinHostPort("media.herald-test.example", port)

	plain := net.Dialer{Resolver: resolver, Timeout: time.Second}
	c, err := plain.DialContext(context.Background(), "tcp", host)
	require.NoError(t, err, "the name does resolve to the listener")
	_ = c.Close()
	require.Eventually(t, func() bool { return ln.accepted.Load() == 1 }, 2*time.Second, 10*time.Millisecond)

	guarded := egress.Policy{}.Dialer(net.Dialer{Resolver: resolver, Timeout: time.Second})
	_, err = guarded.DialContext(context.Background(), "tcp", host)
	require.ErrorIs(t, err, egress.ErrNotAllowed)
	time.Sleep(50 * time.Millisecond)
	require.EqualValues(t, 1, ln.accepted.Load(), "the guarded dial reached nothing")
}

// fakeDNS answers every A question with a and every other question with
// no record. It returns its UDP address.
func fakeDNS(t *testing.T, a netip.Addr) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := answer(buf[:n], a); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// answer builds the reply to one DNS query.
func answer(q []byte, a netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	end := 12
	for end < len(q) && q[end] != 0 {
		end += int(q[end]) + 1
	}
	end += 5 // the root label, type and class
	if end > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end-4:])
	resp := make([]byte, 0, end+16)
	resp = append(resp, q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0)
	resp = append(resp, q[12:end]...)
	if qtype == 1 {
		resp[7] = 1
		ip := a.As4()
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		resp = append(resp, ip[:]...)
	}
	return resp
}

func TestErrNotAllowedNamesTheRange(t *testing.T) {
	err := egress.Policy{}.Check(netip.MustParseAddrPort("[64:ff9b::a00:1]:443"))
	require.True(t, errors.Is(err, egress.ErrNotAllowed))
	require.Contains(t, err.Error(), "NAT64")
	require.Contains(t, err.Error(), "10.0.0.1")
}
