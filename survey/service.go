package survey

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/messaging"
)

// Config configures a Service. Store is required; every other field has
// a documented zero-value default.
type Config struct {
	// Store holds campaigns and answers. Required.
	Store Store
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// IDs makes the ids of answers. Default: a UUIDv7 generator on Now.
	IDs *messaging.IDGenerator
	// Logger receives answers refused or ignored. Default: discard.
	Logger *slog.Logger
}

// Service records survey answers (RecordAnswer, which the chat callbacks
// call) and reports on them: their list and their summary.
type Service struct {
	store Store
	ids   *messaging.IDGenerator
	log   *slog.Logger
	// answers groups the answers of concurrent callers into one
	// RecordResults each (group commit).
	answers *groupcommit.Committer[answerItem, groupcommit.Result]
}

// New returns a Service for cfg; Config.Store is required.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("survey: Config.Store is required")
	}
	s := &Service{store: cfg.Store, ids: cfg.IDs, log: cfg.Logger}
	if s.ids == nil {
		now := cfg.Now
		if now == nil {
			now = time.Now
		}
		s.ids = messaging.NewIDGenerator(now)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.answers = &groupcommit.Committer[answerItem, groupcommit.Result]{Max: answerBatch, Min: 1, Write: s.writeAnswers}
	return s, nil
}

// surveyCampaign returns the company's campaign, which must be a survey
// campaign (sent with a Survey template).
func (s *Service) surveyCampaign(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error) {
	c, err := s.store.GetCampaign(ctx, companyID, id)
	if messaging.IsCode(err, messaging.NotFound) {
		return messaging.Campaign{}, messaging.CampaignNotFound(id)
	}
	if err != nil {
		return messaging.Campaign{}, fmt.Errorf("get campaign: %w", err)
	}
	if c.Channel != messaging.ChannelChat || c.MessageType != messaging.TypeSurvey {
		return messaging.Campaign{}, messaging.Errorf(messaging.Invalid, messaging.NameBadRequest, "Campaign %s is not a survey campaign", id)
	}
	return c, nil
}

// ListResults returns a page of the answers to a survey campaign matching
// f, oldest first. The campaign must be a survey campaign of the company.
func (s *Service) ListResults(ctx context.Context, companyID messaging.ID, f messaging.SurveyResultFilter) ([]messaging.SurveyResult, int, error) {
	if f.CampaignID.IsZero() {
		return nil, 0, messaging.Errorf(messaging.Invalid, messaging.NameBadRequest, "campaignId is required")
	}
	p, err := f.PageRequest.Normalize()
	if err != nil {
		return nil, 0, err
	}
	f.PageRequest = p
	if f.Phone != "" {
		phone, ok := messaging.NormalizePhone(f.Phone)
		if !ok {
			return nil, 0, messaging.Invalidf("phoneNumber", "phoneNumber must be 10 to 15 digits, optionally after a '+'")
		}
		f.Phone = phone
	}
	if f.OptionIndex != nil && *f.OptionIndex < 0 {
		return nil, 0, messaging.Invalidf("selectedOptionIndex", "selectedOptionIndex must not be negative")
	}
	if _, err := s.surveyCampaign(ctx, companyID, f.CampaignID); err != nil {
		return nil, 0, err
	}
	rs, total, err := s.store.ListResults(ctx, companyID, f)
	if err != nil {
		return nil, 0, fmt.Errorf("list survey results: %w", err)
	}
	return rs, total, nil
}

// Summarize returns the summary of a survey campaign. Messages sent are
// those handed to a provider: the chat messages Sent, Delivered or Seen,
// and the SMS fallbacks Sent or Delivered (their recipients can answer by
// SMS), so that the response rate never passes 100 %.
func (s *Service) Summarize(ctx context.Context, companyID, campaignID messaging.ID) (Summary, error) {
	c, err := s.surveyCampaign(ctx, companyID, campaignID)
	if err != nil {
		return Summary{}, err
	}
	counts, err := s.store.CountByOption(ctx, companyID, campaignID)
	if err != nil {
		return Summary{}, fmt.Errorf("count survey answers: %w", err)
	}
	var options []messaging.SurveyOption
	if c.Config != nil {
		options = c.Config.Options
	}
	sent := c.Counts.Sent + c.Counts.Delivered + c.Counts.Seen + c.FallbackCounts.Sent + c.FallbackCounts.Delivered
	sum := Aggregate(options, counts, sent)
	sum.CampaignID, sum.CampaignName = c.ID, c.Name
	return sum, nil
}
