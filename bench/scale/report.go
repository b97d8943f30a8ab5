package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// report is what the run measured.
type report struct {
	o                   options
	store               string
	reads               []readKind
	base                bulkRun   // the bulk on the empty database
	empty               []latency // by reads
	surveyEarly         latency
	stages              []stage         // the full database, after each stage of the fill
	fillReady           []time.Duration // each history bulk, to Ready
	fillWritten         []written       // each history's fast path
	fill                time.Duration   // the whole fill, the survey summaries read during it included
	diskEmpty, diskFull diskUse
	vacuums             []string // Postgres: how long each VACUUM (ANALYZE) took
	check               string
	checkTook           time.Duration
}

// stage is what was measured on the database filled with a number of
// history campaigns.
type stage struct {
	campaigns  int
	last       bulkRun   // the bulk to the first bulk's recipients
	fresh      bulkRun   // the newcomer's bulk, to Ready
	full       []latency // by reads
	surveyFull latency
	disk       diskUse // Herald running, but at the last stage: stopped
}

// Targets of the requirement.
const (
	readyRatioMax   = 1.20 // time to Ready, full over empty
	deliveryRateMin = 0.80 // final/s, full over empty
	messagesP99     = 10 * time.Millisecond
	campaignsP99    = 5 * time.Millisecond
	summaryP99      = 200 * time.Millisecond
)

// print writes the report.
func (r *report) print(w io.Writer) {
	n := r.o.recipients
	fmt.Fprintf(w, "\nHerald at scale: %s\n", r.store)
	fmt.Fprintf(w, "empty database: %d messages (one bulk, delivered); full database: %d messages (that bulk, %d history campaigns, "+
		"and at each stage a second bulk and a new company's)\n", r.diskEmpty.messages, r.diskFull.messages, len(r.fillWritten))
	fmt.Fprintf(w, "history: the fill took %v; each campaign posted through the API to Ready, then delivered by the DIAGNOSTIC FAST PATH "+
		"(SQL run on the database, not through Herald)\n", r.fill.Round(time.Second))
	if len(r.fillReady) > 0 {
		ready := slices.Clone(r.fillReady)
		slices.Sort(ready)
		var took []time.Duration
		for _, x := range r.fillWritten {
			took = append(took, x.took)
		}
		slices.Sort(took)
		fmt.Fprintf(w, "  its bulks to Ready (Herald, through the API): first %v, median %v, last %v; fast path per campaign: median %v\n",
			ms(r.fillReady[0]), ms(ready[len(ready)/2]), ms(r.fillReady[len(r.fillReady)-1]), ms(took[len(took)/2]))
	}
	fmt.Fprintln(w)

	for _, st := range r.stages {
		r.table(w, st)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "rows at the end: %d messages, %d SMS parts, %d survey answers", r.diskFull.messages, r.diskFull.parts, r.diskFull.answers)
	if r.diskFull.file >= 0 {
		fmt.Fprintf(w, "; after a checkpoint the database file is %.1f MiB and its -wal %.1f MiB (%.1f MiB of free pages)",
			drive.MiB(r.diskFull.file), drive.MiB(r.diskFull.wal), drive.MiB(r.diskFull.free))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "reads: p50 / p99 / max in ms, sequential on one connection, from the request to the last byte of the answer; %d of each kind "+
		"after %d untimed, random recipients of random campaigns (seed %d); herald restarted before each set (a new process, the OS page cache warm)\n",
		r.o.queries, r.o.warmup, r.o.seed)
	fmt.Fprintf(w, "(a) %d summaries of the %d-message survey campaign (of fewer than 100 requests the p99 is the slowest); "+
		"its empty-database figure was read right after its history, with only the first bulk beside it\n", r.o.summaries, n)
	fmt.Fprintln(w, "bytes on disk: the empty database's and those of earlier stages with Herald running (pages of the write-ahead log included); "+
		"the last stage's after Herald stopped")
	if len(r.vacuums) > 0 {
		fmt.Fprintf(w, "Postgres: VACUUM (ANALYZE) before each set of reads: %s; the sizes include the space of dead row versions, reusable but not "+
			"returned (each update of a message writes a new version of its row and of its index entries: Herald's delivery updates "+
			"a message three times, the fast path once)\n", strings.Join(r.vacuums, ", "))
	}
	if r.check != "" {
		fmt.Fprintf(w, "herald check (%v): %s\n", r.checkTook.Round(time.Millisecond), r.check)
	}
}

