// Command scale measures whether Herald's costs stay flat as its data
// grows: the reads of the API, the preparation of a bulk and its delivery
// on a database holding the history of many large campaigns, against the
// same on an empty database, and the bytes each message takes on disk.
//
// It runs the built herald binary as its own process (herald serve, on a
// new database), with an SMSC in another (herald simulate smsc, receipts
// -receipt-delay after each submit), and drives it through its HTTP API:
//
//  1. Empty database: companies are provisioned through the admin API; a
//     bulk of -recipients is posted to /api/v1/sms/promotional and timed
//     to Ready, then started and timed until every message is Delivered or
//     Failed (final/s). Herald is restarted (see settle) and the reads
//     below are timed.
//  2. Fill: the history of -campaigns campaigns of -recipients each, spread
//     over -companies companies, is posted through the API and prepared by
//     Herald to Ready, one campaign after the other; the first is a chat
//     Survey campaign of company 0, the others SMS. Each Ready campaign is
//     then given the history of a delivered campaign by SQL this program
//     runs on the database itself: final statuses and times, SMS part
//     rows, chat sequence numbers, survey answers, the campaign's counters
//     and its company's pending count, status Completed. That SQL is a
//     DIAGNOSTIC FAST PATH for the history only (delivering millions of
//     messages through the SMSC would take hours): nothing measured goes
//     through it, and herald check recounts its counters at the end (see
//     history.go). After the survey campaign's history Herald is restarted
//     and the survey summary timed, on a database that holds little else.
//  3. Full database: Herald is restarted (a new process, with the
//     operating system's page cache as the fill left it: both sets of reads
//     run in a fresh process) and the reads are timed, sequentially,
//     -queries of each, for random recipients of random history campaigns
//     of every company: GET /api/v1/messages?phoneNumber= and
//     ?externalUserId=, GET /api/v1/campaigns/{id}, GET /api/v1/campaigns
//     (first page); and -summaries survey summaries of the survey
//     campaign. Then a new bulk, to the same recipients as the first, is
//     timed to Ready and through its delivery, against step 1; and a bulk
//     of a company with no history (to numbers new to it) to Ready. The
//     first adds an entry beside each recipient's earlier ones in the
//     message indexes by phone number and external id, scattered over
//     them; the second appends its entries.
//
// Every set of reads starts with -warmup requests of each kind that are not
// timed. On Postgres the database is vacuumed and analyzed before each set
// (-vacuum): a real history has months of autovacuum behind it, the fast
// path's none.
//
// With -measure-at the figures of step 3 are also measured after the
// given numbers of history campaigns, and the fill then goes on: one run
// gives, for instance, 10 and 30 million messages (-measure-at 50
// -campaigns 150), each stage with a newcomer company of its own. The
// bytes on disk of an earlier stage are read with Herald running.
//  4. Herald is stopped; the program reports the bytes on disk per message
//     (SQLite: page_count × page_size after a checkpoint, and the files;
//     Postgres: pg_database_size; and the messages, sms_parts and
//     survey_results tables with their indexes) and runs herald check.
//
// The report gives each figure with its target: reads at p99 under 10 ms
// (messages) and 5 ms (campaigns), the survey summary under 200 ms, the
// time to Ready within 1.2 times and the delivery rate at least 0.8 times
// their figures on the empty database. A missed target is reported, not an
// error; the exit status is 1 on errors only (herald check finding drift
// is one).
//
// Recipients: see layout (plan.go). At the default size the history is
// fifty 200,000-recipient campaigns of five companies, 10,000,000 messages
// (10,400,000 with the two timed bulks), and each company's audience is
// 1,000,000 numbers, each number in about two of its campaigns.
//
//	go build -o /tmp/herald ./cmd/herald
//	go run ./bench/scale -herald /tmp/herald
//	psql -h 127.0.0.1 -U postgres -c 'CREATE DATABASE herald_scale'
//	go run ./bench/scale -herald /tmp/herald -db 'postgres://postgres@127.0.0.1:5432/herald_scale?sslmode=disable'
//	go run ./bench/scale -campaigns 4 -recipients 20000 -companies 2 -queries 300
//
// Without -herald it builds ./cmd/herald into a temporary directory. A
// Postgres database is used as it is and must be empty; a SQLite database
// is a new file in a temporary directory, removed at the end unless -keep.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// options are the command's flags.
type options struct {
	herald       string
	db           string
	campaigns    int
	recipients   int
	companies    int
	audience     int
	queries      int
	summaries    int
	warmup       int
	window       int
	receiptDelay time.Duration
	timeout      time.Duration
	seed         uint64
	vacuum       bool
	check        bool
	keep         bool
	span         string
	measureAt    string
}

