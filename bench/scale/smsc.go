package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// smsc is herald simulate smsc running in its own process.
type smsc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{} // closed once the process has exited
}

// startSMSC runs bin simulate smsc on a free loopback port, sending each
// receipt delay after its submit_sm_resp, with its output in dir, and
// waits until it listens.
func startSMSC(ctx context.Context, bin, dir string, delay, timeout time.Duration) (*smsc, error) {
	addr, err := drive.FreeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "smsc.log"))
	if err != nil {
		return nil, fmt.Errorf("SMSC log: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, "simulate", "smsc", "-addr", addr, "-receipt-delay", delay.String())
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("SMSC output: %w", err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start the SMSC: %w", err)
	}
	s := &smsc{cmd: cmd, addr: addr, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(s.done)
		defer logf.Close()
		sc := bufio.NewScanner(stdout)
		listening := false
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if !listening && strings.Contains(sc.Text(), "SMSC simulator listening") {
				listening = true
				close(ready)
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case <-ready:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("the SMSC exited before it listened (see %s)", filepath.Join(dir, "smsc.log"))
	case <-time.After(timeout):
		s.stop()
		return nil, fmt.Errorf("the SMSC did not listen within %v", timeout)
	}
}

// stop stops the SMSC with SIGTERM, kills it after 10 s, and waits for it.
func (s *smsc) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
