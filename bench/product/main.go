// Command product measures Herald as its users run it: the built herald
// binary in its own process, driven through its HTTP API, sending a bulk
// SMS campaign to an SMSC in another process, until every message has its
// final status. Against the same kind of SMSC, in the same run, it first
// times a bare SMPP client (gosmpp, no state kept: it submits and counts
// receipts) for the baseline the product is compared with.
//
// For each SMSC asked for (-smsc npm, sim or both) it runs, each against a
// fresh SMSC process with the same window and receipt delay:
//
//  1. the bare client: N submit_sm, every receipt counted;
//  2. herald serve on a new database: a company provisioned through the
//     admin API, a bulk of N recipients posted to /api/v1/sms/promotional,
//     polled until Ready, started, then polled until every message is
//     Delivered or Failed.
//
// It reports, for both, the submits per second the SMSC saw (from its
// first to its latest submit_sm), the final statuses per second (from the
// start to the last receipt counted, or applied by Herald), the CPU each
// process used per message, and Herald's rate and CPU per message as
// ratios of the bare client's. The SMSCs: "npm" is interop/chaos-smsc.js on the npm package
// smpp (independent of Herald; run npm ci in interop/ first), "sim" is
// herald simulate smsc.
//
//	go run ./bench/product -db sqlite -messages 100000
//	go run ./bench/product -db 'postgres://postgres@127.0.0.1:5432/herald_bench?sslmode=disable' -smsc npm
//
// With -channel chat the campaign is a bulk of SimpleText chat messages
// posted to /api/v1/chat/send, sent to herald simulate chat in its own
// process: once with the simulator's callbacks off, until every message is
// Sent (the sends alone, read from Herald's /metrics), and once with its
// delivered and seen callbacks posted -receipt-delay apart to Herald's
// /callbacks/chat, until every message is Delivered or Seen; it reports
// the second rate as a ratio of the first.
//
//	go run ./bench/product -channel chat -messages 100000
//
// With -channel chat -provider P (or all) the campaign goes through a chat
// service of provider P, set up through the admin API with the demo
// credentials of herald simulate chat -provider P, which runs in its own
// process and posts its signed callbacks to the service's callback URL.
// The run lasts until every message is Seen (or Failed), and reports the
// rate to Delivered and to Seen, and Herald's CPU per status event its
// callbacks stored (from /proc/<pid>/stat over the run). On SQLite each
// provider's sends are first timed alone, its simulator posting no
// callbacks: the CPU of that run, taken from the other's, over the status
// events stored, is the callbacks' own CPU per status event.
//
//	go run ./bench/product -channel chat -provider all -messages 5000
//
// With -webhooks on (or both: off, then on) a webhook endpoint in this
// process, registered for every event type, takes Herald's events while
// the campaign is delivered: it checks each signature, and the run reports
// the events received, the delay from the last final status to the last
// message's final event, and the rate as a ratio of the run without.
//
//	go run ./bench/product -smsc npm -webhooks both -messages 200000
//
// With -webhook-batch N the endpoint is registered with batches of up to
// N events (and -webhook-wait as their longest wait). The run then also
// reports Herald's CPU until the last event came, and its CPU per event
// beyond the run without webhooks.
//
// With -purge N it measures SMS delivery of -messages against herald
// simulate smsc while retention (HERALD_RETENTION=1m) purges the N
// messages of campaigns delivered and finished just before, against the
// same without a purge.
//
//	go run ./bench/product -purge 1000000 -messages 100000
//
// With -bind-rate N the SMSC limits each bind to N submit_sm a second and
// answers ESME_RTHROTTLED beyond (npm: fixed one-second windows, or a
// sliding second with -limit sliding; sim: its token bucket); -binds sets
// Herald's binds. The bare client, which does not slow down, is left out,
// and each run reports the throttled answers and their share of the
// submit_sm.
//
//	go run ./bench/product -smsc npm -bind-rate 200 -binds 1 -messages 2000
//
// Without -herald it builds ./cmd/herald into a temporary directory. With
// several binaries (-herald A,B) and -rounds N, each round runs the bare
// client, then each binary in turn, each against its own baseline: the
// way to compare two builds on a shared machine.
//
// With -headline it measures every target of BENCHMARKS.md's headline
// table in one run, one run after the other, and prints the table with a
// verdict a row: the bare client, and Herald on SQLite, against the npm
// SMSC (CPU a SMS and rate, as ratios); Herald on a new Postgres database
// made through -pg (Herald's and its backends' CPU a SMS, and the rate
// over the bare client's); Herald on SQLite with an endpoint taking
// batches of -webhook-batch events (100 unless set): CPU an event beyond
// the run without, the rate with over without, the last event's lag; and
// the CPU a status event of batched chat callbacks of Herald's protocol
// and of Meta's, beyond their sends alone, -chat-messages each.
//
//	go run ./bench/product -headline -pg 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// For SMS on Postgres, each Herald run gets a new database, created through
// the existing one -db names and dropped after the run, and the run also reports the
// CPU of that database's backends and of the server's own processes,
// sampled from /proc (the server must run on this machine), and Herald's
// CPU with its backends' per message. The chat, provider and purge runs
// use a Postgres database as it is: give them an empty one.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