// main reads the flags, runs the measurement and exits 1 on an error.
func main() {
	var o options
	flag.StringVar(&o.herald, "herald", "", "path of the herald binary; empty: build ./cmd/herald")
	flag.StringVar(&o.db, "db", "sqlite", `"sqlite" (a new file) or a postgres:// URL of an empty database`)
	flag.IntVar(&o.campaigns, "campaigns", 50, "campaigns of the history (the first a chat survey)")
	flag.IntVar(&o.recipients, "recipients", 200_000, "recipients of each campaign, of the history and of the two timed bulks")
	flag.IntVar(&o.companies, "companies", 5, "companies the history's campaigns are spread over")
	flag.IntVar(&o.audience, "audience", 0, "numbers of each company's audience; 0: half the recipients of the campaigns of the busiest company, at least -recipients")
	flag.IntVar(&o.queries, "queries", 2000, "requests of each kind of read timed")
	flag.IntVar(&o.summaries, "summaries", 50, "survey summaries timed")
	flag.IntVar(&o.warmup, "warmup", 5, "requests of each kind of read sent, untimed, before the timed ones")
	flag.IntVar(&o.window, "window", 100, "SMPP window of Herald")
	flag.DurationVar(&o.receiptDelay, "receipt-delay", 50*time.Millisecond, "time between a submit_sm_resp and its receipt")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "bound on any one phase")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the random choice of the reads' targets")
	flag.BoolVar(&o.vacuum, "vacuum", true, "Postgres: VACUUM (ANALYZE) the database before each set of reads, as autovacuum would have by then")
	flag.BoolVar(&o.check, "check", true, "run herald check on the database at the end")
	flag.StringVar(&o.span, "partition-span", "", "Postgres: HERALD_PARTITION_SPAN of Herald (empty: its default); a span short beside the fill spreads the history over partitions as weeks of traffic would")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (logs, and the SQLite database)")
	flag.StringVar(&o.measureAt, "measure-at", "", "comma-separated numbers of history campaigns after which the full database's figures are also measured, "+
		"before the fill goes on (the last is always -campaigns): 50 with -campaigns 150 measures at about 10 and 30 million messages in one run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

// run runs the whole measurement and prints its progress and report.
func run(ctx context.Context, o options, out io.Writer) (err error) {
	lay, err := newLayout(o)
	if err != nil {
		return err
	}
	stages, err := stagesOf(o.measureAt, o.campaigns)
	if err != nil {
		return err
	}
	if o.queries < 1 || o.summaries < 1 || o.warmup < 0 {
		return fmt.Errorf("-queries %d, -summaries %d, -warmup %d: want at least 1, 1 and 0", o.queries, o.summaries, o.warmup)
	}
	dir, err := os.MkdirTemp("", "herald-scale-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer func() {
		if o.keep {
			fmt.Fprintf(out, "kept %s\n", dir)
		} else if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = fmt.Errorf("remove %s: %w", dir, rerr)
		}
	}()
	if o.herald == "" {
		if o.herald, err = drive.BuildHerald(ctx, dir); err != nil {
			return err
		}
	}
	dbURL, err := databaseURL(o.db, dir)
	if err != nil {
		return err
	}
	var db *database
	if o.db != "sqlite" {
		if db, err = openDatabase(ctx, dbURL); err != nil {
			return err
		}
		defer db.close()
		if err := db.checkEmpty(ctx); err != nil {
			return err
		}
	}
	sm, err := startSMSC(ctx, o.herald, dir, o.receiptDelay, o.timeout)
	if err != nil {
		return err
	}
	defer sm.Stop()
	h := &harness{o: o, dir: dir, dbURL: dbURL, smscAddr: sm.addr, hc: &http.Client{Timeout: o.timeout}}
	if err := h.start(ctx); err != nil {
		return err
	}
	defer h.stop()
	// One company more than the history's for each stage: the newcomer,
	// with no history, whose bulk on the full database goes to an audience
	// new to it.
	if h.companies, err = provision(ctx, h.srv.Base, h.srv.AdminToken, h.hc, lay.companies+len(stages)); err != nil {
		return fmt.Errorf("provision: %w", err)
	}
	if db == nil {
		if db, err = openDatabase(ctx, dbURL); err != nil {
			return err
		}
		defer db.close()
	}
	rep := &report{o: o, store: "SQLite " + db.path, reads: readKinds()}
	if db.pg {
		rep.store = "Postgres " + drive.Redact(dbURL)
	}
	fmt.Fprintf(out, "herald %s on %s; SMSC herald simulate smsc, receipts %v after the submit, window %d\n",
		o.herald, rep.store, o.receiptDelay, o.window)
	fmt.Fprintf(out, "history: %d campaigns of %d recipients over %d companies (audiences of %d numbers, neighbours sharing half)\n",
		o.campaigns, o.recipients, o.companies, lay.audience)
	r := rand.New(rand.NewPCG(o.seed, 0))

	// 1. The empty database.
	first := h.companies[0]
	if rep.base, err = timeBulk(ctx, h.srv, first, 0, o.recipients, o.timeout); err != nil {
		return fmt.Errorf("empty database: %w", err)
	}
	fmt.Fprintf(out, "empty database: bulk Ready in %v, delivered at %.0f final/s\n", rep.base.ready.Round(time.Millisecond), rep.base.finalRate())
	if rep.diskEmpty, err = db.diskUse(ctx, false); err != nil {
		return fmt.Errorf("empty database: %w", err)
	}
	if err := h.settle(ctx, db, rep, "empty database"); err != nil {
		return err
	}
	if rep.empty, err = timeAll(ctx, h.hc, rep.reads, []target{{first, rep.base.id, 0}}, o, r); err != nil {
		return fmt.Errorf("empty database: %w", err)
	}
	fmt.Fprintln(out, "empty database: reads timed")

	// 2. The fill, and 3. the full database's figures after each stage.
	hist := &history{d: db}
	var targets []target
	var survey target
	fillStart := time.Now()
	for i, p := range lay.campaigns {
		co := h.companies[p.company]
		path, tpl, kind := "/api/v1/sms/promotional", co.client.TemplateID, "SMS"
		if p.survey {
			path, tpl, kind = "/api/v1/chat/send", co.surveyID, "chat survey"
		}
		id, _, ready, err := co.client.BulkToReadyAt(ctx, path, drive.BulkBodyFrom(tpl, p.first, o.recipients), o.timeout)
		if err != nil {
			return fmt.Errorf("history campaign %d: %w", i+1, err)
		}
		w, err := hist.deliver(ctx, id, o.recipients, p.survey)
		if err != nil {
			return fmt.Errorf("history campaign %d: fast path: %w", i+1, err)
		}
		rep.fillReady, rep.fillWritten = append(rep.fillReady, ready), append(rep.fillWritten, w)
		t := target{co, id, p.first}
		targets = append(targets, t)
		fmt.Fprintf(out, "history %d/%d: company %d, %s from recipient %d: Ready in %v; fast path %v: %d delivered (%d seen), %d failed, %d answers\n",
			i+1, len(lay.campaigns), p.company, kind, p.first, ready.Round(time.Millisecond), w.took.Round(time.Millisecond),
			w.delivered, w.seen, w.failed, w.answers)
		if p.survey {
			survey = t
			if err := h.settle(ctx, db, rep, "survey campaign's history"); err != nil {
				return err
			}
			if rep.surveyEarly, err = timeReads(ctx, h.hc, summaryKind(), []target{survey}, o.recipients, o.warmup, o.summaries, r); err != nil {
				return fmt.Errorf("survey summary after its history: %w", err)
			}
		}
		if k := len(rep.stages); i+1 == stages[k] {
			rep.fill = time.Since(fillStart)
			st, err := h.measureFull(ctx, db, rep, first, h.companies[lay.companies+k], targets, survey, r, out)
			if err != nil {
				return fmt.Errorf("after %d history campaigns: %w", i+1, err)
			}
			st.campaigns = i + 1
			rep.stages = append(rep.stages, st)
			if k < len(stages)-1 {
				// An earlier stage's table now, in case the run stops later.
				fmt.Fprintln(out)
				rep.table(out, st)
			}
		}
	}

	// 4. Bytes on disk, and the check.
	h.stop()
	if rep.diskFull, err = db.diskUse(ctx, !db.pg); err != nil {
		return fmt.Errorf("full database: %w", err)
	}
	rep.stages[len(rep.stages)-1].disk = rep.diskFull
	if o.check {
		if rep.check, rep.checkTook, err = heraldCheck(ctx, o.herald, dbURL); err != nil {
			return err
		}
	}
	rep.print(out)
	return nil
}

