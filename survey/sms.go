package survey

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// SMSAnswerWindow is how long after its campaign completed a survey takes
// answers by SMS.
const SMSAnswerWindow = 7 * 24 * time.Hour

// MatchOption reads an SMS reply against a survey's options: the text of
// an option or its value (case and surrounding spaces and end punctuation
// ignored), or its number counted from 1. It returns the option's index.
func MatchOption(text string, options []messaging.SurveyOption) (int, bool) {
	t := strings.Trim(text, " \t\r\n.!?")
	if t == "" {
		return 0, false
	}
	for i, o := range options {
		if strings.EqualFold(t, strings.TrimSpace(o.OptionText)) || (o.OptionValue != "" && strings.EqualFold(t, strings.TrimSpace(o.OptionValue))) {
			return i, true
		}
	}
	if n, err := strconv.Atoi(t); err == nil && n >= 1 && n <= len(options) {
		return n - 1, true
	}
	return 0, false
}

// AnswerBySMS records an SMS reply as a survey answer when it answers a
// survey: the company's latest survey campaign whose SMS fallback went to
// the sender's number, while the campaign runs or within SMSAnswerWindow
// after it completed, and the text names one of its options (MatchOption).
// The answer is recorded for the chat message the fallback stood in for,
// and counts like a chat answer (the first one to a message). It reports
// whether it recorded one; a text that answers nothing is left to the
// inbound list.
func (s *Service) AnswerBySMS(ctx context.Context, m messaging.InboundMessage) (bool, error) {
	if m.CompanyID.IsZero() {
		return false, nil
	}
	chat, ok, err := s.store.SurveyMessageTo(ctx, m.CompanyID, m.Phone, m.ReceivedAt.Add(-SMSAnswerWindow))
	if err != nil {
		return false, fmt.Errorf("survey answer by SMS: %w", err)
	}
	if !ok {
		return false, nil
	}
	c, err := s.store.GetCampaign(ctx, chat.CompanyID, chat.CampaignID)
	if err != nil {
		return false, fmt.Errorf("survey answer by SMS: %w", err)
	}
	cfg := chat.Config
	if cfg == nil {
		cfg = c.Config
	}
	if cfg == nil {
		return false, nil
	}
	i, ok := MatchOption(m.Text, cfg.Options)
	if !ok {
		return false, nil
	}
	return s.RecordAnswer(ctx, chat, i, m.ReceivedAt)
}
