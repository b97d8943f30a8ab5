package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// headlineTarget is one target of the headline table: the figure a run
// measured and the bound it is held to.
type headlineTarget struct {
	figure string
	target string
	value  float64 // NaN: not measured
	unit   string  // printed after value: "x", " us", " s"
	most   bool    // the bound is a most (value <= bound), else a least
	bound  float64
	note   string // what else the run measured beside the value
}

// verdict says whether t's value meets its bound.
func (t headlineTarget) verdict() string {
	switch {
	case math.IsNaN(t.value):
		return "not measured"
	case t.most && t.value <= t.bound, !t.most && t.value >= t.bound:
		return "met"
	default:
		return "missed"
	}
}

// writeHeadline prints the targets as a Markdown table, one row each.
func writeHeadline(w io.Writer, targets []headlineTarget) {
	fmt.Fprintln(w, "| figure | target | measured | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, t := range targets {
		v := "-"
		if !math.IsNaN(t.value) {
			v = fmt.Sprintf("%.2f%s", t.value, t.unit)
			if t.note != "" {
				v += " (" + t.note + ")"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.figure, t.target, v, t.verdict())
	}
}

// headlineRuns is what one -headline run measured.
type headlineRuns struct {
	bare, sqlite, hooks, postgres result
	chat, meta                    providerResult
}

// targets turns the runs into the headline targets.
func (h headlineRuns) targets() []headlineTarget {
	nan := math.NaN()
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return nan
		}
		return a / b
	}
	perMsg := func(r result) float64 { return perMessage(r.cpu, r.messages) }
	bareCPU := perMsg(h.bare)
	out := []headlineTarget{
		{figure: "SMS, SQLite: Herald CPU per SMS", target: "<= 1.8 x bare", unit: " x", most: true, bound: 1.8,
			value: ratio(perMsg(h.sqlite), bareCPU), note: fmt.Sprintf("%.1f against %.1f us", perMsg(h.sqlite), bareCPU)},
		{figure: "SMS, SQLite: throughput", target: ">= 0.8 x bare", unit: " x", bound: 0.8,
			value: ratio(h.sqlite.finalRate, h.bare.finalRate), note: fmt.Sprintf("%.0f against %.0f final/s", h.sqlite.finalRate, h.bare.finalRate)},
	}
	pg, pgRate := nan, nan
	pgNote := ""
	if h.postgres.pgSampled {
		pg = perMessage(h.postgres.cpu+h.postgres.pg.backends, h.postgres.messages)
		pgRate = ratio(h.postgres.finalRate, h.bare.finalRate)
		pgNote = fmt.Sprintf("Herald %.1f, backends %.1f", perMsg(h.postgres), perMessage(h.postgres.pg.backends, h.postgres.messages))
	}
	out = append(out,
		headlineTarget{figure: "SMS, Postgres: Herald + backends per SMS", target: "<= 110 us", unit: " us", most: true, bound: 110,
			value: pg, note: pgNote},
		headlineTarget{figure: "SMS, Postgres: throughput", target: ">= 0.6 x bare", unit: " x", bound: 0.6, value: pgRate})
	hookCPU, hookRate, lag := nan, nan, nan
	if h.hooks.events > 0 {
		hookCPU = float64((h.hooks.hookCPU - h.sqlite.cpu).Microseconds()) / float64(h.hooks.events)
		hookRate = ratio(h.hooks.finalRate, h.sqlite.finalRate)
		lag = h.hooks.lastEventLag.Seconds()
	}
	out = append(out,
		headlineTarget{figure: "Webhooks, batched: CPU per event", target: "<= 15 us", unit: " us", most: true, bound: 15, value: hookCPU},
		headlineTarget{figure: "Webhooks, batched: rate with / without", target: ">= 0.9 x", unit: " x", bound: 0.9, value: hookRate},
		headlineTarget{figure: "Webhooks, batched: last event after last status", target: "<= 2 s", unit: " s", most: true, bound: 2,
			value: lag},
		headlineTarget{figure: "Chat callbacks, batched: CPU per event", target: "<= 25 us", unit: " us", most: true, bound: 25,
			value: h.chat.perEvent()},
		headlineTarget{figure: "Chat callbacks, Meta: CPU per event", target: "<= 25 us", unit: " us", most: true, bound: 25,
			value: h.meta.perEvent()})
	return out
}

// runHeadline measures every headline target in one run, on this
// machine, one run after the other: the bare client and Herald on SQLite
// against the npm SMSC; Herald on a new Postgres database when -pg names
// one; Herald on SQLite with a batched webhook endpoint; then chat
// callbacks, batched, of Herald's protocol and of Meta's, each after its
// sends alone. It prints each run as the other modes do, then the table.
func runHeadline(ctx context.Context, o options, dir string, out io.Writer) error {
	o.smsc, o.bare = "npm", true
	if o.hookBatch <= 0 {
		o.hookBatch = 100
	}
	fmt.Fprintf(out, "headline: %d SMS a run, %d chat messages a run, herald %s, %s\n", o.messages, o.chatMessages, o.herald,
		time.Now().UTC().Format(time.DateOnly))
	var h headlineRuns
	var err error
	if h.bare, err = runBare(ctx, o, "npm", dir); err != nil {
		return fmt.Errorf("bare client: %w", err)
	}
	h.bare.print(out, "bare gosmpp client", "npm", result{})
	if h.sqlite, err = runHerald(ctx, o, o.herald, "npm", dir, "sqlite", false); err != nil {
		return fmt.Errorf("herald on SQLite: %w", err)
	}
	h.sqlite.print(out, "herald serve", "npm", h.bare)
	if o.pg != "" {
		db, drop, err := freshDatabase(ctx, o.pg, fmt.Sprintf("headline%d", os.Getpid()))
		if err != nil {
			return err
		}
		h.postgres, err = runHerald(ctx, o, o.herald, "npm", dir, db, false)
		drop()
		if err != nil {
			return fmt.Errorf("herald on Postgres: %w", err)
		}
		h.postgres.print(out, "herald (postgres)", "npm", h.bare)
	}
	if h.hooks, err = runHerald(ctx, o, o.herald, "npm", dir, "sqlite", true); err != nil {
		return fmt.Errorf("herald with webhooks: %w", err)
	}
	h.hooks.print(out, "herald+webhooks", "npm", h.bare)
	h.hooks.printHooks(out, h.sqlite)

	co := o
	co.db, co.messages = "sqlite", o.chatMessages
	for _, p := range []struct {
		provider string
		batch    int
		dst      *providerResult
	}{{"herald", 100, &h.chat}, {"meta-whatsapp", 0, &h.meta}} {
		co.chatBatch = p.batch
		for _, s := range providerSetups() {
			if s.provider != p.provider {
				continue
			}
			sends, err := runProvider(ctx, co, dir, s, false)
			if err != nil {
				return fmt.Errorf("%s, sends alone: %w", s.provider, err)
			}
			res, err := runProvider(ctx, co, dir, s, true)
			if err != nil {
				return fmt.Errorf("%s: %w", s.provider, err)
			}
			res.sendsCPU, res.sendsTime = sends.cpu, sends.toSeen
			res.print(out)
			*p.dst = res
			break
		}
	}
	fmt.Fprintln(out)
	writeHeadline(out, h.targets())
	if o.pg == "" {
		fmt.Fprintln(out, strings.TrimSpace("(Postgres not measured: give -pg a database URL)"))
	}
	return nil
}
