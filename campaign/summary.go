package campaign

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// MaxSummaryAge is how far back a summary of messages may start.
const MaxSummaryAge = 7 * 24 * time.Hour

// SummarizeMessages counts the messages created since since (zero: the
// start of the current UTC day), of companyID, or of every company when it
// is zero, by company, channel and status, the Failed ones by reason too.
// Direct sends and fallback SMS are counted. since more than MaxSummaryAge
// ago is Invalid on field "since". It returns the tallies and the start
// they count from.
func (s *Service) SummarizeMessages(ctx context.Context, companyID messaging.ID, since time.Time) ([]messaging.MessageTally, time.Time, error) {
	now := s.clock()
	if since.IsZero() {
		since = now.Truncate(24 * time.Hour)
	}
	if since.Before(now.Add(-MaxSummaryAge)) {
		return nil, time.Time{}, messaging.Invalidf("since", "since must be within the last %d days", int(MaxSummaryAge/(24*time.Hour)))
	}
	ts, err := s.store.SummarizeMessages(ctx, companyID, since)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("summarize messages: %w", err)
	}
	return ts, since.UTC(), nil
}