type options struct {
	purge        int
	purgeRun     string
	channel      string
	provider     string
	chatBatch    int
	idleWindow   time.Duration
	sendsFirst   bool
	callbacks    string
	webhooks     string
	hookBatch    int
	hookWait     time.Duration
	herald       string
	rounds       int
	db           string
	smsc         string
	interop      string
	messages     int
	window       int
	binds        int
	bindRate     int
	limit        string
	receiptDelay time.Duration
	bare         bool
	timeout      time.Duration
	headline     bool
	pg           string
	chatMessages int
}

func main() {
	var o options
	flag.IntVar(&o.purge, "purge", 0, "when positive: SMS delivery of -messages while retention purges this many messages of a finished campaign, against the same without")
	flag.StringVar(&o.purgeRun, "purge-run", "both", `with -purge: "off", "on" or "both"`)
	flag.StringVar(&o.channel, "channel", "sms", `"sms" (SMPP, against -smsc) or "chat" (HTTP, against herald simulate chat)`)
	flag.StringVar(&o.provider, "provider", "", `chat: when set, runs through a chat service of this provider against its simulator (herald simulate chat -provider), until every message is Seen: "all", "herald", "vonage", "vonage/viber", "vonage/whatsapp", "infobip" or "meta-whatsapp"`)
	flag.DurationVar(&o.idleWindow, "provider-idle", 3*time.Second, "with -provider: how long Herald's idle CPU is measured after each run, reported apart (0: not)")
	flag.IntVar(&o.chatBatch, "chat-batch", 0, "with -provider herald: its simulator posts batched callbacks of up to this many events (0: one event a request)")
	flag.BoolVar(&o.sendsFirst, "provider-sends", true, "with -provider on SQLite: time each provider's sends alone first (its simulator posts no callbacks), for the CPU per status event beyond the sends")
	flag.StringVar(&o.callbacks, "callbacks", "both", `chat: "off" (the sends alone), "on" (until every message is Delivered or Seen) or "both"`)
	flag.StringVar(&o.webhooks, "webhooks", "off", `SMS: "off", "on" (a webhook endpoint in this process takes every event) or "both" (off, then on)`)
	flag.IntVar(&o.hookBatch, "webhook-batch", 0, "with -webhooks: when positive, the endpoint takes up to this many events a request (batch.maxEvents)")
	flag.DurationVar(&o.hookWait, "webhook-wait", time.Second, "with -webhook-batch: how long the oldest event may wait for its batch to fill (batch.maxWaitMs)")
	flag.StringVar(&o.herald, "herald", "", "path of the herald binary, or several separated by commas (A,B,...: run in turn each round); empty: build ./cmd/herald")
	flag.IntVar(&o.rounds, "rounds", 1, "SMS: rounds of the bare client followed by each herald binary in turn")
	flag.StringVar(&o.db, "db", "sqlite", `"sqlite" (a new file) or a postgres:// URL of an empty database`)
	flag.StringVar(&o.smsc, "smsc", "both", `SMSC process: "npm" (interop/chaos-smsc.js), "sim" (herald simulate smsc) or "both"`)
	flag.StringVar(&o.interop, "interop", "interop", "directory of chaos-smsc.js and its node_modules")
	flag.IntVar(&o.messages, "messages", 100_000, "messages of the campaign (and submits of the bare client)")
	flag.IntVar(&o.window, "window", 100, "SMPP window of Herald and of the bare client")
	flag.IntVar(&o.binds, "binds", 1, "SMPP binds of Herald")
	flag.IntVar(&o.bindRate, "bind-rate", 0, "when positive: the SMSC takes this many submit_sm a second on each bind and throttles the rest (the bare client is left out)")
	flag.StringVar(&o.limit, "limit", "fixed", `npm SMSC with -bind-rate: "fixed" one-second windows or a "sliding" second`)
	flag.DurationVar(&o.receiptDelay, "receipt-delay", 50*time.Millisecond, "time between a submit_sm_resp and its receipt")
	flag.BoolVar(&o.bare, "bare", true, "time the bare SMPP client first, as the baseline")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on any one phase")
	flag.BoolVar(&o.headline, "headline", false, "measure every headline target in one run, one run after the other, and print them as a table (see the package doc)")
	flag.StringVar(&o.pg, "pg", "", "with -headline: a postgres:// URL of an existing database, through which a new one is made for the Postgres run (empty: none)")
	flag.IntVar(&o.chatMessages, "chat-messages", 20_000, "with -headline: messages of each chat run")
	flag.Parse()
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "product:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "herald-product-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	if o.herald == "" {
		if o.herald, err = drive.BuildHerald(ctx, dir); err != nil {
			return err
		}
	}
	if o.headline {
		return runHeadline(ctx, o, dir, out)
	}
	if o.purge > 0 {
		return runPurges(ctx, o, dir, out)
	}
	if o.channel == "chat" && o.provider != "" {
		return runProviders(ctx, o, dir, out)
	}
	if o.channel == "chat" {
		return runChats(ctx, o, dir, out)
	}
	kinds := []string{o.smsc}
	if o.smsc == "both" {
		kinds = []string{"npm", "sim"}
	}
	bins := strings.Split(o.herald, ",")
	fmt.Fprintf(out, "%d messages, window %d, %d bind(s), receipts %v after the submit, herald %s on %s, %d round(s)\n",
		o.messages, o.window, o.binds, o.receiptDelay, o.herald, drive.Redact(o.db), o.rounds)
	if o.bindRate > 0 {
		fmt.Fprintf(out, "the SMSC takes %d submit_sm a second on each bind (%s), throttles the rest\n", o.bindRate, o.limitName())
		o.bare = false
	}
	hooks, err := runModes("-webhooks", o.webhooks)
	if err != nil {
		return err
	}
	runs := 0
	for _, kind := range kinds {
		for round := range max(o.rounds, 1) {
			var base result
			if o.bare {
				if base, err = runBare(ctx, o, kind, dir); err != nil {
					return fmt.Errorf("bare client against %s: %w", kind, err)
				}
				base.print(out, "bare gosmpp client", kind, result{})
			}
			for b, bin := range bins {
				var without result
				for _, withHooks := range hooks {
					runs++
					db, drop := o.db, func() {}
					if db != "sqlite" {
						if db, drop, err = freshDatabase(ctx, o.db, fmt.Sprintf("run%d_%d", os.Getpid(), runs)); err != nil {
							return err
						}
					}
					res, err := runHerald(ctx, o, bin, kind, dir, db, withHooks)
					drop()
					if err != nil {
						return fmt.Errorf("herald %s against %s: %w", bin, kind, err)
					}
					who := "herald serve"
					if len(bins) > 1 {
						who = fmt.Sprintf("herald %c (r%d)", 'A'+b, round+1)
					}
					if withHooks {
						who = "herald+webhooks"
					}
					res.print(out, who, kind, base)
					if withHooks {
						res.printHooks(out, without)
					} else {
						without = res
					}
				}
			}
		}
	}
	return nil
}

