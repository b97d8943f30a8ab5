// Command apiload measures the public API of a running herald binary on
// loopback: how long a 200,000-recipient POST /api/v1/sms/promotional takes
// to reach Ready, the server's peak memory meanwhile, and the throughput and
// latency of the transactional add-message endpoint.
//
// It builds nothing and fakes nothing: it starts the herald binary it is
// given (build one with `go build -o /tmp/herald ./cmd/herald`) on a
// fresh database, provisions a company through the admin API, and drives
// the server over HTTP like a client would. Every request it makes is
// bounded by -timeout; the whole run by the sizes given.
//
//	go run ./bench/apiload -herald /tmp/herald -db sqlite
//	go run ./bench/apiload -herald /tmp/herald -db 'postgres://postgres@127.0.0.1:5432/herald_bench?sslmode=disable'
//
// With -db sqlite the database is a new file in a temporary directory; a
// Postgres database is used as it is (give it an empty one).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

type options struct {
	herald      string
	db          string
	recipients  int
	bulkRuns    int
	addDuration time.Duration
	addWorkers  int
	concurrent  int
	timeout     time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.herald, "herald", "", "path of the herald binary (required)")
	flag.StringVar(&o.db, "db", "sqlite", `"sqlite" (a new file) or a postgres:// URL of an empty database`)
	flag.IntVar(&o.recipients, "recipients", 200_000, "recipients per bulk request")
	flag.IntVar(&o.bulkRuns, "bulk-runs", 3, "bulk requests, one after the other")
	flag.DurationVar(&o.addDuration, "add-duration", 10*time.Second, "how long to drive add-message")
	flag.IntVar(&o.addWorkers, "add-workers", 16, "concurrent add-message clients")
	flag.IntVar(&o.concurrent, "concurrent-bulks", 0, "at the end, this many companies each post one bulk request at once (0: none)")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "bound on any one wait")
	flag.Parse()
	if o.herald == "" {
		fmt.Fprintln(os.Stderr, "apiload: -herald is required (go build -o /tmp/herald ./cmd/herald)")
		os.Exit(2)
	}
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "apiload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "herald-apiload-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	dbURL := o.db
	if dbURL == "sqlite" {
		dbURL = "sqlite://" + filepath.Join(dir, "herald.db")
	}
	srv, err := drive.StartHerald(ctx, o.herald, dbURL, dir, nil, o.timeout)
	if err != nil {
		return err
	}
	defer srv.Stop()

	c := &drive.Client{Base: srv.Base, HTTP: &http.Client{
		Timeout:   o.timeout,
		Transport: &http.Transport{MaxIdleConnsPerHost: o.addWorkers * 2, MaxConnsPerHost: o.addWorkers * 2},
	}}
	if err := c.Provision(ctx, srv.AdminToken); err != nil {
		return err
	}
	fmt.Fprintf(out, "herald %s on %s\n", o.herald, drive.Redact(dbURL))
	baseline, _ := drive.PeakRSS(srv.Cmd.Process.Pid)
	fmt.Fprintf(out, "server peak RSS after start: %.1f MiB\n", drive.MiB(baseline))

	body := drive.BulkBody(c.TemplateID, o.recipients)
	fmt.Fprintf(out, "bulk request body: %.1f MiB, %d recipients\n", drive.MiB(int64(len(body))), o.recipients)
	for i := range o.bulkRuns {
		_, accepted, ready, err := c.BulkToReady(ctx, body, o.timeout)
		if err != nil {
			return fmt.Errorf("bulk run %d: %w", i+1, err)
		}
		peak, _ := drive.PeakRSS(srv.Cmd.Process.Pid)
		fmt.Fprintf(out, "bulk run %d: 202 after %v, Ready after %v (%.0f recipients/s); server peak RSS so far %.1f MiB\n",
			i+1, accepted.Round(time.Millisecond), ready.Round(time.Millisecond), float64(o.recipients)/ready.Seconds(), drive.MiB(peak))
	}

	if o.concurrent > 0 {
		if err := concurrentBulks(ctx, srv, o, out); err != nil {
			return err
		}
	}
	if o.addDuration <= 0 {
		return nil
	}
	res, err := addMessages(ctx, c, o.addWorkers, o.addDuration)
	if err != nil {
		return fmt.Errorf("add-message load: %w", err)
	}
	fmt.Fprintf(out, "add-message: %d workers for %v: %d requests, %.0f requests/s, p50 %v, p99 %v, max %v, errors %d\n",
		o.addWorkers, o.addDuration, res.n, res.rate, res.p50, res.p99, res.max, res.errors)
	peak, _ := drive.PeakRSS(srv.Cmd.Process.Pid)
	fmt.Fprintf(out, "server peak RSS over the whole run: %.1f MiB\n", drive.MiB(peak))
	return nil
}

