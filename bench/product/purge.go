package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// purgeResult is what one run of -purge measured: campaign B's delivery,
// with or without the purge of campaign A's messages beside it.
type purgeResult struct {
	withPurge   bool
	old         int           // messages of A
	elapsed     time.Duration // B, from its start to every message final
	cpu         time.Duration // herald's, over B
	purgeLeft   bool          // A still had messages when B was done
	purgeTook   time.Duration // from the purge's start until A had no message left; 0: not seen
	messages    int           // of B
	finalPerSec float64
}

func (r purgeResult) print(w io.Writer, without purgeResult) {
	what := "without a purge"
	if r.withPurge {
		what = fmt.Sprintf("while %d messages of a finished campaign are purged", r.old)
	}
	fmt.Fprintf(w, "herald serve       %s: %d final in %v: %.0f final/s; CPU per message %.1f µs",
		what, r.messages, r.elapsed.Round(time.Millisecond), r.finalPerSec, perMessage(r.cpu, r.messages))
	if r.withPurge {
		fmt.Fprintf(w, "; purge still running at the end: %v", r.purgeLeft)
		if r.purgeTook > 0 {
			fmt.Fprintf(w, "; the purge took %v", r.purgeTook.Round(time.Second))
		}
	}
	if without.finalPerSec > 0 {
		fmt.Fprintf(w, "; %.2f x the rate without a purge", r.finalPerSec/without.finalPerSec)
	}
	fmt.Fprintln(w)
}

// runPurges measures SMS delivery (campaign B, -messages) while retention
// purges -purge messages of a campaign that finished (A), against the
// same without a purge: each run on a new database (a Postgres database
// serves one run: -purge-run picks it).
func runPurges(ctx context.Context, o options, dir string, out io.Writer) error {
	modes, err := runModes("-purge-run", o.purgeRun)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d old messages, then %d measured, herald %s on %s, herald simulate smsc\n", o.purge, o.messages, o.herald, drive.Redact(o.db))
	var without purgeResult
	for i, withPurge := range modes {
		if i > 0 && o.db != "sqlite" {
			fmt.Fprintln(out, "(a Postgres database serves one run: the run with the purge skipped)")
			break
		}
		res, err := runPurge(ctx, o, dir, withPurge)
		if err != nil {
			return fmt.Errorf("purge %v: %w", withPurge, err)
		}
		res.print(out, without)
		if !withPurge {
			without = res
		}
	}
	return nil
}

// runPurge delivers campaign A (-purge messages, bulks of at most
// 200,000) to the end, prepares campaign B (-messages), and, with the
// purge, waits until retention (HERALD_RETENTION=1m) starts removing A's
// messages; then it starts B and times it to the end.
func runPurge(ctx context.Context, o options, dir string, withPurge bool) (purgeResult, error) {
	sm, err := startSMSC(ctx, o, "sim", dir)
	if err != nil {
		return purgeResult{}, err
	}
	defer sm.Stop()
	dbURL := o.db
	if dbURL == "sqlite" {
		dbURL = "sqlite://" + filepath.Join(dir, fmt.Sprintf("herald-purge-%d.db", time.Now().UnixNano()))
	}
	env := []string{"HERALD_SMPP_ADDR=" + sm.addr, fmt.Sprintf("HERALD_SMPP_WINDOW=%d", o.window),
		fmt.Sprintf("HERALD_MAX_PENDING=%d", o.purge+o.messages+1000)}
	if withPurge {
		env = append(env, "HERALD_RETENTION=1m")
	}
	srv, err := drive.StartHerald(ctx, o.herald, dbURL, dir, env, o.timeout)
	if err != nil {
		return purgeResult{}, err
	}
	defer srv.Stop()
	c := &drive.Client{Base: srv.Base, HTTP: &http.Client{Timeout: o.timeout}}
	if err := c.Provision(ctx, srv.AdminToken); err != nil {
		return purgeResult{}, err
	}
	const chunk = 200_000
	var old []string
	for first := 0; first < o.purge; first += chunk {
		id, _, _, err := c.BulkToReady(ctx, drive.BulkBodyFrom(c.TemplateID, first, min(chunk, o.purge-first)), o.timeout)
		if err != nil {
			return purgeResult{}, err
		}
		if err := c.API(ctx, "POST", "/campaigns/"+id+"/start", nil, http.StatusOK, nil); err != nil {
			return purgeResult{}, err
		}
		old = append(old, id)
	}
	for _, id := range old {
		if _, _, err := c.WaitFinal(ctx, id, o.timeout); err != nil {
			return purgeResult{}, err
		}
	}
	b, _, _, err := c.BulkToReady(ctx, drive.BulkBodyFrom(c.TemplateID, o.purge, o.messages), o.timeout)
	if err != nil {
		return purgeResult{}, err
	}
	res := purgeResult{withPurge: withPurge, old: o.purge, messages: o.messages}
	var purgeStart time.Time
	if withPurge {
		// The purge goes oldest message first: it has begun once A's
		// first recipient has no message left.
		deadline := time.Now().Add(o.timeout)
		for {
			n, err := messagesTo(ctx, c, drive.Phone(0))
			if err != nil {
				return purgeResult{}, err
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				return purgeResult{}, fmt.Errorf("the purge did not begin within %v: %w", o.timeout, drive.ErrTimeout)
			}
			time.Sleep(100 * time.Millisecond)
		}
		purgeStart = time.Now()
	}
	pid := srv.Cmd.Process.Pid
	before, err := cpuTimes(pid)
	if err != nil {
		return purgeResult{}, err
	}
	start := time.Now()
	if err := c.API(ctx, "POST", "/campaigns/"+b+"/start", nil, http.StatusOK, nil); err != nil {
		return purgeResult{}, err
	}
	if _, _, err := c.WaitFinal(ctx, b, o.timeout); err != nil {
		return purgeResult{}, err
	}
	res.elapsed = time.Since(start)
	after, err := cpuTimes(pid)
	if err != nil {
		return purgeResult{}, err
	}
	res.cpu, res.finalPerSec = after[0]-before[0], float64(o.messages)/res.elapsed.Seconds()
	if withPurge {
		last := drive.Phone(o.purge - 1)
		n, err := messagesTo(ctx, c, last)
		if err != nil {
			return purgeResult{}, err
		}
		res.purgeLeft = n > 0
		for deadline := time.Now().Add(o.timeout); n > 0 && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			if n, err = messagesTo(ctx, c, last); err != nil {
				return purgeResult{}, err
			}
		}
		if n == 0 {
			res.purgeTook = time.Since(purgeStart)
		}
	}
	return res, nil
}

// messagesTo is how many messages to phone GET /messages finds.
func messagesTo(ctx context.Context, c *drive.Client, phone string) (int, error) {
	var page struct {
		Total int `json:"totalCount"`
	}
	if err := c.API(ctx, "GET", "/messages?phoneNumber="+phone, nil, http.StatusOK, &page); err != nil {
		return 0, err
	}
	return page.Total, nil
}