// runChats runs the chat product benchmark: the sends alone, then with
// callbacks, as -callbacks asks (a Postgres database serves one run).
func runChats(ctx context.Context, o options, dir string, out io.Writer) error {
	modes, err := runModes("-callbacks", o.callbacks)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d chat messages, callbacks %v after acceptance, herald %s on %s\n", o.messages, o.receiptDelay, o.herald, drive.Redact(o.db))
	var alone chatResult
	for i, cb := range modes {
		if i > 0 && o.db != "sqlite" {
			fmt.Fprintln(out, "(a Postgres database serves one run: the run with callbacks skipped)")
			break
		}
		res, err := runChat(ctx, o, dir, o.db, cb)
		if err != nil {
			return fmt.Errorf("chat, callbacks %v: %w", cb, err)
		}
		res.print(out, alone)
		if !cb {
			alone = res
		}
	}
	return nil
}

// simulator is the binary that runs herald simulate smsc: the first of
// -herald, whichever build a run measures.
func (o options) simulator() string {
	first, _, _ := strings.Cut(o.herald, ",")
	return first
}

// limitName names the SMSC's limit on each bind.
func (o options) limitName() string {
	if o.smsc == "sim" {
		return "token bucket"
	}
	if o.smsc == "both" {
		return "npm: " + o.limit + " window; sim: token bucket"
	}
	return o.limit + " window"
}