type loadResult struct {
	n, errors     int
	rate          float64
	p50, p99, max time.Duration
}

// addMessages drives add-message from workers clients for d and measures
// each request's latency.
func addMessages(ctx context.Context, c *drive.Client, workers int, d time.Duration) (loadResult, error) {
	path := "/sms/campaigns/" + c.CampaignID + "/messages"
	lat := make([][]time.Duration, workers)
	errs := make([]int, workers)
	var firstErr error
	var errOnce sync.Once
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				body := fmt.Appendf(nil, `{"phoneNumber":"+4479%02d%06d","externalUserId":"w%d-%d","placeholders":{"name":"N","code":"1"}}`, w, i%1_000_000, w, i)
				t0 := time.Now()
				err := c.Do(ctx, "POST", "/api/v1"+path, [2]string{"X-API-Key", c.APIKey}, body, http.StatusAccepted, nil)
				lat[w] = append(lat[w], time.Since(t0))
				if err != nil {
					errs[w]++
					errOnce.Do(func() { firstErr = err })
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	var r loadResult
	for w := range workers {
		all = append(all, lat[w]...)
		r.errors += errs[w]
	}
	if len(all) == 0 {
		return r, errors.New("no request completed")
	}
	slices.Sort(all)
	r.n = len(all)
	r.rate = float64(r.n) / elapsed.Seconds()
	r.p50 = all[len(all)/2].Round(10 * time.Microsecond)
	r.p99 = all[len(all)*99/100].Round(10 * time.Microsecond)
	r.max = all[len(all)-1].Round(10 * time.Microsecond)
	if r.errors > 0 {
		return r, fmt.Errorf("%d of %d requests failed, first: %w", r.errors, r.n, firstErr)
	}
	return r, nil
}

// concurrentBulks provisions o.concurrent more companies and has each post
// one bulk request of o.recipients at the same moment, then waits until
// every campaign is Ready and reports each one's times and the server's
// peak memory.
func concurrentBulks(ctx context.Context, srv *drive.Server, o options, out io.Writer) error {
	clients := make([]*drive.Client, o.concurrent)
	bodies := make([][]byte, o.concurrent)
	for i := range clients {
		clients[i] = &drive.Client{Base: srv.Base, HTTP: &http.Client{Timeout: o.timeout}}
		if err := clients[i].Provision(ctx, srv.AdminToken); err != nil {
			return fmt.Errorf("company %d: %w", i+1, err)
		}
		bodies[i] = drive.BulkBody(clients[i].TemplateID, o.recipients)
	}
	type outcome struct {
		accepted, ready time.Duration
		err             error
	}
	res := make([]outcome, o.concurrent)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			<-start
			_, a, r, err := c.BulkToReady(ctx, bodies[i], o.timeout)
			res[i] = outcome{a, r, err}
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	all := time.Since(t0)
	var failed int
	for i, r := range res {
		if r.err != nil {
			failed++
			fmt.Fprintf(out, "concurrent bulk %d: %v\n", i+1, r.err)
			continue
		}
		fmt.Fprintf(out, "concurrent bulk %d: 202 after %v, Ready after %v\n", i+1, r.accepted.Round(time.Millisecond), r.ready.Round(time.Millisecond))
	}
	peak, _ := drive.PeakRSS(srv.Cmd.Process.Pid)
	fmt.Fprintf(out, "%d bulk requests of %d recipients from %d companies at once: all Ready after %v, %d failed; server peak RSS so far %.1f MiB\n",
		o.concurrent, o.recipients, o.concurrent, all.Round(time.Millisecond), failed, drive.MiB(peak))
	if failed > 0 {
		return fmt.Errorf("%d of %d concurrent bulk requests failed", failed, o.concurrent)
	}
	return nil
}
