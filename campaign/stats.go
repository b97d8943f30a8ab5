package campaign

import (
	"math"

	"github.com/heraldhq/herald/messaging"
)

// Stats are the counters a campaign reports.
type Stats struct {
	TotalMessages int // messages of the campaign (planned ones while Queuing)
	// Prepared counts the messages written so far: TotalMessages once the
	// campaign left Queuing, the preparation's progress before.
	Prepared  int
	Pending   int // not yet final: Pending, Sending, or Sent and waiting for its report
	Delivered int // Delivered or Seen
	Seen      int
	Failed    int
	// Unconfirmed counts the Sent messages whose delivery report did not
	// come within the receipt timeout: not pending, not delivered.
	Unconfirmed int

	FallbackCount     int // SMS sent in place of chat messages
	FallbackDelivered int
	FallbackFailed    int
	// OverallDeliveryRate is (chat messages Delivered or Seen + fallback
	// SMS Delivered) / total chat messages, as a percentage with two
	// decimals; 0 when there are no chat messages (so always 0 for an SMS
	// campaign).
	OverallDeliveryRate float64
}

// StatsOf derives the reported counters of c from its status counts.
func StatsOf(c messaging.Campaign) Stats {
	n := c.Counts
	s := Stats{
		TotalMessages:     n.Total(),
		Prepared:          n.Total(),
		Pending:           n.Pending + n.Sending + n.Awaiting(),
		Delivered:         n.Delivered + n.Seen,
		Seen:              n.Seen,
		Failed:            n.Failed,
		Unconfirmed:       n.Unconfirmed,
		FallbackCount:     c.FallbackCounts.Total(),
		FallbackDelivered: c.FallbackCounts.Delivered + c.FallbackCounts.Seen,
		FallbackFailed:    c.FallbackCounts.Failed,
	}
	if c.Status == messaging.CampaignQueuing && c.Planned > s.TotalMessages {
		s.Pending += c.Planned - s.TotalMessages
		s.TotalMessages = c.Planned
	}
	if c.Channel == messaging.ChannelChat && s.TotalMessages > 0 {
		ok := s.Delivered + s.FallbackDelivered
		s.OverallDeliveryRate = math.Round(float64(ok)*10000/float64(s.TotalMessages)) / 100
	}
	return s
}