// runModes reads a flag of off, on or both: the runs without and with the
// thing it switches, in that order.
func runModes(flag, v string) ([]bool, error) {
	modes := map[string][]bool{"off": {false}, "on": {true}, "both": {false, true}}[v]
	if modes == nil {
		return nil, fmt.Errorf("%s %q: want off, on or both", flag, v)
	}
	return modes, nil
}

// result is what one run measured.
type result struct {
	messages   int
	submitRate float64       // submit_sm accepted per second at the SMSC
	throttled  int           // submit_sm the SMSC throttled (-bind-rate)
	finalRate  float64       // final statuses per second
	elapsed    time.Duration // from the start to the last final status
	cpu        time.Duration // of the sender (bare client or herald)
	smscCPU    time.Duration
	// pg is the CPU of the Postgres server over the run (Herald on Postgres).
	pg        pgCPU
	pgSampled bool
	pgTables  []tableWrites
	delivered int
	failed    int
	// With webhooks: events received, bad signatures, and how long after
	// the last final status the last message's final event came.
	events, badSignatures int
	lastEventLag          time.Duration
	// hookCPU is Herald's CPU from the start to the last event's arrival.
	hookCPU time.Duration
}

// printHooks prints the webhook figures of a run, against the run
// without webhooks when there was one.
func (r result) printHooks(w io.Writer, without result) {
	fmt.Fprintf(w, "  webhooks: %d events received (%.0f/s), %d with a bad signature; the last message's final event %v after its final status",
		r.events, float64(r.events)/r.elapsed.Seconds(), r.badSignatures, r.lastEventLag.Round(time.Millisecond))
	if without.finalRate > 0 {
		fmt.Fprintf(w, "; %.2f x the final/s without webhooks", r.finalRate/without.finalRate)
	}
	fmt.Fprintf(w, "; Herald CPU to the last event %.1f µs a message", perMessage(r.hookCPU, r.messages))
	if without.finalRate > 0 && r.events > 0 {
		fmt.Fprintf(w, ", %.1f µs an event beyond the run without", float64((r.hookCPU-without.cpu).Microseconds())/float64(r.events))
	}
	fmt.Fprintln(w)
}

func (r result) print(w io.Writer, who, smsc string, base result) {
	fmt.Fprintf(w, "%-18s smsc=%s: %d final in %v: %.0f submits/s at the SMSC, %.0f final/s; CPU per message %.1f µs (SMSC %.1f µs); delivered %d, failed %d",
		who, smsc, r.messages, r.elapsed.Round(time.Millisecond), r.submitRate, r.finalRate,
		perMessage(r.cpu, r.messages), perMessage(r.smscCPU, r.messages), r.delivered, r.failed)
	if r.throttled > 0 {
		fmt.Fprintf(w, "; %d throttled (%.1f %% of the submit_sm)", r.throttled, 100*float64(r.throttled)/float64(r.throttled+r.delivered+r.failed))
	}
	if base.finalRate > 0 {
		fmt.Fprintf(w, "; %.2f x the bare client's final/s, %.2f x its submits/s", r.finalRate/base.finalRate, r.submitRate/base.submitRate)
	}
	if base.cpu > 0 && base.messages > 0 {
		fmt.Fprintf(w, "; %.2f x its CPU per message", perMessage(r.cpu, r.messages)/perMessage(base.cpu, base.messages))
	}
	fmt.Fprintln(w)
	if r.pgSampled {
		fmt.Fprintf(w, "  postgres: backends of the database %.1f µs a message (%d processes), the server's own processes %.1f µs; herald + backends %.1f µs a message\n",
			perMessage(r.pg.backends, r.messages), r.pg.processes, perMessage(r.pg.server, r.messages), perMessage(r.cpu+r.pg.backends, r.messages))
	}
	for _, t := range r.pgTables {
		fmt.Fprintf(w, "  %s (from its creation): %.2f inserts, %.2f updates (%.0f %% heap-only), %.2f deletes a message; autovacuum %d times\n", t.name,
			float64(t.inserts)/float64(r.messages), float64(t.updates)/float64(r.messages),
			100*float64(t.hotUpdates)/float64(max(t.updates, 1)), float64(t.deletes)/float64(r.messages), t.autovacuums)
	}
}