// table writes the table of one stage beside the empty database.
func (r *report) table(w io.Writer, st stage) {
	n := r.o.recipients
	fmt.Fprintf(w, "after %d history campaigns: %d messages\n", st.campaigns, st.disk.messages)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tempty database\tfull database\tratio\ttarget\tverdict")
	ratio := st.last.ready.Seconds() / r.base.ready.Seconds()
	fmt.Fprintf(tw, "bulk of %d to Ready (202 after)\t%s (%s)\t%s (%s)\t%.2f x\tat most %.2f x\t%s\n", n,
		ms(r.base.ready), ms(r.base.accepted), ms(st.last.ready), ms(st.last.accepted), ratio, readyRatioMax, verdict(ratio <= readyRatioMax))
	fmt.Fprintf(tw, "  herald CPU per message, to Ready\t%.1f µs\t%.1f µs\t%.2f x\t\t\n",
		perMessage(r.base.prepareCPU, n), perMessage(st.last.prepareCPU, n), perMessage(st.last.prepareCPU, n)/perMessage(r.base.prepareCPU, n))
	if st.fresh.ready > 0 {
		fr := st.fresh.ready.Seconds() / r.base.ready.Seconds()
		fmt.Fprintf(tw, "  the same, a new company's audience\t\t%s (%s)\t%.2f x\tat most %.2f x\t%s\n",
			ms(st.fresh.ready), ms(st.fresh.accepted), fr, readyRatioMax, verdict(fr <= readyRatioMax))
		fmt.Fprintf(tw, "  herald CPU per message, to Ready\t\t%.1f µs\t%.2f x\t\t\n",
			perMessage(st.fresh.prepareCPU, n), perMessage(st.fresh.prepareCPU, n)/perMessage(r.base.prepareCPU, n))
	}
	rate := st.last.finalRate() / r.base.finalRate()
	fmt.Fprintf(tw, "delivery, every message final\t%.0f final/s\t%.0f final/s\t%.2f x\tat least %.2f x\t%s\n",
		r.base.finalRate(), st.last.finalRate(), rate, deliveryRateMin, verdict(rate >= deliveryRateMin))
	fmt.Fprintf(tw, "  delivered / failed\t%d / %d\t%d / %d\t\t\t\n", r.base.delivered, r.base.failed, st.last.delivered, st.last.failed)
	fmt.Fprintf(tw, "  herald CPU per message, delivery\t%.1f µs\t%.1f µs\t%.2f x\t\t\n",
		perMessage(r.base.deliveryCPU, n), perMessage(st.last.deliveryCPU, n), perMessage(st.last.deliveryCPU, n)/perMessage(r.base.deliveryCPU, n))
	fmt.Fprintf(tw, "  herald peak RSS (its process)\t%.0f MiB\t%.0f MiB\t\t\t\n", drive.MiB(r.base.peakRSS), drive.MiB(st.last.peakRSS))
	for i, k := range r.reads {
		limit := campaignsP99
		if strings.Contains(k.name, "/messages") {
			limit = messagesP99
		}
		r.readLine(tw, k.name, r.empty[i], st.full[i], limit, "")
	}
	r.readLine(tw, "GET /survey-results/{id}/summary", r.surveyEarly, st.surveyFull, summaryP99, " (a)")
	fmt.Fprintf(tw, "bytes on disk per message: database\t%.0f (%.1f MiB)\t%.0f (%.1f MiB)\t%.2f x\t\t\n",
		r.diskEmpty.perMessage(r.diskEmpty.database), drive.MiB(r.diskEmpty.database),
		st.disk.perMessage(st.disk.database), drive.MiB(st.disk.database),
		st.disk.perMessage(st.disk.database)/r.diskEmpty.perMessage(r.diskEmpty.database))
	both := func(u diskUse) float64 { return u.perMessage(u.tables["messages"] + u.tables["sms_parts"]) }
	fmt.Fprintf(tw, "  messages + sms_parts, with their indexes\t%.0f\t%.0f\t%s\t\t\n", both(r.diskEmpty), both(st.disk), ratioText(both(st.disk), both(r.diskEmpty)))
	for _, t := range []string{"messages", "sms_parts"} {
		e, f := r.diskEmpty.perMessage(r.diskEmpty.tables[t]), st.disk.perMessage(st.disk.tables[t])
		fmt.Fprintf(tw, "    %s\t%.0f\t%.0f\t%s\t\t\n", t, e, f, ratioText(f, e))
	}
	perAnswer := func(u diskUse) string {
		if u.answers == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(u.tables["survey_results"])/float64(u.answers))
	}
	fmt.Fprintf(tw, "  survey_results with its indexes, per answer\t%s\t%s\t\t\t\n", perAnswer(r.diskEmpty), perAnswer(st.disk))
	tw.Flush()

	fmt.Fprintln(w)
}

// readLine writes the line of one kind of read.
func (r *report) readLine(w io.Writer, name string, empty, full latency, limit time.Duration, note string) {
	fmt.Fprintf(w, "%s%s\t%s\t%s\t%.2f x p99\tp99 under %v\t%s\n", name, note, lat(empty), lat(full),
		full.p99.Seconds()/empty.p99.Seconds(), limit, verdict(full.p99 < limit))
}

// lat is a latency as p50 / p99 / max in milliseconds.
func lat(l latency) string {
	return fmt.Sprintf("%.2f / %.2f / %.2f", l.p50.Seconds()*1000, l.p99.Seconds()*1000, l.max.Seconds()*1000)
}

// ms is d in milliseconds, or in seconds from 10 s on.
func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f ms", d.Seconds()*1000)
}

// perMessage is d per message, in microseconds.
func perMessage(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

// ratioText is a/b, or a dash when b is 0.
func ratioText(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f x", a/b)
}

// verdict tells whether a target was met.
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}
