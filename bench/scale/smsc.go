package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// smsc is herald simulate smsc running in its own process.
type smsc struct {
	drive.Child
	addr string
}

// startSMSC runs bin simulate smsc on a free loopback port, sending each
// receipt delay after its submit_sm_resp, with its output in dir, and
// waits until it listens.
func startSMSC(ctx context.Context, bin, dir string, delay, timeout time.Duration) (*smsc, error) {
	addr, err := drive.FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &smsc{addr: addr}
	cmd := exec.CommandContext(ctx, bin, "simulate", "smsc", "-addr", addr, "-receipt-delay", delay.String())
	if err := s.Start(cmd, filepath.Join(dir, "smsc.log"), "SMSC simulator listening", timeout); err != nil {
		return nil, fmt.Errorf("the SMSC: %w", err)
	}
	return s, nil
}
