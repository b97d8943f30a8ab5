package survey

import (
	"context"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// Store is what the survey use cases need from storage: the campaign an
// answer or a report is about, and the answers.
type Store interface {
	campaign.Reader
	// RecordResults stores answers in one transaction: each is stored
	// unless its message has one (an earlier answer, or one before it in
	// rs): the first answer counts. It reports which it stored, in order.
	// All or nothing: on an error none is stored.
	RecordResults(ctx context.Context, rs []*messaging.SurveyResult) ([]bool, error)
	// ListResults returns one page of the company's results of one
	// campaign matching f, oldest answer first, and the total count.
	ListResults(ctx context.Context, companyID messaging.ID, f messaging.SurveyResultFilter) ([]messaging.SurveyResult, int, error)
	// CountByOption returns, for one campaign, how many results chose each
	// option index.
	CountByOption(ctx context.Context, companyID, campaignID messaging.ID) (map[int]int, error)
	// SurveyMessageTo returns the chat message of the company's latest
	// SMS fallback to phone in a survey campaign that is not Completed, or
	// completed after since: the survey an SMS from that number may answer.
	SurveyMessageTo(ctx context.Context, companyID messaging.ID, phone string, since time.Time) (messaging.Message, bool, error)
}
