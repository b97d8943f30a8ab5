package campaign

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// CreateTemplate validates t and stores it as a new template of the
// company. t.Channel says which kind it is; an SMS template always has
// MessageType 1. Every rule of the API is checked, field by field: the
// template's own rules, that its chat service belongs to the company, that
// its SMS senders are approved senders of the company, that its media URLs
// answer, and that its name is not taken. Nothing is stored when any fails.
func (s *Service) CreateTemplate(ctx context.Context, companyID messaging.ID, t messaging.Template) (messaging.Template, error) {
	now := s.clock()
	t.ID = s.ids.New()
	t.CompanyID = companyID
	t.CreatedAt, t.UpdatedAt = now, now
	if err := s.checkTemplate(ctx, &t); err != nil {
		return messaging.Template{}, err
	}
	if err := s.store.CreateTemplate(ctx, &t); err != nil {
		return messaging.Template{}, fmt.Errorf("create template: %w", err)
	}
	return t, nil
}

// UpdateTemplate replaces the fields of a template with those of t, with
// the rules of CreateTemplate. The channel of a template cannot change:
// t.Channel is ignored. Messages already rendered keep their text.
func (s *Service) UpdateTemplate(ctx context.Context, companyID, id messaging.ID, t messaging.Template) (messaging.Template, error) {
	old, err := s.store.GetTemplate(ctx, companyID, id)
	if err != nil {
		return messaging.Template{}, fmt.Errorf("update template: %w", err)
	}
	t.ID, t.CompanyID, t.Channel, t.CreatedAt = old.ID, old.CompanyID, old.Channel, old.CreatedAt
	t.UpdatedAt = s.clock()
	if err := s.checkTemplate(ctx, &t); err != nil {
		return messaging.Template{}, err
	}
	if err := s.store.UpdateTemplate(ctx, &t); err != nil {
		return messaging.Template{}, fmt.Errorf("update template: %w", err)
	}
	s.targets.Clear() // messages added from now on use the new text
	return t, nil
}

// GetTemplate returns one of the company's templates.
func (s *Service) GetTemplate(ctx context.Context, companyID, id messaging.ID) (messaging.Template, error) {
	t, err := s.store.GetTemplate(ctx, companyID, id)
	if err != nil {
		return messaging.Template{}, fmt.Errorf("get template: %w", err)
	}
	return t, nil
}

// ListTemplates returns a page of the company's templates, newest first,
// and their total count.
func (s *Service) ListTemplates(ctx context.Context, companyID messaging.ID, page messaging.PageRequest) ([]messaging.Template, int, error) {
	page, err := page.Normalize()
	if err != nil {
		return nil, 0, err
	}
	ts, total, err := s.store.ListTemplates(ctx, companyID, page)
	if err != nil {
		return nil, 0, fmt.Errorf("list templates: %w", err)
	}
	return ts, total, nil
}

// DeleteTemplate deletes a template. Campaigns made from it keep their
// messages and the template's name.
func (s *Service) DeleteTemplate(ctx context.Context, companyID, id messaging.ID) error {
	if err := s.store.DeleteTemplate(ctx, companyID, id); err != nil {
		return fmt.Errorf("delete template: %w", err)
	}
	s.targets.Clear()
	return nil
}

// checkTemplate applies the template rules, the ownership rules and the
// media probes, in that order: media are probed only when everything else
// holds, so a bad request costs no network round trip.
func (s *Service) checkTemplate(ctx context.Context, t *messaging.Template) error {
	if t.Channel == messaging.ChannelSMS {
		t.MessageType = messaging.TypeSimpleText
		t.ChatServiceID, t.Config = 0, nil
		t.SMSFallbackEnabled, t.SMSFallbackContent, t.SMSFallbackSenderID = false, "", 0
	} else {
		t.SMSSenderID = 0
	}
	fe := template.Check(t)
	checkValidity(&fe, t.ValidityPeriod)
	if t.Channel == messaging.ChannelSMS && t.SMSSenderID != 0 {
		if _, ok := fe["smsSenderId"]; !ok {
			if _, err := s.approvedSender(ctx, t.CompanyID, t.SMSSenderID, messaging.NameInvalidSMSSender); err != nil {
				if !messaging.IsCode(err, messaging.Invalid) {
					return err
				}
				fe.Add("smsSenderId", "smsSenderId must be an approved SMS sender of the company")
			}
		}
	}
	if t.Channel == messaging.ChannelChat {
		if _, ok := fe["chatServiceId"]; !ok {
			cs, err := s.chatService(ctx, t.CompanyID, t.ChatServiceID, messaging.NameInvalidChatService)
			switch {
			case err == nil:
				if err := s.checkCarried(&fe, cs, t); err != nil {
					return err
				}
			case !messaging.IsCode(err, messaging.Invalid):
				return err
			default:
				fe.Add("chatServiceId", "chatServiceId must be a chat service of the company")
			}
		}
		if t.SMSFallbackEnabled {
			if _, ok := fe["smsFallbackSenderId"]; !ok {
				if _, err := s.approvedSender(ctx, t.CompanyID, t.SMSFallbackSenderID, messaging.NameInvalidFallbackSender); err != nil {
					if !messaging.IsCode(err, messaging.Invalid) {
						return err
					}
					fe.Add("smsFallbackSenderId", "smsFallbackSenderId must be an approved SMS sender of the company")
				}
			}
		} else {
			t.SMSFallbackContent, t.SMSFallbackSenderID = "", 0
		}
	}
	if err := fe.Err(); err != nil {
		return err
	}
	if s.media != nil && t.Channel == messaging.ChannelChat {
		if err := template.ValidateMedia(ctx, s.media, t); err != nil {
			return fmt.Errorf("check media: %w", err)
		}
	}
	return nil
}