// measureFull times, on the database as filled so far: the reads, the
// survey summary, a new bulk of company first to the recipients of its
// first bulk through its delivery, and a bulk of newcomer (a company with
// no history) to Ready; then the bytes on disk, with Herald running.
func (h *harness) measureFull(ctx context.Context, db *database, rep *report, first, newcomer *company, targets []target, survey target,
	r *rand.Rand, out io.Writer) (stage, error) {
	var st stage
	var err error
	if err := h.settle(ctx, db, rep, fmt.Sprintf("fill's first %d campaigns", len(targets))); err != nil {
		return st, err
	}
	if st.full, err = timeAll(ctx, h.hc, rep.reads, targets, h.o, r); err != nil {
		return st, err
	}
	if st.surveyFull, err = timeReads(ctx, h.hc, summaryKind(), []target{survey}, h.o.recipients, h.o.warmup, h.o.summaries, r); err != nil {
		return st, err
	}
	fmt.Fprintf(out, "after %d history campaigns: reads timed\n", len(targets))
	if st.last, err = timeBulk(ctx, h.srv, first, 0, h.o.recipients, h.o.timeout); err != nil {
		return st, err
	}
	fmt.Fprintf(out, "after %d history campaigns: bulk Ready in %v, delivered at %.0f final/s\n", len(targets),
		st.last.ready.Round(time.Millisecond), st.last.finalRate())
	if st.fresh, err = timeReady(ctx, h.srv, newcomer, 0, h.o.recipients, h.o.timeout); err != nil {
		return st, fmt.Errorf("a new company: %w", err)
	}
	fmt.Fprintf(out, "after %d history campaigns: a new company's bulk Ready in %v\n", len(targets), st.fresh.ready.Round(time.Millisecond))
	if st.disk, err = db.diskUse(ctx, false); err != nil {
		return st, err
	}
	return st, nil
}

