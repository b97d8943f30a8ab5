package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/messaging"
)

const surveyResultColumns = "id, company_id, campaign_id, message_id, phone, external_user_id, option_index, option_text, tracking_data, responded_at"

func scanSurveyResult(row interface{ Scan(...any) error }) (messaging.SurveyResult, error) {
	var r messaging.SurveyResult
	err := row.Scan(&r.ID, &r.CompanyID, &r.CampaignID, &r.MessageID, &r.Phone, &r.ExternalUserID, &r.OptionIndex,
		&r.OptionText, &r.TrackingData, timeDst{&r.RespondedAt})
	return r, err
}

// insertResult stores r unless its message has a result.
const insertResult = "INSERT INTO survey_results (" + surveyResultColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) " +
	"ON CONFLICT (message_id) DO NOTHING"

func (s *Store) resultArgs(r *messaging.SurveyResult) []any {
	return []any{s.id(r.ID), s.id(r.CompanyID), s.id(r.CampaignID), s.id(r.MessageID), r.Phone, r.ExternalUserID, r.OptionIndex,
		r.OptionText, r.TrackingData, s.ts(r.RespondedAt)}
}

// RecordResults implements survey.Store: the first answer to a message
// is stored, later ones are not; all in one transaction, so that the
// answers of concurrent callbacks share one commit.
func (s *Store) RecordResults(ctx context.Context, rs []*messaging.SurveyResult) (_ []bool, err error) {
	defer keepUnavailable(&err)
	stored := make([]bool, len(rs))
	if len(rs) == 0 {
		return stored, nil
	}
	err = s.write(ctx, "record survey results", func(tx *txn) error {
		clear(stored)
		for i, r := range rs {
			res, err := tx.ExecContext(ctx, insertResult, s.resultArgs(r)...)
			if err != nil {
				return duplicate(err, "survey result "+r.ID.String())
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			stored[i] = n == 1
		}
		return s.emitSurveyAnswered(ctx, tx, rs, stored)
	})
	if err != nil {
		return nil, fmt.Errorf("record survey results: %w", err)
	}
	return stored, nil
}

// ListResults implements survey.Store: oldest answer first, ties by id.
// Another company's campaign has no results.
func (s *Store) ListResults(ctx context.Context, companyID messaging.ID, f messaging.SurveyResultFilter) (_ []messaging.SurveyResult, _ int, err error) {
	defer keepUnavailable(&err)
	l := listing{what: "survey results", columns: surveyResultColumns, from: " FROM survey_results WHERE campaign_id = ? AND company_id = ?",
		args: []any{s.id(f.CampaignID), s.id(companyID)}, order: "responded_at, id"}
	if f.Phone != "" {
		l.and("phone = ?", f.Phone)
	}
	if f.ExternalUserID != "" {
		l.and("external_user_id = ?", f.ExternalUserID)
	}
	if !f.From.IsZero() {
		l.and("responded_at >= ?", s.ts(f.From))
	}
	if !f.To.IsZero() {
		l.and("responded_at <= ?", s.ts(f.To))
	}
	if f.OptionIndex != nil {
		l.and("option_index = ?", *f.OptionIndex)
	}
	return list(ctx, s, l, f.PageRequest, scanSurveyResult)
}

// countByOption counts a campaign's answers by option, from the
// survey_results_summary index alone.
const countByOption = "SELECT option_index, COUNT(*) FROM survey_results WHERE campaign_id = ? AND company_id = ? GROUP BY option_index"

// CountByOption implements survey.Store.
func (s *Store) CountByOption(ctx context.Context, companyID, campaignID messaging.ID) (_ map[int]int, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, countByOption, s.id(campaignID), s.id(companyID))
	if err != nil {
		return nil, fmt.Errorf("count survey results by option: %w", err)
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var option, n int
		if err := rows.Scan(&option, &n); err != nil {
			return nil, fmt.Errorf("count survey results by option: %w", err)
		}
		out[option] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count survey results by option: %w", err)
	}
	return out, nil
}

// SurveyMessageTo implements survey.Store: the fallback SMS to the number
// are found through the index by number, the newest first.
func (s *Store) SurveyMessageTo(ctx context.Context, companyID messaging.ID, phone string, since time.Time) (_ messaging.Message, _ bool, err error) {
	defer keepUnavailable(&err)
	var chatID messaging.ID
	err = s.read.QueryRowContext(ctx, "SELECT fb.fallback_for FROM messages fb JOIN campaigns c ON c.id = fb.campaign_id "+
		"WHERE fb.company_id = ? AND fb.phone = ? AND fb.fallback_for IS NOT NULL AND c.message_type = ? "+
		"AND (c.status <> 'Completed' OR c.completed_at > ?) ORDER BY fb.created_at DESC, fb.id DESC LIMIT 1",
		s.id(companyID), phone, int(messaging.TypeSurvey), s.ts(since)).Scan(&chatID)
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.Message{}, false, nil
	}
	if err != nil {
		return messaging.Message{}, false, fmt.Errorf("find the survey an SMS answers: %w", err)
	}
	m, err := scanMessage(s.read.QueryRowContext(ctx, "SELECT "+messageColumnList+" FROM messages WHERE id = ?", s.id(chatID)))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.Message{}, false, nil
	}
	if err != nil {
		return messaging.Message{}, false, fmt.Errorf("find the survey an SMS answers: %w", err)
	}
	return m, true, nil
}
