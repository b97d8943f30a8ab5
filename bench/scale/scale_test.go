package main

import (
	"testing"
	"time"
)

// TestLayoutFullSize checks the recipients of the default run: fifty
// campaigns over five companies of a million numbers each, neighbours
// sharing half, each company's windows spread evenly over its audience.
func TestLayoutFullSize(t *testing.T) {
	l, err := newLayout(options{campaigns: 50, recipients: 200_000, companies: 5})
	if err != nil {
		t.Fatal(err)
	}
	if l.audience != 1_000_000 || l.shift != 500_000 || len(l.campaigns) != 50 {
		t.Fatalf("audience %d, shift %d, %d campaigns", l.audience, l.shift, len(l.campaigns))
	}
	perCompany := map[int][]int{}
	for i, c := range l.campaigns {
		if c.survey != (i == 0) {
			t.Errorf("campaign %d: survey %v", i, c.survey)
		}
		lo, hi := c.company*l.shift, c.company*l.shift+l.audience
		if c.first < lo || c.first+l.recipients > hi {
			t.Errorf("campaign %d of company %d: recipients [%d, %d) outside the audience [%d, %d)", i, c.company, c.first, c.first+l.recipients, lo, hi)
		}
		perCompany[c.company] = append(perCompany[c.company], c.first)
	}
	for k, firsts := range perCompany {
		if len(firsts) != 10 || firsts[0] != k*l.shift || firsts[9] != k*l.shift+l.audience-l.recipients {
			t.Errorf("company %d: windows from %v", k, firsts)
		}
	}
}

// TestLayoutSmall checks a small run, where the companies' campaigns are
// uneven, and the sizes refused.
func TestLayoutSmall(t *testing.T) {
	l, err := newLayout(options{campaigns: 3, recipients: 20_000, companies: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []planned{{0, 0, true}, {1, 10_000, false}, {0, 0, false}}
	for i, c := range l.campaigns {
		if c != want[i] {
			t.Errorf("campaign %d: %+v, want %+v", i, c, want[i])
		}
	}
	for _, o := range []options{
		{campaigns: 1, recipients: 200_001, companies: 1},
		{campaigns: 2, recipients: 1000, companies: 3},
		{campaigns: 4, recipients: 1000, companies: 2, audience: 999},
		{campaigns: 400, recipients: 200_000, companies: 400, audience: 1_000_000},
	} {
		if _, err := newLayout(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestLatencyOf checks the nearest-rank percentiles.
func TestLatencyOf(t *testing.T) {
	ds := make([]time.Duration, 200)
	for i := range ds {
		ds[i] = time.Duration(200-i) * time.Millisecond
	}
	l := latencyOf(ds)
	if l.n != 200 || l.p50 != 100*time.Millisecond || l.p99 != 198*time.Millisecond || l.max != 200*time.Millisecond {
		t.Fatalf("%+v", l)
	}
}

// TestPlaceholders checks the numbering of placeholders for Postgres.
func TestPlaceholders(t *testing.T) {
	pg := &database{pg: true}
	if got := pg.q("UPDATE t SET a = ? WHERE b = ?"); got != "UPDATE t SET a = $1 WHERE b = $2" {
		t.Fatal(got)
	}
	if got := (&database{}).q("a = ?"); got != "a = ?" {
		t.Fatal(got)
	}
}

// TestStagesOf checks -measure-at: the stages end with -campaigns, and
// lists out of order or out of range are refused.
func TestStagesOf(t *testing.T) {
	got, err := stagesOf(" 50, 100", 150)
	if err != nil || len(got) != 3 || got[0] != 50 || got[1] != 100 || got[2] != 150 {
		t.Fatalf("%v, %v", got, err)
	}
	if got, err := stagesOf("", 4); err != nil || len(got) != 1 || got[0] != 4 {
		t.Fatalf("%v, %v", got, err)
	}
	for _, bad := range []string{"0", "150", "60,50", "50,50", "x"} {
		if _, err := stagesOf(bad, 150); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
