package memstore

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// storeResult keeps a copy of r, under the lock.
func (s *Store) storeResult(r *messaging.SurveyResult) {
	v := *r
	s.results[r.MessageID] = &v
	s.resultsByCampaign[r.CampaignID] = append(s.resultsByCampaign[r.CampaignID], &v)
	s.resultIDs[r.ID] = struct{}{}
}

// RecordResults implements survey.Store, under one lock: the first answer
// to a message is the one kept.
func (s *Store) RecordResults(ctx context.Context, rs []*messaging.SurveyResult) ([]bool, error) {
	if err := s.lock(ctx, "record survey results"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	// Checked first, written after: all or nothing.
	stored := make([]bool, len(rs))
	messages := map[messaging.ID]bool{}
	ids := map[messaging.ID]bool{}
	for i, r := range rs {
		if _, ok := s.results[r.MessageID]; ok || messages[r.MessageID] {
			continue
		}
		if _, ok := s.resultIDs[r.ID]; ok || ids[r.ID] {
			return nil, messaging.Errorf(messaging.Conflict, messaging.NameConflict, "survey result %s exists", r.ID)
		}
		messages[r.MessageID], ids[r.ID], stored[i] = true, true, true
	}
	now := time.Now()
	for i, r := range rs {
		if stored[i] {
			s.storeResult(r)
			if eps := s.subscribers(r.CompanyID, webhook.SurveyAnswered); len(eps) > 0 {
				s.emit(webhook.SurveyAnsweredEvent(s.outbox.ids.New(), r, now), eps)
			}
		}
	}
	return stored, nil
}

// ListResults implements survey.Store: oldest answer first (RespondedAt,
// then id).
func (s *Store) ListResults(ctx context.Context, companyID messaging.ID, f messaging.SurveyResultFilter) ([]messaging.SurveyResult, int, error) {
	if err := s.lock(ctx, "list survey results"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var all []*messaging.SurveyResult
	for _, r := range s.resultsByCampaign[f.CampaignID] {
		if r.CompanyID == companyID && (f.Phone == "" || r.Phone == f.Phone) &&
			(f.ExternalUserID == "" || r.ExternalUserID == f.ExternalUserID) &&
			inRange(r.RespondedAt, f.From, f.To) && (f.OptionIndex == nil || r.OptionIndex == *f.OptionIndex) {
			all = append(all, r)
		}
	}
	slices.SortFunc(all, func(a, b *messaging.SurveyResult) int {
		if c := a.RespondedAt.Compare(b.RespondedAt); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
	rows := page(all, f.PageRequest)
	out := make([]messaging.SurveyResult, len(rows))
	for i, r := range rows {
		out[i] = *r
	}
	return out, len(all), nil
}

// CountByOption implements survey.Store.
func (s *Store) CountByOption(ctx context.Context, companyID, campaignID messaging.ID) (map[int]int, error) {
	if err := s.lock(ctx, "count survey answers"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := map[int]int{}
	for _, r := range s.resultsByCampaign[campaignID] {
		if r.CompanyID == companyID {
			out[r.OptionIndex]++
		}
	}
	return out, nil
}

// SurveyMessageTo implements survey.Store.
func (s *Store) SurveyMessageTo(ctx context.Context, companyID messaging.ID, phone string, since time.Time) (messaging.Message, bool, error) {
	if err := s.lock(ctx, "find the survey an SMS answers"); err != nil {
		return messaging.Message{}, false, err
	}
	defer s.mu.Unlock()
	var best *messaging.Message
	for _, id := range s.byPhone.get(companyID, phone) {
		fb := s.messages[id]
		if fb == nil || !fb.IsFallback() {
			continue
		}
		cr := s.campaigns[fb.CampaignID]
		if cr == nil || cr.c.MessageType != messaging.TypeSurvey ||
			(cr.c.Status == messaging.CampaignCompleted && (cr.c.CompletedAt == nil || !cr.c.CompletedAt.After(since))) {
			continue
		}
		if best == nil || fb.CreatedAt.After(best.CreatedAt) || (fb.CreatedAt.Equal(best.CreatedAt) && bytes.Compare(fb.ID[:], best.ID[:]) > 0) {
			best = fb
		}
	}
	if best == nil {
		return messaging.Message{}, false, nil
	}
	chat := s.messages[best.FallbackFor]
	if chat == nil {
		return messaging.Message{}, false, nil
	}
	return cloneMessage(chat), true, nil
}