// cpuTimes returns the CPU time each process has used.
func cpuTimes(pids ...int) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		var err error
		if out[i], err = drive.CPUTime(pid); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func perMessage(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

// runHerald runs the herald binary bin against a fresh SMSC of kind.
func runHerald(ctx context.Context, o options, bin, kind, dir, db string, withHooks bool) (result, error) {
	sm, err := startSMSC(ctx, o, kind, dir)
	if err != nil {
		return result{}, err
	}
	defer sm.Stop()
	dbURL := db
	if db == "sqlite" {
		dbURL = "sqlite://" + filepath.Join(dir, fmt.Sprintf("herald-%s-%d.db", kind, time.Now().UnixNano()))
	}
	srv, err := drive.StartHerald(ctx, bin, dbURL, dir, []string{
		"HERALD_SMPP_ADDR=" + sm.addr, "HERALD_SMPP_SYSTEM_ID=herald", "HERALD_SMPP_PASSWORD=secret",
		fmt.Sprintf("HERALD_SMPP_WINDOW=%d", o.window), fmt.Sprintf("HERALD_SMPP_BINDS=%d", max(o.binds, 1)), "HERALD_WEBHOOK_ALLOW=loopback",
	}, o.timeout)
	if err != nil {
		return result{}, err
	}
	defer srv.Stop()
	c := &drive.Client{Base: srv.Base, HTTP: &http.Client{Timeout: o.timeout}}
	if err := c.Provision(ctx, srv.AdminToken); err != nil {
		return result{}, err
	}
	var rc *receiver
	if withHooks {
		if rc, err = startReceiver(o.messages); err != nil {
			return result{}, err
		}
		defer rc.stop()
		if err := rc.register(ctx, c, o.hookBatch, o.hookWait); err != nil {
			return result{}, err
		}
	}
	id, _, _, err := c.BulkToReady(ctx, drive.BulkBody(c.TemplateID, o.messages), o.timeout)
	if err != nil {
		return result{}, err
	}
	pid := srv.Cmd.Process.Pid
	pgs, err := newPGSampler(dbURL)
	if err != nil {
		return result{}, err
	}
	if pgs != nil {
		if err := pgs.start(); err != nil {
			return result{}, err
		}
	}
	before, err := cpuTimes(pid, sm.Pid())
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	if err := c.API(ctx, "POST", "/campaigns/"+id+"/start", nil, http.StatusOK, nil); err != nil {
		return result{}, err
	}
	delivered, failed, err := c.WaitFinal(ctx, id, o.timeout)
	if err != nil {
		return result{}, err
	}
	elapsed := time.Since(start)
	after, err := cpuTimes(pid, sm.Pid())
	if err != nil {
		return result{}, err
	}
	var pg pgCPU
	if pgs != nil {
		if pg, err = pgs.end(); err != nil {
			return result{}, err
		}
	}
	st, err := sm.stats()
	if err != nil {
		return result{}, err
	}
	res := result{
		messages: o.messages, submitRate: st.rate(), throttled: st.throttled, finalRate: float64(o.messages) / elapsed.Seconds(), elapsed: elapsed,
		cpu: after[0] - before[0], smscCPU: after[1] - before[1], delivered: delivered, failed: failed,
		pg: pg, pgSampled: pgs != nil,
	}
	if pgs != nil {
		if res.pgTables, err = pgTableWrites(ctx, dbURL); err != nil {
			return result{}, err
		}
	}
	if rc != nil {
		last, err := rc.waitAll(ctx, o.timeout)
		if err != nil {
			return result{}, err
		}
		end, err := cpuTimes(pid)
		if err != nil {
			return result{}, err
		}
		res.hookCPU = end[0] - before[0]
		dups, bad := rc.Duplicates(), rc.BadSignatures()
		rc.mu.Lock()
		res.events, res.badSignatures, res.lastEventLag = rc.events+dups, bad, last.Sub(start.Add(elapsed))
		rc.mu.Unlock()
	}
	return res, nil
}
