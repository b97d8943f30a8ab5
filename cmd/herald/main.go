// Command herald is Herald's reference server: the HTTP API v1, the admin
// API, the delivery dispatcher and the SMPP and chat transports in one
// process, configured from the environment.
//
//	herald serve            run the server (see herald help for the variables)
//	herald serve --demo     the same, with an SMSC and a chat provider simulated
//	                        on loopback and a demo company ready to use
//	herald check            recount every campaign's counters and each company's
//	                        pending count from the rows; exit 1 when any differs
//	herald secrets new-key  print a new key for HERALD_SECRET_KEY
//	herald secrets rotate   encrypt every stored secret under HERALD_SECRET_KEY
//	herald version          the version and VCS revision the binary was built from
//	herald simulate smsc    run the SMSC simulator alone
//	herald simulate chat    run a chat provider simulator alone (-provider: herald, vonage, infobip, meta-whatsapp)
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
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/heraldhq/herald/internal/gctune"
)

func main() {
	gctune.Apply(os.Getenv) // GOGC=200, GOMEMLIMIT=200MiB unless set
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
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "herald:", err)
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
		for _, f := range serveFlags() {
			fs.String(f.name, "", f.env)
		}
		if err := fs.Parse(args[1:]); errors.Is(err, flag.ErrHelp) {
			serveUsage(stdout)
			return nil
		} else if err != nil {
			return fmt.Errorf("%w: serve: %w", errUsage, err)
		}
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: serve: unexpected argument %q", errUsage, fs.Arg(0))
		}
		cfg, err := loadConfig(withFlags(fs, getenv))
		if err != nil {
			return err
		}
		// Console spans go to stdout; the log goes to stderr.
		tr, err := newTracing(ctx, getenv, stdout, mainVersion())
		if err != nil {
			return err
		}
		tr.install()
		defer func() {
			// Flush the spans still buffered.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
			defer cancel()
			if err := tr.shutdown(sctx); err != nil {
				fmt.Fprintln(stderr, "herald: flush the traces:", err)
			}
		}()
		return serve(ctx, cfg, *demo, stdout, newLogger(cfg, stderr), tr.tracer())
	case "simulate":
		if len(args) < 2 {
			return fmt.Errorf("%w: simulate needs smsc or chat", errUsage)
		}
		return simulate(ctx, args[1], args[2:], stdout, slog.New(slog.NewTextHandler(stderr, nil)))
	case "check":
		return check(ctx, args[1:], getenv, stdout)
	case "secrets":
		return secrets(ctx, args[1:], getenv, stdout)
	case "healthcheck":
		return healthcheck(ctx, args[1:], getenv, stdout)
	case "version", "--version":
		info, ok := debug.ReadBuildInfo()
		version(stdout, info, ok)
		return nil
	case "help", "-h", "--help":
		usage(stdout)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

// serveFlag is a flag of herald serve that overrides a variable.
type serveFlag struct{ name, env string }

// serveFlags lists the flags of herald serve that override a variable.
func serveFlags() []serveFlag {
	return []serveFlag{
		{"addr", "HERALD_ADDR"},
		{"database-url", "HERALD_DATABASE_URL"},
		{"max-pending", "HERALD_MAX_PENDING"},
		{"log-level", "HERALD_LOG_LEVEL"},
		{"log-format", "HERALD_LOG_FORMAT"},
	}
}

// withFlags returns getenv with the variables of the serveFlags set on
// the command line replaced by their values.
func withFlags(fs *flag.FlagSet, getenv func(string) string) func(string) string {
	set := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		for _, sf := range serveFlags() {
			if sf.name == f.Name {
				set[sf.env] = f.Value.String()
			}
		}
	})
	return func(name string) string {
		if v, ok := set[name]; ok {
			return v
		}
		return getenv(name)
	}
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(traceHandler{slog.NewJSONHandler(w, opts)})
	}
	return slog.New(traceHandler{slog.NewTextHandler(w, opts)})
}

// serveUsage is the help of herald serve.
func serveUsage(w io.Writer) {
	fmt.Fprint(w, `Usage: herald serve [--demo] [--addr A] [--database-url U] [--max-pending N]
                    [--log-level L] [--log-format F]

Runs Herald: the HTTP API under /api/v1, the admin API under /admin/v1 (when
HERALD_ADMIN_TOKEN is set), the dispatcher that sends over SMPP and to the chat
providers, the chat callback endpoints, /healthz, /readyz and /metrics.
It reads its configuration from the environment (herald help lists every
variable); a flag overrides its variable. On SIGINT or SIGTERM it finishes the
requests, preparations and sends in flight, and exits 0.

  --demo   try Herald on one machine, with nothing else running. On top of the
           database (by default the embedded SQLite file herald.db) it starts
           SMSC and chat provider simulators on loopback and points the real
           SMPP and chat transports at them (the HERALD_SMPP_* and
           HERALD_CHAT_* variables are ignored). It makes sure a demo company
           with an approved SMS sender and chat services exists, gives it a new
           API key and prints it with a curl line to try. The simulators answer
           by number: ending 0001, 0002, 0003 get SMS receipts UNDELIVERED,
           EXPIRED, REJECTED; ending 0008, 0009, 0010 chat errors 8, 9, 10 (the
           SMS fallback); every other number is delivered.
  --addr, --database-url, --max-pending, --log-level, --log-format
           override HERALD_ADDR, HERALD_DATABASE_URL, HERALD_MAX_PENDING,
           HERALD_LOG_LEVEL and HERALD_LOG_FORMAT.
`)
}

// usageWidth is the width herald help and the commands' -h fit in.
const usageWidth = 100

// usage is the help of herald: its commands, then the variables herald
// serve reads, each meaning wrapped under its name.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  herald serve [--demo] [--addr A] [--database-url U] [--max-pending N]
               [--log-level L] [--log-format F]
                            run the API, the admin API, the dispatcher and the transports;
                            a flag overrides its variable (herald serve -h)
  herald check [--json] [--database-url U]
                            recount every campaign's counters and each company's pending
                            count from the message rows and print those that differ
                            (exit 1 when any does, 0 when none)
  herald secrets new-key    print a new key for HERALD_SECRET_KEY (32 random bytes, base64)
  herald secrets rotate [--database-url U]
                            encrypt every stored secret (SMPP passwords, webhook secrets,
                            chat service credentials) under HERALD_SECRET_KEY, reading
                            those under HERALD_SECRET_KEY_PREVIOUS
  herald healthcheck [--addr A] [--path P] [--timeout D]
                            ask the server of HERALD_ADDR for /healthz; exit 1 unless 200
  herald version            print the version and the revision the binary was built from
  herald simulate smsc      run the SMSC simulator (herald simulate smsc -h lists its flags)
  herald simulate chat      run a chat provider simulator (herald simulate chat -h)

herald serve reads (docs/configuration.md has the details):
`)
	const indent = 33 // two spaces, the longest name, two spaces
	for _, v := range envVars() {
		text := v.meaning + " (default: " + v.def + ")"
		fmt.Fprintf(w, "  %-*s", indent-2, v.name)
		col := indent
		for i, word := range strings.Fields(text) {
			if i > 0 && col+1+len(word) > usageWidth {
				fmt.Fprintf(w, "\n%*s", indent, "")
				col = indent
			} else if i > 0 {
				fmt.Fprint(w, " ")
				col++
			}
			fmt.Fprint(w, word)
			col += len(word)
		}
		fmt.Fprintln(w)
	}
}
