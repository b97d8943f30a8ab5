package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/messaging"
)

const templateColumns = "id, company_id, name, description, channel, message_type, content, sms_sender_id, chat_service_id, " +
	"config, sms_fallback_enabled, sms_fallback_content, sms_fallback_sender_id, created_at, updated_at, validity_period"

func scanTemplate(row interface{ Scan(...any) error }) (messaging.Template, error) {
	var t messaging.Template
	err := row.Scan(&t.ID, &t.CompanyID, &t.Name, &t.Description, &t.Channel, &t.MessageType, &t.Content,
		&t.SMSSenderID, &t.ChatServiceID, configDst{&t.Config}, &t.SMSFallbackEnabled, &t.SMSFallbackContent,
		&t.SMSFallbackSenderID, timeDst{&t.CreatedAt}, timeDst{&t.UpdatedAt}, &t.ValidityPeriod)
	return t, err
}

// CreateTemplate implements campaign.TemplateStore. A name the company
// already uses is an Invalid error on field "name".
func (s *Store) CreateTemplate(ctx context.Context, t *messaging.Template) (err error) {
	defer keepUnavailable(&err)
	cfg, err := jsonConfig(t.Config)
	if err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	_, err = s.db.ExecContext(ctx, "INSERT INTO templates ("+templateColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		s.id(t.ID), s.id(t.CompanyID), t.Name, t.Description, string(t.Channel), int(t.MessageType), t.Content,
		t.SMSSenderID, t.ChatServiceID, cfg, t.SMSFallbackEnabled, t.SMSFallbackContent, t.SMSFallbackSenderID,
		s.ts(t.CreatedAt), s.ts(t.UpdatedAt), t.ValidityPeriod)
	if isTemplateNameTaken(err) {
		return errNameTaken()
	}
	if err != nil {
		return fmt.Errorf("create template: %w", duplicate(err, "template "+t.ID.String()))
	}
	return nil
}

// GetTemplate implements campaign.TemplateStore.
func (s *Store) GetTemplate(ctx context.Context, companyID, id messaging.ID) (_ messaging.Template, err error) {
	defer keepUnavailable(&err)
	t, err := scanTemplate(s.readRow(ctx, "SELECT "+templateColumns+" FROM templates WHERE id = ? AND company_id = ?",
		s.id(id), s.id(companyID)))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.Template{}, messaging.TemplateNotFound(id)
	}
	if err != nil {
		return messaging.Template{}, fmt.Errorf("get template: %w", err)
	}
	return t, nil
}

// ListTemplates implements campaign.TemplateStore: newest first, ties by
// id, newest id first.
func (s *Store) ListTemplates(ctx context.Context, companyID messaging.ID, page messaging.PageRequest) (_ []messaging.Template, _ int, err error) {
	defer keepUnavailable(&err)
	l := listing{what: "templates", columns: templateColumns, from: " FROM templates WHERE company_id = ?",
		args: []any{s.id(companyID)}, order: "created_at DESC, id DESC"}
	return list(ctx, s, l, page, scanTemplate)
}

// UpdateTemplate implements campaign.TemplateStore.
func (s *Store) UpdateTemplate(ctx context.Context, t *messaging.Template) (err error) {
	defer keepUnavailable(&err)
	cfg, err := jsonConfig(t.Config)
	if err != nil {
		return fmt.Errorf("update template: %w", err)
	}
	res, err := s.db.ExecContext(ctx, "UPDATE templates SET name = ?, description = ?, message_type = ?, content = ?, "+
		"sms_sender_id = ?, chat_service_id = ?, config = ?, sms_fallback_enabled = ?, sms_fallback_content = ?, "+
		"sms_fallback_sender_id = ?, validity_period = ?, updated_at = ? WHERE id = ? AND company_id = ?",
		t.Name, t.Description, int(t.MessageType), t.Content, t.SMSSenderID, t.ChatServiceID, cfg,
		t.SMSFallbackEnabled, t.SMSFallbackContent, t.SMSFallbackSenderID, t.ValidityPeriod, s.ts(t.UpdatedAt), s.id(t.ID), s.id(t.CompanyID))
	if isTemplateNameTaken(err) {
		return errNameTaken()
	}
	return updatedOne(res, err, "update template", func() error { return messaging.TemplateNotFound(t.ID) })
}

// DeleteTemplate implements campaign.TemplateStore. Campaigns made from
// the template keep its id and name.
func (s *Store) DeleteTemplate(ctx context.Context, companyID, id messaging.ID) (err error) {
	defer keepUnavailable(&err)
	res, err := s.db.ExecContext(ctx, "DELETE FROM templates WHERE id = ? AND company_id = ?", s.id(id), s.id(companyID))
	return updatedOne(res, err, "delete template", func() error { return messaging.TemplateNotFound(id) })
}

// pageDefaults fills the defaults of a page request the caller did not
// normalise.
func pageDefaults(p messaging.PageRequest) messaging.PageRequest {
	if p.Page < 1 {
		p.Page = 1
	}
	if p.PageSize < 1 {
		p.PageSize = messaging.DefaultPageSize
	}
	return p
}
