package chaos_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// EnvChaos names the variable that turns the suite on.
const EnvChaos = "HERALD_TEST_CHAOS"

// adminToken is the admin token of every herald the suite starts.
const adminToken = "chaos-admin-token"

// secretKey is the HERALD_SECRET_KEY of the suite's processes: the
// connectors and webhooks they create have secrets to store.
const secretKey = "6368616f732d7375697465206b6579206f6e6c792c206e6f7420612073656372"

// chaosOnly skips the test unless the suite is turned on.
func chaosOnly(t *testing.T) {
	t.Helper()
	if os.Getenv(EnvChaos) != "1" {
		t.Skipf("the chaos suite runs when %s=1", EnvChaos)
	}
}

// binary is the herald binary the suite built, with what its usage text
// says it supports.
type binary struct {
	path string
	help string // herald help
}

var built struct {
	once sync.Once
	dir  string
	bin  *binary
	err  error
}

// heraldBinary builds the herald binary once per test run, or takes the
// one HERALD_CHAOS_BIN names.
func heraldBinary(t *testing.T) *binary {
	t.Helper()
	built.once.Do(func() {
		path := os.Getenv("HERALD_CHAOS_BIN")
		if path == "" {
			built.dir, built.err = os.MkdirTemp("", "herald-chaos-bin-")
			if built.err != nil {
				return
			}
			path = filepath.Join(built.dir, "herald")
			out, err := exec.Command("go", "build", "-o", path, "github.com/heraldhq/herald/cmd/herald").CombinedOutput()
			if err != nil {
				built.err = fmt.Errorf("go build: %w: %s", err, out)
				return
			}
		}
		help, err := exec.Command(path, "help").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("herald help: %w: %s", err, help)
			return
		}
		built.bin = &binary{path: path, help: string(help)}
	})
	require.NoError(t, built.err)
	return built.bin
}

// has tells whether the binary's usage text mentions s: a variable or a
// command it supports.
func (b *binary) has(s string) bool { return strings.Contains(b.help, s) }

// claimLease is the HERALD_CLAIM_LEASE the suite gives herald: the time
// after which a live process takes back the claims of a dead one.
const claimLease = 5 * time.Second

// needClaimLease skips the test when the binary still leaves a killed
// process's messages Sending for the dispatcher's 5-minute lease: the
// scenario would take minutes.
func (b *binary) needClaimLease(t *testing.T) {
	t.Helper()
	if !b.has("HERALD_CLAIM_LEASE") || !b.has("HERALD_INSTANCE") {
		t.Skip("skipped until herald has HERALD_INSTANCE and HERALD_CLAIM_LEASE: without them the messages a killed process left Sending wait for a 5-minute lease")
	}
}

// heraldEnv is this process's environment without its HERALD_ variables,
// plus the suite's defaults and kv.
func heraldEnv(kv ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "HERALD_") {
			env = append(env, e)
		}
	}
	env = append(env, "HERALD_LOG_FORMAT=json", "HERALD_ADMIN_TOKEN="+adminToken, "HERALD_SECRET_KEY="+secretKey, "HERALD_SHUTDOWN_TIMEOUT=10s",
		"HERALD_CLAIM_LEASE="+claimLease.String())
	return append(env, kv...)
}

// heraldProc is a running herald serve.
type heraldProc struct {
	*proc
	bin     *binary
	addr    string // host:port of its HTTP server
	env     []string
	started time.Time // when it was ready

	reclaimedMu sync.Mutex
	reclaimed   int // messages left Sending by a dead process this one put back to Pending
}

var (
	servingLine = regexp.MustCompile(`"msg":"herald serving","addr":"([^"]+)"`)
	// reclaimLine is logged by a dispatcher that put back to Pending the
	// messages a dead process (its own previous run, or another) left
	// Sending.
	reclaimLine = regexp.MustCompile(`"msg":"messages (?:this instance's previous run left Sending|left Sending by a stopped process) put back to Pending","count":(\d+)`)
)

// startHerald runs herald serve on addr with env and waits until it serves.
func startHerald(t *testing.T, bin *binary, addr string, env []string) *heraldProc {
	t.Helper()
	cmd := exec.Command(bin.path, "serve")
	cmd.Env = append(append([]string(nil), env...), "HERALD_ADDR="+addr)
	h := &heraldProc{bin: bin, addr: addr, env: env}
	p, m := startProc(t, "herald serve "+addr, cmd, nil, servingLine, func(line string) bool {
		if m := reclaimLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			h.reclaimedMu.Lock()
			h.reclaimed += n
			h.reclaimedMu.Unlock()
		}
		return false
	})
	require.Equal(t, addr, m[1])
	h.proc, h.started = p, time.Now()
	return h
}

// reclaimedCount returns how many messages a dead process left Sending
// this process has put back to Pending so far.
func (h *heraldProc) reclaimedCount() int {
	h.reclaimedMu.Lock()
	defer h.reclaimedMu.Unlock()
	return h.reclaimed
}

// restart starts a new herald serve on the same address and environment.
func (h *heraldProc) restart(t *testing.T) *heraldProc {
	t.Helper()
	return startHerald(t, h.bin, h.addr, h.env)
}

// base is the herald's base URL.
func (h *heraldProc) base() string { return "http://" + h.addr }

// check runs herald check on the database of env when the binary has the
// command, and requires no drift. It returns false when the binary has no
// check command.
func (b *binary) check(t *testing.T, env []string) bool {
	t.Helper()
	if !b.has("herald check") {
		t.Log("herald check is not in this binary: the counters were compared through the API only")
		return false
	}
	cmd := exec.Command(b.path, "check")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "herald check reports drift:\n%s", out)
	t.Logf("herald check: %s", strings.TrimSpace(string(out)))
	return true
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// freePort returns a loopback port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	return n
}

// seed is the seed of the suite's random choices (kill points), from
// HERALD_CHAOS_SEED when set, so that a run can be replayed.
var seed = func() uint64 {
	if s, err := strconv.ParseUint(os.Getenv("HERALD_CHAOS_SEED"), 10, 64); err == nil {
		return s
	}
	return uint64(time.Now().UnixNano())
}()

// newRand returns the random source of one test, logged with its seed.
func newRand(t *testing.T) *rand.Rand {
	t.Logf("random choices from HERALD_CHAOS_SEED=%d", seed)
	return rand.New(rand.NewPCG(seed, uint64(len(t.Name()))))
}
