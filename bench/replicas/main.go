// Command replicas measures how SMS delivery scales out: one, then several
// herald serve processes on one Postgres database, sending through the
// same connector with the same binds per process, against an SMSC that
// limits each bind (herald simulate smsc -bind-rate). One process is
// bounded by the SMSC, not by the CPU, so the processes together should
// carry about as many times its rate as there are of them.
//
//	go run ./bench/replicas -db postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//
// Each run gets a new database, created through the one -db names and
// dropped after the run, and a new simulator. One process's HTTP API takes
// one bulk campaign; every process claims its messages from the database.
// The program prints, for each run: the replicas, binds per process, the
// SMSC's limit on each bind, the submits per second the SMSC accepted over
// the whole seconds of the run (the first and the last left out), the ratio
// to the mean of the one-replica runs, the submits beyond one per message
// (duplicates), the time to the last final status, and the CPU per message
// of every herald process together and of the database's backends, read
// from /proc (Postgres must run on this machine for the latter).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// options are the program's flags.
type options struct {
	herald       string
	db           string
	replicas     []int
	binds        int
	bindRate     float64
	window       int
	messages     int
	rounds       int
	receiptDelay time.Duration
	settle       time.Duration
	trace        bool
	receipts     string
	timeout      time.Duration
}

func main() {
	var o options
	var replicas string
	defaultDB := os.Getenv("HERALD_TEST_POSTGRES_URL")
	if defaultDB == "" {
		defaultDB = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	flag.StringVar(&o.herald, "herald", "", "path of the herald binary; empty: build ./cmd/herald")
	flag.StringVar(&o.db, "db", defaultDB, "postgres:// URL of a database through which each run creates (and drops) its own")
	flag.StringVar(&replicas, "replicas", "1,3", "herald serve processes of each run, in turn each round")
	flag.IntVar(&o.binds, "binds", 2, "SMPP binds of each process (the connector's total is this times the processes)")
	flag.Float64Var(&o.bindRate, "bind-rate", 150, "submit_sm a second the SMSC takes on each bind; beyond, ESME_RTHROTTLED")
	flag.IntVar(&o.window, "window", 50, "SMPP window of each bind")
	flag.IntVar(&o.messages, "messages", 20_000, "SMS of the bulk campaign of each run")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds of the -replicas runs")
	flag.DurationVar(&o.receiptDelay, "receipt-delay", 50*time.Millisecond, "time between a submit_sm_resp and its receipt")
	flag.DurationVar(&o.settle, "settle", 7*time.Second, "wait after every process is up, for each to count the others in its share of the binds")
	flag.StringVar(&o.receipts, "receipts", "shared", `"shared": one connector (admin API) and one system_id for every process, the SMSC `+
		`returning a receipt on any of its sessions; "own": each process's default connector with its own system_id, receipts `+
		`returned to the process that submitted`)
	flag.BoolVar(&o.trace, "trace", false, "print the SMS each process sent in each second of a run")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on any one phase")
	flag.Parse()
	if o.receipts != "shared" && o.receipts != "own" {
		fmt.Fprintf(os.Stderr, "replicas: -receipts %q: want shared or own\n", o.receipts)
		os.Exit(2)
	}
	for _, s := range strings.Split(replicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "replicas: -replicas %q: want positive numbers separated by commas\n", replicas)
			os.Exit(2)
		}
		o.replicas = append(o.replicas, n)
	}
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "replicas:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "herald-replicas-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	if o.herald == "" {
		if o.herald, err = drive.BuildHerald(ctx, dir); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%d SMS a run, %d bind(s) a process of window %d, the SMSC takes %g submit_sm a second on each bind, "+
		"receipts %v after the submit on %s sessions, herald %s on %s, %d round(s)\n",
		o.messages, o.binds, o.window, o.bindRate, o.receiptDelay, o.receipts, o.herald, drive.Redact(o.db), o.rounds)
	var results []result
	runs := 0
	for round := range max(o.rounds, 1) {
		for _, n := range o.replicas {
			runs++
			res, err := runOnce(ctx, o, dir, n, fmt.Sprintf("%d_%d", os.Getpid(), runs))
			if err != nil {
				return fmt.Errorf("round %d, %d replica(s): %w", round+1, n, err)
			}
			res.round = round + 1
			res.printDetail(out)
			results = append(results, res)
		}
	}
	printTable(out, o, results)
	return nil
}

// printTable prints every run as a row, each rate against the mean of the
// one-replica runs.
func printTable(w io.Writer, o options, results []result) {
	var one float64
	ones := 0
	for _, r := range results {
		if r.replicas == 1 {
			one += r.steadyRate
			ones++
		}
	}
	if ones > 0 {
		one /= float64(ones)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| round | replicas | binds a process | limit a bind | msgs/s | ratio to 1 | duplicates | deadlocks | to all final | "+
		"CPU a message: herald, backends |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		ratio := "-"
		if one > 0 {
			ratio = fmt.Sprintf("%.2f x", r.steadyRate/one)
		}
		fmt.Fprintf(w, "| %d | %d | %d | %g/s | %.0f | %s | %d | %d | %.1f s | %.0f µs, %.0f µs |\n",
			r.round, r.replicas, o.binds, o.bindRate, r.steadyRate, ratio, r.duplicates, r.deadlocks, r.elapsed.Seconds(),
			perMessage(r.heraldCPU(), r.messages), perMessage(r.pgBackends, r.messages))
	}
}

func perMessage(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}
