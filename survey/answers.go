package survey

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/messaging"
)

// Group commit of answers: at most answerBatch per store call, and a
// store call at most answerWriteTimeout long.
const (
	answerBatch        = 512
	answerWriteTimeout = 30 * time.Second
)

// answerItem is one answer and the context of its caller.
type answerItem struct {
	ctx context.Context
	r   *messaging.SurveyResult
}

// RecordAnswer records the answer to survey message m: the option of
// index optionIndex, chosen at at. It reports whether the answer was
// stored: the first answer to a message counts, a later one is not
// stored (false, nil), and neither is a reply to a message that is not
// part of a survey campaign. An option index outside the survey's
// options is refused with a messaging.Invalid error and not recorded:
// the summary counts only answers it can place. The options are the
// message's own, or, for a message of a bulk campaign (which keeps
// none), the campaign's.
//
// The answers of concurrent callers are written together, in one store
// transaction (Store.RecordResults); when that fails, each is written on
// its own, so that an error reaches only the caller it concerns.
// RecordAnswer is the survey-answer port of the chat events of package
// delivery.
func (s *Service) RecordAnswer(ctx context.Context, m messaging.Message, optionIndex int, at time.Time) (bool, error) {
	c, err := s.store.GetCampaign(ctx, m.CompanyID, m.CampaignID)
	if err != nil {
		return false, fmt.Errorf("survey answer: %w", err)
	}
	if c.MessageType != messaging.TypeSurvey || optionIndex < 0 {
		s.log.InfoContext(ctx, "a reply that is not a survey answer", "message", m.ID)
		return false, nil
	}
	cfg := m.Config
	if cfg == nil {
		cfg = c.Config
	}
	n := 0
	if cfg != nil {
		n = len(cfg.Options)
	}
	if optionIndex >= n {
		s.log.WarnContext(ctx, "survey answer outside the options refused", "message", m.ID, "option_index", optionIndex, "options", n)
		return false, messaging.Invalidf("survey.option_index", "option_index %d is outside the survey's %d options", optionIndex, n)
	}
	r := messaging.SurveyResult{
		ID: s.ids.New(), CompanyID: m.CompanyID, CampaignID: m.CampaignID, MessageID: m.ID,
		Phone: m.Phone, ExternalUserID: m.ExternalUserID, OptionIndex: optionIndex, OptionText: cfg.Options[optionIndex].OptionText,
		TrackingData: m.ID.String(), RespondedAt: at,
	}
	res, err := s.answers.Do(ctx, answerItem{ctx: ctx, r: &r}, nil)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return false, fmt.Errorf("survey answer: %w", err)
	}
	return res.OK, nil
}

// writeAnswers writes one group of answers in one RecordResults.
func (s *Service) writeAnswers(items []answerItem) ([]groupcommit.Result, error) {
	rs := make([]*messaging.SurveyResult, len(items))
	for i, it := range items {
		rs[i] = it.r
	}
	return groupcommit.WriteOrSplit(s.log, "survey answers", len(items), func(i int) context.Context { return items[i].ctx },
		func(ctx context.Context, from, to int) ([]bool, error) {
			ctx, cancel := context.WithTimeout(ctx, answerWriteTimeout)
			defer cancel()
			stored, err := s.store.RecordResults(ctx, rs[from:to])
			if err != nil {
				return nil, fmt.Errorf("record survey answers: %w", err)
			}
			return stored, nil
		})
}
