package chaos_test

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tailLines is how many of a process's last output lines are kept for the
// log of a failed test.
const tailLines = 300

// proc is a process of the suite (herald, an SMSC, Postgres tools), its
// output read line by line.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{} // closed once the process was waited for

	mu      sync.Mutex
	tail    []string // the last tailLines lines, stdout and stderr
	panics  []string // lines of a Go panic or fatal error
	waitErr error
	watch   []func(line string) bool // called with each line until they return true
}

// panicLine matches the first line a crashing Go program writes.
var panicLine = regexp.MustCompile(`^(panic: |fatal error: )`)

// startProc starts cmd, calls onLine (when not nil) with every line of its
// stdout and each of watch with every line of its output (until it returns
// true), and waits until a line of its stdout or stderr matches ready.
// The process is killed when the test ends, and its last lines are logged
// when the test failed. It returns the submatches of the ready line.
func startProc(t *testing.T, name string, cmd *exec.Cmd, onLine func(string), ready *regexp.Regexp, watch ...func(string) bool) (*proc, []string) {
	t.Helper()
	p := &proc{t: t, name: name, cmd: cmd, exited: make(chan struct{}), watch: watch}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	p.stdin, err = cmd.StdinPipe()
	require.NoError(t, err)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a signal to the test's group does not reach it
	require.NoError(t, cmd.Start(), "start %s", name)

	matched := make(chan []string, 1)
	var once sync.Once
	p.onLine(func(line string) bool {
		if m := ready.FindStringSubmatch(line); m != nil {
			once.Do(func() { matched <- m })
			return true
		}
		return false
	})
	var pipes sync.WaitGroup
	for _, r := range []struct {
		r      io.Reader
		stdout bool
	}{{stdout, true}, {stderr, false}} {
		pipes.Go(func() {
			sc := bufio.NewScanner(r.r)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if r.stdout && onLine != nil {
					onLine(line)
				}
				p.line(line)
			}
		})
	}
	go func() {
		pipes.Wait()
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if panics := p.panicked(); len(panics) > 0 {
			t.Errorf("%s crashed: %s", name, strings.Join(panics, "; "))
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("%s: last output lines:\n%s", name, strings.Join(p.tail, "\n"))
			p.mu.Unlock()
		}
	})

	select {
	case m := <-matched:
		return p, m
	case <-p.exited:
		t.Fatalf("%s exited before it was ready: %v", name, p.exitErr())
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not get ready", name)
	}
	return nil, nil
}

// line records one output line.
func (p *proc) line(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tail) == tailLines {
		copy(p.tail, p.tail[1:])
		p.tail = p.tail[:tailLines-1]
	}
	p.tail = append(p.tail, line)
	if panicLine.MatchString(line) {
		p.panics = append(p.panics, line)
	}
	kept := p.watch[:0]
	for _, w := range p.watch {
		if !w(line) {
			kept = append(kept, w)
		}
	}
	p.watch = kept
}

// onLine calls w with every later line until it returns true.
func (p *proc) onLine(w func(string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watch = append(p.watch, w)
}

// waitLine waits until a later line matches re and returns its submatches.
func (p *proc) waitLine(re *regexp.Regexp, timeout time.Duration) []string {
	p.t.Helper()
	got := make(chan []string, 1)
	p.onLine(func(line string) bool {
		if m := re.FindStringSubmatch(line); m != nil {
			got <- m
			return true
		}
		return false
	})
	select {
	case m := <-got:
		return m
	case <-p.exited:
		p.t.Fatalf("%s exited while waiting for %s: %v", p.name, re, p.exitErr())
	case <-time.After(timeout):
		p.t.Fatalf("%s wrote no line matching %s within %s", p.name, re, timeout)
	}
	return nil
}

// send writes one line to the process's standard input.
func (p *proc) send(line string) {
	p.t.Helper()
	_, err := fmt.Fprintln(p.stdin, line)
	require.NoError(p.t, err, "write to %s", p.name)
}

// running tells whether the process has not exited yet.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL (when the process runs) and waits for the exit.
func (p *proc) kill() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.exited
}

// stop sends SIGTERM and waits for the exit, which must be clean.
func (p *proc) stop(timeout time.Duration) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
		require.NoError(p.t, p.exitErr(), "%s stops on SIGTERM with exit code 0", p.name)
	case <-time.After(timeout):
		p.kill()
		p.t.Fatalf("%s did not stop within %s of SIGTERM", p.name, timeout)
	}
}

// exitErr returns the error of the process's exit (nil while it runs).
func (p *proc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// panicked returns the panic and fatal error lines the process wrote.
func (p *proc) panicked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.panics...)
}
