package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// child is a peer of Herald in its own process, read line by line.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its stdout, line by line
	done  chan struct{}
}

// smsc is an SMSC in its own process.
type smsc struct {
	child
	kind string
	addr string
}

// smscStats is what an SMSC counted.
type smscStats struct {
	submits     int
	first, last time.Time
}

// rate is submits per second between the first and the latest submit.
func (s smscStats) rate() float64 {
	d := s.last.Sub(s.first)
	if d <= 0 {
		return 0
	}
	return float64(s.submits-1) / d.Seconds()
}

// startSMSC starts an SMSC of kind (npm or sim) on a free loopback port,
// sending receipts o.receiptDelay after each submit, and waits until it
// listens.
func startSMSC(ctx context.Context, o options, kind, dir string) (*smsc, error) {
	addr, err := drive.FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &smsc{kind: kind, addr: addr}
	var cmd *exec.Cmd
	var ready string
	switch kind {
	case "npm":
		host, port, _ := strings.Cut(addr, ":")
		script, err := filepath.Abs(filepath.Join(o.interop, "chaos-smsc.js"))
		if err != nil {
			return nil, fmt.Errorf("chaos-smsc.js: %w", err)
		}
		cmd = exec.CommandContext(ctx, "node", script, port, host, fmt.Sprint(o.receiptDelay.Milliseconds()), "quiet")
		cmd.Dir = o.interop
		ready = `"event":"listening"`
	case "sim":
		cmd = exec.CommandContext(ctx, o.herald, "simulate", "smsc", "-addr", addr, "-receipt-delay", o.receiptDelay.String())
		ready = "SMSC simulator listening"
	default:
		return nil, fmt.Errorf("unknown SMSC %q: want npm, sim or both", kind)
	}
	if err := s.start(cmd, filepath.Join(dir, "smsc-"+kind+".log"), ready, o.timeout); err != nil {
		return nil, fmt.Errorf("the %s SMSC: %w", kind, err)
	}
	return s, nil
}

// start runs cmd, its stderr to the file logPath, and waits until its
// output holds ready.
func (c *child) start(cmd *exec.Cmd, logPath, ready string, timeout time.Duration) error {
	c.cmd, c.lines, c.done = cmd, make(chan string, 64), make(chan struct{})
	logf, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	go func() {
		defer close(c.done)
		defer logf.Close()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case c.lines <- trimLine(sc.Text()):
			default: // nobody waits for this line
			}
		}
		_ = cmd.Wait()
	}()
	if _, err := c.waitLine(ready, timeout); err != nil {
		c.stop()
		return fmt.Errorf("did not start: %w", err)
	}
	return nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// waitLine returns the next line of the child's output holding want.
func (c *child) waitLine(want string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case line := <-c.lines:
			if strings.Contains(line, want) {
				return line, nil
			}
		case <-c.done:
			return "", fmt.Errorf("it exited before it printed %q", want)
		case <-t.C:
			return "", fmt.Errorf("waiting for %q: %w", want, drive.ErrTimeout)
		}
	}
}

// stats returns what the SMSC counted. The simulator tells it when it
// stops: stats stops it.
func (s *smsc) stats() (smscStats, error) {
	switch s.kind {
	case "npm":
		if _, err := io.WriteString(s.stdin, "stats\n"); err != nil {
			return smscStats{}, fmt.Errorf("ask the SMSC for its counts: %w", err)
		}
		line, err := s.waitLine(`"event":"done"`, 30*time.Second)
		if err != nil {
			return smscStats{}, err
		}
		var ev struct {
			Counts struct {
				Submits     int   `json:"submits"`
				First, Last int64 // ms since the epoch
			} `json:"counts"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return smscStats{}, fmt.Errorf("SMSC counts %q: %w", line, err)
		}
		return smscStats{submits: ev.Counts.Submits, first: time.UnixMilli(ev.Counts.First), last: time.UnixMilli(ev.Counts.Last)}, nil
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		line, err := s.waitLine("SMSC simulator stopped: ", 30*time.Second)
		if err != nil {
			return smscStats{}, err
		}
		_, js, _ := strings.Cut(line, "SMSC simulator stopped: ")
		var st struct {
			Submits                 int
			FirstSubmit, LastSubmit time.Time
		}
		if err := json.Unmarshal([]byte(js), &st); err != nil {
			return smscStats{}, fmt.Errorf("simulator counts %q: %w", js, err)
		}
		return smscStats{submits: st.Submits, first: st.FirstSubmit, last: st.LastSubmit}, nil
	}
}

// stop stops the child and waits for it.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
