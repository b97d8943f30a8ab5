package chaos_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// submitLog is what the SMSCs of one scenario accepted, in order, across
// their restarts: one destination number per submit_sm, logged by the SMSC
// before it answered.
type submitLog struct {
	mu    sync.Mutex
	order []string       // destination of each accepted submit
	times []time.Time    // when each was logged
	count map[string]int // submits by destination
	marks []mark         // faults, at their position in order
}

// mark is a fault injected when the log held at submits.
type mark struct {
	at   int
	what string
}

// newSubmitLog returns an empty log.
func newSubmitLog() *submitLog { return &submitLog{count: map[string]int{}} }

// add logs one accepted submit to dest.
func (l *submitLog) add(dest string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.order = append(l.order, dest)
	l.times = append(l.times, time.Now())
	l.count[dest]++
}

// perSecond returns the accepted submits to destinations starting with
// prefix in each wall-clock second from the first such submit (whose
// second starts at from) to the last, seconds with none included.
func (l *submitLog) perSecond(prefix string) (from time.Time, out []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first int64
	for i, d := range l.order {
		if !strings.HasPrefix(d, prefix) {
			continue
		}
		sec := l.times[i].Unix()
		if out == nil {
			first = sec
		}
		for int64(len(out)) <= sec-first {
			out = append(out, 0)
		}
		out[sec-first]++
	}
	return time.Unix(first, 0), out
}

// distinct is the number of destinations that got at least one submit.
func (l *submitLog) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.count)
}

// total is the number of submits accepted.
func (l *submitLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.order)
}

// mark records a fault at the current position of the log.
func (l *submitLog) mark(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marks = append(l.marks, mark{at: len(l.order), what: what})
}

// duplicates returns the submits of a destination that had one before,
// in all and by the fault they follow from: the first fault marked
// between the previous submit of that destination and this one (the
// fault that lost the previous one's result), or else the last fault
// marked before this one.
func (l *submitLog) duplicates() (all int, byMark []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	byMark = make([]int, len(l.marks))
	last := make(map[string]int, len(l.count)) // destination -> position of its last submit
	for i, d := range l.order {
		prev, seen := last[d]
		last[d] = i
		if !seen {
			continue
		}
		all++
		m := -1
		for j, mk := range l.marks {
			if mk.at > i {
				break
			}
			m = j
			if mk.at > prev {
				break
			}
		}
		if m >= 0 {
			byMark[m]++
		}
	}
	return all, byMark
}

// duplicatesAfterLastMark returns the duplicate submits made after the
// last fault was marked.
func (l *submitLog) duplicatesAfterLastMark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.marks) == 0 {
		return 0
	}
	from := l.marks[len(l.marks)-1].at
	seen := make(map[string]bool, len(l.count))
	n := 0
	for i, d := range l.order {
		if seen[d] && i >= from {
			n++
		}
		seen[d] = true
	}
	return n
}

// missing returns the phones of want that the SMSC never accepted.
func (l *submitLog) missing(want []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range want {
		if l.count[p] == 0 {
			out = append(out, p)
		}
	}
	return out
}

// waitDistinct waits until n destinations got a submit.
func (l *submitLog) waitDistinct(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for l.distinct() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the SMSC accepted %d distinct numbers in %s, want %d", l.distinct(), timeout, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// smsc is a running interop/chaos-smsc.js.
type smsc struct {
	*proc
	host string
	port int
	log  *submitLog
}

// smscEvent is one line of chaos-smsc.js.
type smscEvent struct {
	Event   string `json:"event"`
	To      string `json:"to"`
	Message string `json:"message"`
}

var listeningLine = regexp.MustCompile(`"event":"listening","host":"[^"]+","port":(\d+)`)

// interopDir returns the absolute path of interop/, failing the test when
// node or its node_modules are missing.
func interopDir(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("node")
	require.NoError(t, err, "the chaos suite needs node (and npm ci in interop/)")
	dir, err := filepath.Abs(filepath.Join("..", "interop"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "node_modules", "smpp", "package.json"))
	require.NoError(t, err, "the chaos suite needs interop/node_modules: run npm ci in interop/")
	return dir
}

// startSMSC runs chaos-smsc.js on host:port (port 0: a free one), in the
// network namespace netns when not empty, logging its submits into log.
func startSMSC(t *testing.T, log *submitLog, netns, host string, port int) *smsc {
	t.Helper()
	dir := interopDir(t)
	if port == 0 {
		port = freePort(t)
	}
	args := []string{"node", "chaos-smsc.js", fmt.Sprint(port), host}
	if netns != "" {
		args = append([]string{"ip", "netns", "exec", netns}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	s := &smsc{host: host, port: port, log: log}
	s.proc, _ = startProc(t, fmt.Sprintf("SMSC %s:%d", host, port), cmd, func(line string) {
		var ev smscEvent
		if json.Unmarshal([]byte(line), &ev) != nil {
			return
		}
		switch ev.Event {
		case "submit":
			log.add(ev.To)
		case "error":
			if strings.HasPrefix(ev.Message, "unknown command") {
				t.Errorf("SMSC: %s", ev.Message)
			}
		}
	}, listeningLine)
	return s
}

// addr is the SMSC's host:port.
func (s *smsc) addr() string { return fmt.Sprintf("%s:%d", s.host, s.port) }

// command sends a command (stall, resume, drop) and waits for its answer.
func (s *smsc) command(cmd string) {
	s.t.Helper()
	done := regexp.MustCompile(`"event":"done","command":"` + cmd + `"`)
	got := make(chan struct{})
	s.onLine(func(line string) bool {
		if done.MatchString(line) {
			close(got)
			return true
		}
		return false
	})
	s.send(cmd)
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		s.t.Fatalf("the SMSC did not answer %s", cmd)
	}
}

// restart starts the SMSC again on the same address and log.
func (s *smsc) restart(t *testing.T, netns string) *smsc {
	t.Helper()
	return startSMSC(t, s.log, netns, s.host, s.port)
}
