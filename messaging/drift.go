package messaging

import (
	"bytes"
	"slices"
	"strings"
)

// Drift is a stored counter that differs from the count of the rows it
// stands for: a campaign's count of messages in one status, or a
// company's pending count. A store in good order has none; see
// CounterDrift.
type Drift struct {
	CompanyID ID
	// CampaignID is the campaign whose counter drifted; zero for a
	// company's pending count.
	CampaignID ID
	// Counter names the counter: a status in lower case ("pending",
	// "sent", ...) or "unconfirmed" for a campaign's own messages, the same prefixed with
	// "fallback." for its fallback SMS, or "companyPending".
	Counter string
	// Stored is the counter's value; Counted what the rows give.
	Stored, Counted int
}

// Counted is what a campaign's message rows give: the number of its own
// messages and of its fallback SMS in each status.
type Counted struct {
	Counts, FallbackCounts StatusCounts
}

// CounterDrift compares the stored counters with the rows: campaigns as
// stored (their Counts, FallbackCounts and Planned), counted[id] the
// counts of each campaign's rows (a campaign with no rows may be left
// out), and pending[companyID] each company's stored pending count. A
// company's pending count should be, over its campaigns, the messages
// Pending or Sending (fallback SMS included), plus for a Queuing campaign
// the part of Planned not written yet. The result is sorted by company,
// campaign and counter.
func CounterDrift(campaigns []Campaign, counted map[ID]Counted, pending map[ID]int) []Drift {
	var out []Drift
	want := make(map[ID]int, len(pending))
	for _, c := range campaigns {
		n := counted[c.ID]
		for _, st := range MessageStatuses() {
			name := strings.ToLower(string(st))
			if s, k := c.Counts.Of(st), n.Counts.Of(st); s != k {
				out = append(out, Drift{CompanyID: c.CompanyID, CampaignID: c.ID, Counter: name, Stored: s, Counted: k})
			}
			if s, k := c.FallbackCounts.Of(st), n.FallbackCounts.Of(st); s != k {
				out = append(out, Drift{CompanyID: c.CompanyID, CampaignID: c.ID, Counter: "fallback." + name, Stored: s, Counted: k})
			}
		}
		if s, k := c.Counts.Unconfirmed, n.Counts.Unconfirmed; s != k {
			out = append(out, Drift{CompanyID: c.CompanyID, CampaignID: c.ID, Counter: "unconfirmed", Stored: s, Counted: k})
		}
		if s, k := c.FallbackCounts.Unconfirmed, n.FallbackCounts.Unconfirmed; s != k {
			out = append(out, Drift{CompanyID: c.CompanyID, CampaignID: c.ID, Counter: "fallback.unconfirmed", Stored: s, Counted: k})
		}
		w := n.Counts.Unsent() + n.FallbackCounts.Unsent()
		if c.Status == CampaignQueuing {
			w += max(0, c.Planned-n.Counts.Total())
		}
		want[c.CompanyID] += w
	}
	for co, stored := range pending {
		if stored != want[co] {
			out = append(out, Drift{CompanyID: co, Counter: "companyPending", Stored: stored, Counted: want[co]})
		}
	}
	slices.SortFunc(out, func(a, b Drift) int {
		if c := bytes.Compare(a.CompanyID[:], b.CompanyID[:]); c != 0 {
			return c
		}
		if c := bytes.Compare(a.CampaignID[:], b.CampaignID[:]); c != 0 {
			return c
		}
		return strings.Compare(a.Counter, b.Counter)
	})
	return out
}
