package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// smsc is an SMSC in its own process.
type smsc struct {
	drive.Child
	kind string
	addr string
}

// smscStats is what an SMSC counted.
type smscStats struct {
	submits     int // accepted
	throttled   int
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
		args := []string{script, port, host, fmt.Sprint(o.receiptDelay.Milliseconds()), "quiet"}
		if o.bindRate > 0 {
			args = append(args, fmt.Sprintf("bind-rate=%d", o.bindRate), "limit="+o.limit)
		}
		cmd = exec.CommandContext(ctx, "node", args...)
		cmd.Dir = o.interop
		ready = `"event":"listening"`
	case "sim":
		cmd = exec.CommandContext(ctx, o.simulator(), "simulate", "smsc", "-addr", addr, "-receipt-delay", o.receiptDelay.String(),
			"-bind-rate", fmt.Sprint(o.bindRate))
		ready = "SMSC simulator listening"
	default:
		return nil, fmt.Errorf("unknown SMSC %q: want npm, sim or both", kind)
	}
	if err := s.Start(cmd, filepath.Join(dir, "smsc-"+kind+".log"), ready, o.timeout); err != nil {
		return nil, fmt.Errorf("the %s SMSC: %w", kind, err)
	}
	return s, nil
}

// stats returns what the SMSC counted. The simulator tells it when it
// stops: stats stops it.
func (s *smsc) stats() (smscStats, error) {
	switch s.kind {
	case "npm":
		if _, err := io.WriteString(s.Stdin, "stats\n"); err != nil {
			return smscStats{}, fmt.Errorf("ask the SMSC for its counts: %w", err)
		}
		line, err := s.WaitLine(`"event":"done"`, 30*time.Second)
		if err != nil {
			return smscStats{}, err
		}
		var ev struct {
			Counts struct {
				Submits     int   `json:"submits"`
				Throttled   int   `json:"throttled"`
				First, Last int64 // ms since the epoch
			} `json:"counts"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return smscStats{}, fmt.Errorf("SMSC counts %q: %w", line, err)
		}
		return smscStats{submits: ev.Counts.Submits, throttled: ev.Counts.Throttled, first: time.UnixMilli(ev.Counts.First), last: time.UnixMilli(ev.Counts.Last)}, nil
	default:
		_ = s.Cmd.Process.Signal(syscall.SIGTERM)
		line, err := s.WaitLine("SMSC simulator stopped: ", 30*time.Second)
		if err != nil {
			return smscStats{}, err
		}
		_, js, _ := strings.Cut(line, "SMSC simulator stopped: ")
		var st struct {
			Accepted, Throttled     int
			FirstSubmit, LastSubmit time.Time
		}
		if err := json.Unmarshal([]byte(js), &st); err != nil {
			return smscStats{}, fmt.Errorf("simulator counts %q: %w", js, err)
		}
		return smscStats{submits: st.Accepted, throttled: st.Throttled, first: st.FirstSubmit, last: st.LastSubmit}, nil
	}
}
