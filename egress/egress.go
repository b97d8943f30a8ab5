// Package egress guards the connections Herald makes on a tenant's
// behalf: media checks of chat templates, webhook requests, and any later
// request whose address a company chooses. It holds the one address rule
// (Classify) and the one dialer that applies it (Policy.Dialer).
//
// The rule is the IANA special-purpose address registries:
//
//	https://www.iana.org/assignments/iana-ipv4-special-registry/
//	https://www.iana.org/assignments/iana-ipv6-special-registry/
//
// Every row whose "Globally Reachable" is False is refused; the most
// specific row decides, so a globally reachable row inside a refused block
// (an anycast service address) stays reachable. Besides the registries,
// multicast, IPv6 site-local (fec0::/10) and IPv6 addresses outside global
// unicast (2000::/3) are refused. Addresses that carry an IPv4 address
// inside an IPv6 one are unwrapped: IPv4-mapped (::ffff:0:0/96) is judged
// as its IPv4 address; NAT64 (64:ff9b::/96), 6to4 (2002::/16) and Teredo
// (2001::/32, its server and its XOR'd client) are public only when every
// IPv4 address inside is; the deprecated IPv4-compatible (::/96) and
// IPv4-translated (::ffff:0:0:0/96) forms and local-use NAT64
// (64:ff9b:1::/48) are refused.
//
// The dialer checks the address it is about to connect to, after name
// resolution, from the socket's Control hook: a host name that resolves
// to a refused address (or is changed to one later, DNS rebinding) is
// refused before a packet leaves, and so is every redirect hop an HTTP
// client dials through it. A Policy's zero value allows globally reachable
// addresses only; loopback and private networks are opt-ins.
//
// Standard library only, without net/http: domain packages check URLs
// with it at registration, adapters dial through it.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
)

// ErrNotAllowed means an address is not one a Policy lets Herald connect
// to. Errors of this package wrap it.
var ErrNotAllowed = errors.New("address not allowed")

// Class is what an address is, as far as connecting to it goes.
type Class int

// The classes.
const (
	// Global: reachable on the public internet.
	Global Class = iota
	// Loopback: this machine (127.0.0.0/8, ::1).
	Loopback
	// Private: a private network: private-use (10.0.0.0/8, 172.16.0.0/12,
	// 192.168.0.0/16), unique-local (fc00::/7) and shared address space
	// (100.64.0.0/10).
	Private
	// Special: any other range that is not globally reachable: link-local
	// (cloud metadata services live there), unspecified, documentation,
	// benchmarking, reserved, broadcast, multicast, local translation
	// prefixes, and the deprecated forms. Never allowed.
	Special
)

// String names the class.
func (c Class) String() string {
	switch c {
	case Global:
		return "global"
	case Loopback:
		return "loopback"
	case Private:
		return "private"
	default:
		return "special-purpose"
	}
}

// row is one range of the table.
type row struct {
	prefix netip.Prefix
	name   string
	class  Class
	embeds func(a [16]byte) []netip.Addr // the IPv4 addresses inside, when the range carries some
}

func r(p, name string, c Class) row {
	return row{prefix: netip.MustParsePrefix(p), name: name, class: c}
}

// table builds the ranges. The registries' rows come first, then the
// ranges this package adds.
func table() []row {
	return []row{
		// IPv4 special-purpose registry.
		r("0.0.0.0/8", "this network", Special),
		r("10.0.0.0/8", "private-use", Private),
		r("100.64.0.0/10", "shared address space", Private),
		r("127.0.0.0/8", "loopback", Loopback),
		r("169.254.0.0/16", "link-local", Special),
		r("172.16.0.0/12", "private-use", Private),
		r("192.0.0.0/24", "IETF protocol assignments", Special),
		r("192.0.0.9/32", "port control protocol anycast", Global),
		r("192.0.0.10/32", "TURN anycast", Global),
		r("192.0.2.0/24", "documentation", Special),
		r("192.31.196.0/24", "AS112", Global),
		r("192.52.193.0/24", "AMT", Global),
		r("192.88.99.0/24", "6to4 relay anycast (deprecated)", Special),
		r("192.168.0.0/16", "private-use", Private),
		r("192.175.48.0/24", "AS112 direct delegation", Global),
		r("198.18.0.0/15", "benchmarking", Special),
		r("198.51.100.0/24", "documentation", Special),
		r("203.0.113.0/24", "documentation", Special),
		r("240.0.0.0/4", "reserved", Special),
		r("255.255.255.255/32", "limited broadcast", Special),
		// IPv4 beyond the registry.
		r("224.0.0.0/4", "multicast", Special),

		// IPv6 special-purpose registry.
		r("::1/128", "loopback", Loopback),
		r("::/128", "unspecified", Special),
		{prefix: netip.MustParsePrefix("64:ff9b::/96"), name: "NAT64", class: Global, embeds: nat64},
		r("64:ff9b:1::/48", "local-use IPv4/IPv6 translation", Special),
		r("100::/64", "discard-only", Special),
		r("2001::/23", "IETF protocol assignments", Special),
		{prefix: netip.MustParsePrefix("2001::/32"), name: "Teredo", class: Global, embeds: teredo},
		r("2001:1::1/128", "port control protocol anycast", Global),
		r("2001:1::2/128", "TURN anycast", Global),
		r("2001:1::3/128", "DNS-SD service registration anycast", Global),
		r("2001:2::/48", "benchmarking", Special),
		r("2001:3::/32", "AMT", Global),
		r("2001:4:112::/48", "AS112", Global),
		r("2001:10::/28", "ORCHID (deprecated)", Special),
		r("2001:20::/28", "ORCHIDv2", Global),
		r("2001:30::/28", "drone remote ID entity tags", Global),
		r("2001:db8::/32", "documentation", Special),
		{prefix: netip.MustParsePrefix("2002::/16"), name: "6to4", class: Global, embeds: sixToFour},
		r("2620:4f:8000::/48", "AS112 direct delegation", Global),
		r("3fff::/20", "documentation", Special),
		r("5f00::/16", "segment routing SIDs", Special),
		r("fc00::/7", "unique-local", Private),
		r("fe80::/10", "link-local", Special),
		// IPv6 beyond the registry.
		r("::/0", "outside global unicast", Special),
		r("2000::/3", "global unicast", Global),
		r("::/96", "IPv4-compatible (deprecated)", Special),
		r("::ffff:0:0:0/96", "IPv4-translated", Special),
		r("fec0::/10", "site-local (deprecated)", Special),
		r("ff00::/8", "multicast", Special),
	}
}

