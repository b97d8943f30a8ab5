package chaos_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Shape of the impaired SMPP link.
const (
	netMessages = 2000
	netDelay    = 20 * time.Millisecond // each way
	netJitter   = 5 * time.Millisecond
	netLoss     = 0.02 // of the packets, each way
	// The proxy's stalls: each chunk it forwards stalls its direction with
	// this probability, for up to proxyStallMax.
	proxyStallChance = 0.01
	proxyStallMax    = 500 * time.Millisecond
)

// link is the impaired path from herald to the SMSC.
type link struct {
	netns    string // namespace the SMSC runs in; empty: the host's
	smscHost string // address the SMSC listens on
	how      []string
	// proxy, when not nil, is started in front of the SMSC once its
	// address is known; herald connects to the address it returns.
	proxy func(t *testing.T, upstream string) string
	// dropped, when not nil, returns the packets dropped so far.
	dropped func() string
}

// run runs a command and returns its combined output and error.
func run(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// impairedLink sets up the link: a network namespace joined to the host
// by a veth pair, with netem delay and loss on both ends when the kernel
// has netem; without netem, packet loss by iptables' statistic match in
// the namespace and latency and stalls by a proxy in the test process;
// without root or ip, the proxy alone on loopback.
func impairedLink(t *testing.T) *link {
	t.Helper()
	if os.Geteuid() != 0 {
		return proxyOnly(t, "not root: no network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return proxyOnly(t, "no ip command: no network namespace")
	}
	id := rand.IntN(200) + 20
	ns := fmt.Sprintf("hchaos%d", id)
	hostIf, nsIf := fmt.Sprintf("hc%da", id), fmt.Sprintf("hc%db", id)
	hostIP, nsIP := fmt.Sprintf("10.231.%d.1", id), fmt.Sprintf("10.231.%d.2", id)
	_, _ = run("ip", "netns", "del", ns) // left by an interrupted run
	_, _ = run("ip", "link", "del", hostIf)
	for _, cmd := range [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf},
		{"ip", "link", "set", nsIf, "netns", ns},
		{"ip", "addr", "add", hostIP + "/30", "dev", hostIf},
		{"ip", "link", "set", hostIf, "up"},
		{"ip", "netns", "exec", ns, "ip", "addr", "add", nsIP + "/30", "dev", nsIf},
		{"ip", "netns", "exec", ns, "ip", "link", "set", nsIf, "up"},
		{"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"},
	} {
		if out, err := run(cmd...); err != nil {
			_, _ = run("ip", "netns", "del", ns)
			_, _ = run("ip", "link", "del", hostIf)
			return proxyOnly(t, fmt.Sprintf("no network namespace (%s: %s)", strings.Join(cmd, " "), out))
		}
	}
	t.Cleanup(func() {
		_, _ = run("ip", "link", "del", hostIf)
		_, _ = run("ip", "netns", "del", ns)
	})
	l := &link{netns: ns, smscHost: nsIP}
	l.how = append(l.how, fmt.Sprintf("SMSC in network namespace %s, veth %s/%s", ns, hostIP, nsIP))

	netem := []string{"netem", "delay", netDelay.String(), netJitter.String(), "loss", fmt.Sprintf("%g%%", netLoss*100)}
	out, err := run(append([]string{"tc", "qdisc", "add", "dev", hostIf, "root"}, netem...)...)
	if err == nil {
		out, err = run(append([]string{"ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", nsIf, "root"}, netem...)...)
	}
	if err == nil {
		l.how = append(l.how, "tc netem on both ends: "+strings.Join(netem[1:], " "))
		return l
	}
	l.how = append(l.how, "tc netem unavailable ("+out+")")

	p := fmt.Sprint(netLoss)
	in, err1 := run("ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-i", nsIf, "-m", "statistic", "--mode", "random", "--probability", p, "-j", "DROP")
	outp, err2 := run("ip", "netns", "exec", ns, "iptables", "-A", "OUTPUT", "-o", nsIf, "-m", "statistic", "--mode", "random", "--probability", p, "-j", "DROP")
	if err1 == nil && err2 == nil {
		l.how = append(l.how, fmt.Sprintf("packet loss %g%% each way by iptables -m statistic --mode random in the namespace", netLoss*100))
		l.dropped = func() string {
			out, err := run("ip", "netns", "exec", ns, "iptables", "-L", "-v", "-n", "-x")
			if err != nil {
				return "unknown: " + out
			}
			var counts []string
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) > 2 && f[2] == "DROP" {
					counts = append(counts, f[0])
				}
			}
			return strings.Join(counts, " in, ") + " out"
		}
	} else {
		l.how = append(l.how, "no packet loss: iptables unavailable ("+in+" "+outp+")")
	}
	l.proxy = delayProxy
	l.how = append(l.how, fmt.Sprintf("latency %s±%s each way and stalls (%.0f%% of chunks, up to %s) by a TCP proxy in the test process",
		netDelay, netJitter, proxyStallChance*100, proxyStallMax))
	return l
}

