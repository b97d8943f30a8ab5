package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthcheck runs herald healthcheck: it asks the herald serve of
// HERALD_ADDR (or --addr) for /healthz and fails unless it answers 200
// within --timeout. Container images have no curl: their HEALTHCHECK runs
// this. A wildcard listen address (0.0.0.0, ::, or none) is asked on
// loopback.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "HERALD_ADDR")
	path := fs.String("path", "/healthz", "path to ask: /healthz or /readyz")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: healthcheck: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: healthcheck: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *path != "/healthz" && *path != "/readyz" {
		return fmt.Errorf("%w: healthcheck: -path must be /healthz or /readyz, not %q", errUsage, *path)
	}
	if *timeout <= 0 {
		return fmt.Errorf("%w: healthcheck: -timeout must be positive", errUsage)
	}
	a := *addr
	if a == "" {
		a = getenv("HERALD_ADDR")
	}
	if a == "" {
		a = "127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("healthcheck: address %q: %w", a, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, port) + *path

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", url, resp.Status)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
