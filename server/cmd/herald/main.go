// Command herald is Herald's reference server: the HTTP API v1, the admin
// API, the delivery dispatcher and the SMPP and chat transports in one
// process, configured from the environment.
//
//	herald serve            run the server (see herald help for the variables)
//	herald serve --demo     the same, with an SMSC and a chat provider simulated
//	                        on loopback and a demo company ready to use
//	herald simulate smsc    run the SMSC simulator alone
//	herald simulate chat    run the chat provider simulator alone
//
// It stops cleanly on SIGINT or SIGTERM: it stops accepting requests,
// finishes those in flight and the bulk preparations under way, lets the
// dispatcher record the sends in flight, and closes the transports and
// the database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks a command line that cannot be run.
var errUsage = errors.New("usage")

// run runs one command and returns the process exit code: 0 on success,
// 2 on a bad command line, 1 on any other failure.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, getenv, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "herald:", err)
		}
		usage(stderr)
		return 2
	default:
		fmt.Fprintln(stderr, "herald:", err)
		return 1
	}
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	switch args[0] {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		demo := fs.Bool("demo", false, "simulate the SMSC and the chat provider on loopback and set up a demo company")
		if err := fs.Parse(args[1:]); err != nil {
			return fmt.Errorf("%w: serve: %w", errUsage, err)
		}
		cfg, err := loadConfig(getenv)
		if err != nil {
			return err
		}
		return serve(ctx, cfg, *demo, stdout, newLogger(cfg, stderr))
	case "simulate":
		if len(args) < 2 {
			return fmt.Errorf("%w: simulate needs smsc or chat", errUsage)
		}
		return simulate(ctx, args[1], args[2:], stdout, slog.New(slog.NewTextHandler(stderr, nil)))
	case "help", "-h", "--help":
		usage(stdout)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  herald serve [--demo]     run the API, the admin API, the dispatcher and the transports
  herald simulate smsc      run the SMSC simulator (flags: -addr -system-id -password -receipt-delay)
  herald simulate chat      run the chat provider simulator (flags: -addr -token -callback-url -callback-secret)

herald serve reads:
`)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, v := range envVars() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.name, v.def, v.meaning)
	}
	_ = tw.Flush()
}