// stagesOf parses -measure-at: increasing campaign counts below
// campaigns, to which campaigns itself is added.
func stagesOf(list string, campaigns int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n >= campaigns || (len(out) > 0 && n <= out[len(out)-1]) {
			return nil, fmt.Errorf("-measure-at %q: want increasing numbers of campaigns from 1 to %d", list, campaigns-1)
		}
		out = append(out, n)
	}
	return append(out, campaigns), nil
}

// timeAll times every kind of read in turn against the targets, -queries
// of each.
func timeAll(ctx context.Context, hc *http.Client, kinds []readKind, targets []target, o options, r *rand.Rand) ([]latency, error) {
	out := make([]latency, len(kinds))
	for i, k := range kinds {
		var err error
		if out[i], err = timeReads(ctx, hc, k, targets, o.recipients, o.warmup, o.queries, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// harness runs herald serve, one process at a time, on the run's
// database, sending SMS to the run's SMSC.
type harness struct {
	o         options
	dir       string
	dbURL     string
	smscAddr  string
	hc        *http.Client
	srv       *drive.Server
	starts    int
	companies []*company // their clients follow the server across restarts
}

// start starts a herald process, its log in a directory of its own, and
// points the companies' clients at it.
func (h *harness) start(ctx context.Context) error {
	h.starts++
	logs := filepath.Join(h.dir, fmt.Sprintf("herald-%d", h.starts))
	if err := os.Mkdir(logs, 0o755); err != nil {
		return fmt.Errorf("log dir: %w", err)
	}
	srv, err := drive.StartHerald(ctx, h.o.herald, h.dbURL, logs, []string{
		"HERALD_SMPP_ADDR=" + h.smscAddr, "HERALD_SMPP_SYSTEM_ID=herald", "HERALD_SMPP_PASSWORD=secret",
		fmt.Sprintf("HERALD_SMPP_WINDOW=%d", h.o.window), "HERALD_PARTITION_SPAN=" + h.o.span,
	}, h.o.timeout)
	if err != nil {
		return fmt.Errorf("start herald: %w", err)
	}
	h.srv = srv
	for _, co := range h.companies {
		co.client.Base = srv.Base
	}
	return nil
}

// stop stops the running herald process, if any.
func (h *harness) stop() {
	if h.srv != nil {
		h.srv.Stop()
		h.srv = nil
	}
}

// settle readies the database and Herald for a set of reads after what.
// It stops herald; on Postgres with -vacuum it vacuums and analyzes the
// database (noted in the report), as autovacuum would have in the time a
// real history takes; on SQLite it copies the write-ahead log into the
// database file and empties it, as Herald's checkpointer would have long
// since; then it has the operating system write out its dirty pages
// (sync), so that what is timed next does not pay for the gigabytes the
// fast path has just written; and it starts herald again.
func (h *harness) settle(ctx context.Context, db *database, rep *report, what string) error {
	h.stop()
	start := time.Now()
	switch {
	case db.pg && h.o.vacuum:
		if _, err := db.db.ExecContext(ctx, "VACUUM (ANALYZE)"); err != nil {
			return fmt.Errorf("vacuum after the %s: %w", what, err)
		}
		rep.vacuums = append(rep.vacuums, fmt.Sprintf("%v after the %s", time.Since(start).Round(time.Millisecond), what))
	case !db.pg:
		if _, err := db.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			return fmt.Errorf("checkpoint after the %s: %w", what, err)
		}
	}
	syscall.Sync()
	return h.start(ctx)
}