// proxyOnly is the link of a machine without network namespaces.
func proxyOnly(t *testing.T, why string) *link {
	t.Logf("impaired link: %s", why)
	return &link{smscHost: "127.0.0.1", proxy: delayProxy, how: []string{why,
		fmt.Sprintf("latency %s±%s each way and stalls by a TCP proxy in the test process, no packet loss", netDelay, netJitter)}}
}

// delayProxy forwards a loopback port to upstream, delaying every chunk
// by netDelay±netJitter and now and then stalling a direction; it keeps
// the order of the bytes, as a slow TCP path does.
func delayProxy(t *testing.T, upstream string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Wait()
	})
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = down.Close()
				continue
			}
			conns.Add(2)
			go func() { defer conns.Done(); pump(up, down) }()
			go func() { defer conns.Done(); pump(down, up) }()
		}
	}()
	return ln.Addr().String()
}

// pump copies src to dst, each chunk delayed, until either fails; then it
// closes both.
func pump(dst, src net.Conn) {
	type chunk struct {
		data []byte
		due  time.Time
	}
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				jitter := time.Duration(rand.Int64N(int64(2*netJitter))) - netJitter
				queue <- chunk{buf[:n], time.Now().Add(netDelay + jitter)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		if rand.Float64() < proxyStallChance {
			time.Sleep(time.Duration(rand.Int64N(int64(proxyStallMax))))
		}
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
	for range queue { // let the reader end
	}
}

// TestImpairedLink sends a bulk SMS campaign over an SMPP link with
// latency, jitter, packet loss and stalls; halfway the SMSC drops its
// connections.
func TestImpairedLink(t *testing.T) {
	chaosOnly(t)
	bin := heraldBinary(t)
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			l := impairedLink(t)
			log := newSubmitLog()
			sm := startSMSC(t, log, l.netns, l.smscHost, 0)
			smscAddr := sm.addr()
			if l.proxy != nil {
				smscAddr = l.proxy(t, smscAddr)
			}
			env := heraldEnv("HERALD_DATABASE_URL="+st.url(t), "HERALD_SMPP_ADDR="+smscAddr)
			h := startHerald(t, bin, freeAddr(t), env)
			c := newClient(t, h.base(), newAnswers())
			co := c.provision("Acme")
			ph := phones(5, netMessages)
			id := c.smsCampaign(co, ph, "impaired-link")

			began := time.Now()
			c.start(id)
			// Halfway, the SMSC drops its connections, as a link reset
			// does: herald binds again over the impaired link.
			log.waitDistinct(t, netMessages/2, 2*time.Minute)
			log.mark("SMSC dropped its connections")
			sm.command("drop")
			c.completed(id, 5*time.Minute)
			took := time.Since(began)
			reconnects := metric(t, c, "herald_smpp_reconnects_total")

			o := checkSMS(t, c, bin, env, id, "impaired-link", ph, log)
			f := newFigure("4 SMPP link with latency and loss", st.name, netMessages, o)
			f.Times["campaign"] = dur(took)
			f.Answers = c.log.summary()
			f.Notes = append(f.Notes, l.how...)
			f.Notes = append(f.Notes, "connections dropped by the SMSC halfway; herald_smpp_reconnects_total "+reconnects)
			if l.dropped != nil {
				f.Notes = append(f.Notes, "packets dropped by iptables: "+l.dropped())
			}
			record(t, f)
			h.stop(30 * time.Second)
		})
	}
}