// nat64 returns the IPv4 address of 64:ff9b::/96 (its last 32 bits).
func nat64(b [16]byte) []netip.Addr {
	return []netip.Addr{netip.AddrFrom4([4]byte(b[12:16]))}
}

// sixToFour returns the IPv4 address of 2002::/16 (bits 16 to 47).
func sixToFour(b [16]byte) []netip.Addr {
	return []netip.Addr{netip.AddrFrom4([4]byte(b[2:6]))}
}

// teredo returns the server (bits 32 to 63) and the client (the last 32
// bits, inverted) of 2001::/32.
func teredo(b [16]byte) []netip.Addr {
	c := [4]byte(b[12:16])
	for i := range c {
		c[i] ^= 0xff
	}
	return []netip.Addr{netip.AddrFrom4([4]byte(b[4:8])), netip.AddrFrom4(c)}
}

// Classify returns the class of a and the name of the range that decided
// it. An invalid address is Special. A zone is ignored; an IPv4-mapped
// IPv6 address is classified as its IPv4 address.
func Classify(a netip.Addr) (Class, string) {
	if !a.IsValid() {
		return Special, "invalid"
	}
	a = a.WithZone("").Unmap()
	rows := table()
	var best *row
	for i := range rows {
		rw := &rows[i]
		if rw.prefix.Contains(a) && (best == nil || rw.prefix.Bits() > best.prefix.Bits()) {
			best = rw
		}
	}
	if best == nil { // an IPv4 address of no special range
		return Global, "global"
	}
	if best.embeds != nil {
		for _, in := range best.embeds(a.As16()) {
			if c, name := Classify(in); c != Global {
				return Special, fmt.Sprintf("%s carrying %s (%s)", best.name, in, name)
			}
		}
	}
	return best.class, best.name
}

// Public reports whether a is globally reachable.
func Public(a netip.Addr) bool {
	c, _ := Classify(a)
	return c == Global
}

// Policy says which addresses Herald may connect to on a tenant's behalf.
// The zero value allows globally reachable addresses only: the production
// default.
type Policy struct {
	// AllowLoopback allows this machine's loopback addresses: for
	// development and the demo, whose receivers run beside Herald.
	AllowLoopback bool
	// AllowPrivate allows private networks (private-use, unique-local,
	// shared address space) and loopback: an operator whose endpoints sit
	// in its own network. Link-local and the other special ranges stay
	// refused.
	AllowPrivate bool
	// AllowAddrs allows these exact addresses and ports, whatever their
	// class: a test's own server, and nothing else on its machine.
	AllowAddrs []netip.AddrPort
}

// AllowsAddr reports whether the policy lets Herald connect to a, on some
// port (AllowAddrs entries count for their address).
func (p Policy) AllowsAddr(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	if p.allowsClass(a) {
		return true
	}
	return slices.ContainsFunc(p.AllowAddrs, func(ap netip.AddrPort) bool { return ap.Addr().Unmap() == a })
}

// Check returns nil when the policy lets Herald connect to ap, else an
// error wrapping ErrNotAllowed that names the range.
func (p Policy) Check(ap netip.AddrPort) error {
	a := ap.Addr().WithZone("").Unmap()
	if p.allowsClass(a) {
		return nil
	}
	if slices.ContainsFunc(p.AllowAddrs, func(x netip.AddrPort) bool { return x.Addr().Unmap() == a && x.Port() == ap.Port() }) {
		return nil
	}
	_, name := Classify(a)
	return fmt.Errorf("%w: %s is %s", ErrNotAllowed, a, name)
}

func (p Policy) allowsClass(a netip.Addr) bool {
	switch c, _ := Classify(a); c {
	case Global:
		return true
	case Loopback:
		return p.AllowLoopback || p.AllowPrivate
	case Private:
		return p.AllowPrivate
	}
	return false
}

// Dialer returns a copy of base that refuses, before connecting, every
// address the policy does not allow. Its Control and ControlContext are
// replaced. Use its DialContext as an http.Transport's, with no proxy:
// every connection, redirects included, then goes through the check.
func (p Policy) Dialer(base net.Dialer) *net.Dialer {
	d := base
	d.Control = nil
	d.ControlContext = func(_ context.Context, network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s %s is not an IP address and port", ErrNotAllowed, network, address)
		}
		return p.Check(ap)
	}
	return &d
}
