package server

import (
	"cmp"
	"context"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// statusCountsJSON counts messages by status, every status present.
type statusCountsJSON struct {
	Pending   int `json:"Pending"`
	Sending   int `json:"Sending"`
	Sent      int `json:"Sent"`
	Delivered int `json:"Delivered"`
	Seen      int `json:"Seen"`
	Failed    int `json:"Failed"`
}

func (c *statusCountsJSON) add(st messaging.MessageStatus, n int) {
	switch st {
	case messaging.StatusPending:
		c.Pending += n
	case messaging.StatusSending:
		c.Sending += n
	case messaging.StatusSent:
		c.Sent += n
	case messaging.StatusDelivered:
		c.Delivered += n
	case messaging.StatusSeen:
		c.Seen += n
	case messaging.StatusFailed:
		c.Failed += n
	}
}

// deliveryRate is the share of the messages with a final status that
// reached the person (Delivered or Seen), as a percentage rounded to two
// decimals; null when no message has a final status.
func (c statusCountsJSON) deliveryRate() *float64 {
	final := c.Delivered + c.Seen + c.Failed
	if final == 0 {
		return nil
	}
	r := math.Round(float64(c.Delivered+c.Seen)*10000/float64(final)) / 100
	return &r
}

// channelSummaryJSON counts one channel's messages.
type channelSummaryJSON struct {
	Total        int              `json:"total"`
	ByStatus     statusCountsJSON `json:"byStatus"`
	DeliveryRate *float64         `json:"deliveryRate"`
}

// failureJSON counts the failed messages of one channel with one reason.
type failureJSON struct {
	Reason  *string           `json:"reason"`
	Channel messaging.Channel `json:"channel"`
	Count   int               `json:"count"`
}

// summaryJSON is the summary of GET /summary: the messages created since
// a time.
type summaryJSON struct {
	Total     int              `json:"total"`
	ByStatus  statusCountsJSON `json:"byStatus"`
	ByChannel struct {
		SMS  channelSummaryJSON `json:"Smpp"`
		Chat channelSummaryJSON `json:"Chat"`
	} `json:"byChannel"`
	DeliveryRate     *float64      `json:"deliveryRate"`
	FailuresByReason []failureJSON `json:"failuresByReason"`
}

// summaryOut sums tallies, of one company or of several.
func summaryOut(tallies []messaging.MessageTally) summaryJSON {
	out := summaryJSON{FailuresByReason: []failureJSON{}}
	type key struct {
		reason  string
		channel messaging.Channel
	}
	failures := map[key]int{}
	for _, t := range tallies {
		ch := &out.ByChannel.SMS
		if t.Channel == messaging.ChannelChat {
			ch = &out.ByChannel.Chat
		}
		out.Total += t.Count
		out.ByStatus.add(t.Status, t.Count)
		ch.Total += t.Count
		ch.ByStatus.add(t.Status, t.Count)
		if t.Status == messaging.StatusFailed {
			failures[key{t.Reason, t.Channel}] += t.Count
		}
	}
	out.DeliveryRate = out.ByStatus.deliveryRate()
	out.ByChannel.SMS.DeliveryRate = out.ByChannel.SMS.ByStatus.deliveryRate()
	out.ByChannel.Chat.DeliveryRate = out.ByChannel.Chat.ByStatus.deliveryRate()
	for k, n := range failures {
		out.FailuresByReason = append(out.FailuresByReason, failureJSON{Reason: strOrNull(k.reason), Channel: k.channel, Count: n})
	}
	// Most first, then by reason (none last) and channel.
	slices.SortFunc(out.FailuresByReason, func(a, b failureJSON) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		if (a.Reason == nil) != (b.Reason == nil) {
			if a.Reason == nil {
				return 1
			}
			return -1
		}
		if a.Reason != nil {
			if c := cmp.Compare(*a.Reason, *b.Reason); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Channel, b.Channel)
	})
	return out
}

// summarySince reads the since parameter of GET /summary: an RFC 3339
// time, zero when absent.
func summarySince(r *http.Request) (time.Time, error) {
	q := newQuery(r)
	s := q.get("since")
	var since time.Time
	if s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			q.fe.Add("since", "since must be an RFC 3339 time (2024-05-01T00:00:00Z)")
		}
		since = t
	}
	return since, q.err()
}

// summarize reads the tallies of GET /summary for companyID (zero: every
// company).
func (s *server) summarize(ctx context.Context, r *http.Request, companyID messaging.ID) ([]messaging.MessageTally, time.Time, error) {
	since, err := summarySince(r)
	if err != nil {
		return nil, time.Time{}, err
	}
	return s.campaigns.SummarizeMessages(ctx, companyID, since)
}

// getSummary answers GET /summary: the company's messages created since
// the start of the UTC day, or since the since parameter.
func (s *server) getSummary(w http.ResponseWriter, r *http.Request) error {
	tallies, since, err := s.summarize(r.Context(), r, companyOf(r))
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, struct {
		Since timestamp `json:"since"`
		summaryJSON
	}{ts(since), summaryOut(tallies)})
	return nil
}

// companySummaryJSON is one company's row of GET /admin/v1/summary.
type companySummaryJSON struct {
	CompanyID messaging.ID `json:"companyId"`
	Name      *string      `json:"name"`
	summaryJSON
}

// adminSummary answers GET /admin/v1/summary: every company's messages
// created since the start of the UTC day, or since the since parameter,
// together and company by company (those with messages only, most first).
func (s *server) adminSummary(w http.ResponseWriter, r *http.Request) error {
	all, since, err := s.summarize(r.Context(), r, messaging.NilID)
	if err != nil {
		return err
	}
	slices.SortFunc(all, messaging.CompareTallies)
	rows := []companySummaryJSON{}
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].CompanyID == all[i].CompanyID {
			j++
		}
		row := companySummaryJSON{CompanyID: all[i].CompanyID, summaryJSON: summaryOut(all[i:j])}
		if c, err := s.accounts.GetCompany(r.Context(), all[i].CompanyID); err == nil {
			row.Name = &c.Name
		} else if !messaging.IsCode(err, messaging.NotFound) {
			return err
		}
		rows = append(rows, row)
		i = j
	}
	slices.SortStableFunc(rows, func(a, b companySummaryJSON) int { return cmp.Compare(b.Total, a.Total) })
	s.writeJSON(w, http.StatusOK, struct {
		Since timestamp `json:"since"`
		summaryJSON
		Companies []companySummaryJSON `json:"companies"`
	}{ts(since), summaryOut(all), rows})
	return nil
}
