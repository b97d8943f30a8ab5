package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/messaging"
)

// TestDashboardMetrics reads every PromQL expression of
// deploy/grafana-dashboard.json (panel targets and variable queries) and
// checks that each metric it names is one herald serve exports: a metric
// renamed in metrics.go without the dashboard fails here.
func TestDashboardMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	exprs := dashboardExprs(dash, "")
	if len(exprs) == 0 {
		t.Fatal("no PromQL expression found in the dashboard")
	}
	exported := exportedMetrics(t)
	used := map[string]bool{}
	for _, e := range exprs {
		names := promqlMetricNames(e)
		if len(names) == 0 {
			t.Errorf("expression %q names no metric", e)
		}
		for _, n := range names {
			used[n] = true
			if !exported[n] {
				t.Errorf("expression %q: metric %s is not exported by herald serve", e, n)
			}
		}
	}
	t.Logf("%d expressions, %d metrics", len(exprs), len(used))
}

// dashboardExprs collects the PromQL of a Grafana dashboard: the expr of
// every target, and the query of every variable of type query.
func dashboardExprs(v any, key string) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if s, ok := c.(string); ok && (k == "expr" || (k == "query" && key == "query")) {
				out = append(out, s)
				continue
			}
			if k == "query" && v["type"] == "query" {
				if s, ok := c.(string); ok {
					out = append(out, s)
				} else {
					out = append(out, dashboardExprs(c, "query")...)
				}
				continue
			}
			out = append(out, dashboardExprs(c, k)...)
		}
	case []any:
		for _, c := range v {
			out = append(out, dashboardExprs(c, key)...)
		}
	}
	return out
}

// promqlMetricNames returns the metric names an expression selects: its
// identifiers, once string literals, the label of label_values,, label matchers, ranges and the label
// lists of by, without, on, ignoring, group_left and group_right are taken
// out, less function names (followed by a parenthesis) and keywords.
func promqlMetricNames(expr string) []string {
	// label_values(metric, label): the label is not a metric.
	s := regexp.MustCompile(`label_values\s*\(([^,)]*),[^)]*\)`).ReplaceAllString(expr, "$1")
	s = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`).ReplaceAllString(s, `""`)
	s = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(s, " ")
	s = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(s, " ")
	s = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`).ReplaceAllString(s, " ")
	s = regexp.MustCompile(`\$\{?\w+\}?`).ReplaceAllString(s, " ")
	keywords := []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
		"unless", "offset", "inf", "nan"}
	var names []string
	ident := regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	for _, loc := range ident.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || slices.Contains(keywords, strings.ToLower(name)) {
			continue
		}
		if loc[0] > 0 && strings.ContainsRune("0123456789.", rune(s[loc[0]-1])) {
			continue // a number's exponent or suffix, as in 1e3
		}
		names = append(names, name)
	}
	return names
}

// exportedMetrics returns the names of the series herald serve's /metrics
// may serve: those of every collector newMetrics registers, of the backlog
// and SMPP collectors serve adds, and, for histograms and summaries, their
// _bucket, _sum and _count series.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	m := newMetrics()
	backlog := newBacklogCollector(func(context.Context) (map[messaging.Channel]int, error) {
		return map[messaging.Channel]int{}, nil
	})
	m.reg.MustRegister(backlog)
	// Describe of the SMPP collector reads no router.
	collectors := []prometheus.Collector{m.messages, m.sendTime, m.delivered, m.inFlight, m.capacity, m.receipts, m.queueDepth,
		m.batchTime, m.batchSize, m.batchErrs, m.chatEvents, m.webhookEvents, m.webhookTime, m.webhookLag,
		m.httpRequests, m.httpTime, m.httpInFlight, backlog, newSMPPCollector(nil)}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 64)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			sub := fqName.FindStringSubmatch(d.String())
			if sub == nil {
				t.Fatalf("no name in %s", d)
			}
			names[sub[1]] = true
		}
	}
	// Each histogram is served as its _bucket, _sum and _count series.
	for _, h := range []prometheus.Collector{m.sendTime, m.delivered, m.batchTime, m.batchSize, m.httpTime, m.webhookTime, m.webhookLag} {
		ch := make(chan *prometheus.Desc, 1)
		h.Describe(ch)
		close(ch)
		for d := range ch {
			n := fqName.FindStringSubmatch(d.String())[1]
			names[n+"_bucket"], names[n+"_sum"], names[n+"_count"] = true, true, true
		}
	}
	// The runtime and process collectors, as gathered.
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" || f.GetType().String() == "SUMMARY" {
			names[f.GetName()+"_sum"], names[f.GetName()+"_count"] = true, true
			names[f.GetName()+"_bucket"] = f.GetType().String() == "HISTOGRAM"
		}
	}
	if !names["herald_messages_total"] || !names["go_goroutines"] {
		t.Fatalf("the metric names read are incomplete: %v", names)
	}
	return names
}

// TestPromQLMetricNames checks the extraction of metric names on
// expressions of each shape the dashboard uses.
func TestPromQLMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`sum by (status) (rate(herald_messages_total{instance=~"$instance"}[$__rate_interval]))`, []string{"herald_messages_total"}},
		{`histogram_quantile(0.95, sum by (le, op) (rate(a_bucket{x="by(y)"}[5m])))`, []string{"a_bucket"}},
		{`sum(rate(x_total{code=~"5.."}[1m])) / on (instance) group_left (job) y`, []string{"x_total", "y"}},
		{`label_values(herald_http_requests_in_flight, instance)`, []string{"herald_http_requests_in_flight"}},
		{`a > bool 1e3 or b offset 5m`, []string{"a", "b"}},
	} {
		if got := promqlMetricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("promqlMetricNames(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}
