package chaos_test

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// figure is what one scenario measured, for RELIABILITY.md.
type figure struct {
	Scenario   string            `json:"scenario"`
	Store      string            `json:"store"`
	Messages   int               `json:"messages"`
	Faults     int               `json:"faults"`
	Duplicates int               `json:"duplicates"`
	ByFault    []int             `json:"duplicatesByFault"`
	Times      map[string]string `json:"times"` // what was timed -> duration
	Rows       string            `json:"rows"`
	Answers    string            `json:"answers"`
	Notes      []string          `json:"notes,omitempty"`
}

var figures struct {
	mu  sync.Mutex
	all []figure
}

// record keeps the figure of a scenario and logs it.
func record(t *testing.T, f figure) {
	t.Helper()
	b, _ := json.Marshal(f)
	t.Logf("figure: %s", b)
	figures.mu.Lock()
	defer figures.mu.Unlock()
	figures.all = append(figures.all, f)
}

// newFigure starts the figure of scenario on store from an outcome.
func newFigure(scenario, store string, messages int, o outcome) figure {
	f := figure{Scenario: scenario, Store: store, Messages: messages, Faults: len(o.byFault),
		Duplicates: o.duplicates, ByFault: o.byFault, Times: map[string]string{},
		Rows: fmt.Sprintf("Delivered %d, Seen %d, Sent %d, Failed %d", o.rows.delivered, o.rows.seen, o.rows.sent, o.rows.failed)}
	if o.checked {
		f.Notes = append(f.Notes, "herald check: no drift")
	}
	return f
}

// dur formats a measured duration for the figures.
func dur(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

// writeFigures prints the figures of the run, and writes them as JSON to
// the file HERALD_CHAOS_REPORT names when it is set.
func writeFigures() {
	figures.mu.Lock()
	defer figures.mu.Unlock()
	if len(figures.all) == 0 {
		return
	}
	sort.SliceStable(figures.all, func(i, j int) bool { return figures.all[i].Scenario < figures.all[j].Scenario })
	var b strings.Builder
	fmt.Fprintf(&b, "chaos figures (HERALD_CHAOS_SEED=%d):\n", seed)
	for _, f := range figures.all {
		times := make([]string, 0, len(f.Times))
		for k, v := range f.Times {
			times = append(times, k+" "+v)
		}
		sort.Strings(times)
		fmt.Fprintf(&b, "  %-34s %-8s msgs %-6d faults %d dups %d %v; %s; %s; answers %s %s\n",
			f.Scenario, f.Store, f.Messages, f.Faults, f.Duplicates, f.ByFault, strings.Join(times, ", "), f.Rows, f.Answers,
			strings.Join(f.Notes, "; "))
	}
	fmt.Print(b.String())
	if path := os.Getenv("HERALD_CHAOS_REPORT"); path != "" {
		data, _ := json.MarshalIndent(figures.all, "", "  ")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "chaos: write the report:", err)
		}
	}
}

// TestMain runs the suite, then prints its figures and removes what it
// started: the Postgres cluster and the binary it built.
func TestMain(m *testing.M) {
	code := m.Run()
	writeFigures()
	stopCluster()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
