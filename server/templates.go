package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// messageTypeInput is a messageType as sent: a number 1-8 or a type name.
// Zero means not given.
type messageTypeInput int

// UnmarshalJSON implements json.Unmarshaler.
func (m *messageTypeInput) UnmarshalJSON(b []byte) error {
	bad := &fieldError{field: "messageType",
		msg: "messageType must be an integer from 1 to 8 or one of SimpleText, ImageOnly, ButtonPlusText, ImagePlusText, Carousel, Survey, Video, File"}
	s := string(b)
	switch {
	case s == "null":
		*m = 0
		return nil
	case strings.HasPrefix(s, `"`):
		var name string
		if err := json.Unmarshal(b, &name); err != nil {
			return bad
		}
		for t := messaging.TypeSimpleText; t <= messaging.TypeFile; t++ {
			if strings.EqualFold(name, t.String()) {
				*m = messageTypeInput(t)
				return nil
			}
		}
		return bad
	}
	n, err := strconv.Atoi(s)
	if err != nil || !messaging.MessageType(n).Valid() {
		return bad
	}
	*m = messageTypeInput(n)
	return nil
}

// configInput is a typeSpecificConfig as sent: a JSON object, a string
// holding one, or null.
type configInput struct {
	cfg *messaging.ChatConfig
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *configInput) UnmarshalJSON(b []byte) error {
	const field = "typeSpecificConfig"
	c.cfg = nil
	s := strings.TrimSpace(string(b))
	switch {
	case s == "null":
		return nil
	case strings.HasPrefix(s, `"`):
		var inner string
		if err := json.Unmarshal(b, &inner); err != nil {
			return &fieldError{field: field, msg: "typeSpecificConfig is not a valid string"}
		}
		inner = strings.TrimSpace(inner)
		if inner == "" || inner == "null" {
			return nil
		}
		b = []byte(inner)
		if checkText(b) != nil { // the outer string's escapes may hide one
			return &fieldError{field: field, msg: "typeSpecificConfig must be valid text: it holds invalid UTF-8 or an escaped lone surrogate"}
		}
	case !strings.HasPrefix(s, "{"):
		return &fieldError{field: field, msg: "typeSpecificConfig must be a JSON object or a string holding one"}
	}
	var cfg messaging.ChatConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			if typeErr.Field == "" {
				return &fieldError{field: field, msg: "typeSpecificConfig must be a JSON object or a string holding one"}
			}
			path := field + "." + typeErr.Field
			return &fieldError{field: path, msg: path + " must be " + jsonKind(typeErr.Type)}
		}
		return &fieldError{field: field, msg: "typeSpecificConfig is not valid JSON: " + err.Error()}
	}
	c.cfg = &cfg
	return nil
}

// templateInput is the body of template creation and update. Which fields
// count depends on the channel.
type templateInput struct {
	Name                       string           `json:"name"`
	Description                string           `json:"description"`
	MessageType                messageTypeInput `json:"messageType"`
	ChannelType                string           `json:"channelType"`
	TemplateContent            string           `json:"templateContent"`
	SMSSenderID                int64            `json:"smsSenderId"`
	ChatServiceID              int64            `json:"chatServiceId"`
	TypeSpecificConfig         configInput      `json:"typeSpecificConfig"`
	SMSFallbackEnabled         bool             `json:"smsFallbackEnabled"`
	SMSFallbackTemplateContent string           `json:"smsFallbackTemplateContent"`
	SMSFallbackSenderID        int64            `json:"smsFallbackSenderId"`
	ValidityPeriod             int              `json:"validityPeriod"`
}

// template converts the input to a template of channel ch.
func (in *templateInput) template(ch messaging.Channel) (messaging.Template, error) {
	if in.ChannelType != "" && messaging.Channel(in.ChannelType) != ch {
		return messaging.Template{}, invalidField("channelType",
			fmt.Sprintf("channelType must be %s here: the channel of a template cannot change", ch))
	}
	t := messaging.Template{Name: in.Name, Description: in.Description, Channel: ch, Content: in.TemplateContent,
		ValidityPeriod: in.ValidityPeriod}
	if ch == messaging.ChannelSMS {
		if in.MessageType != 0 && messaging.MessageType(in.MessageType) != messaging.TypeSimpleText {
			return messaging.Template{}, invalidField("messageType", "SMS templates have messageType 1 (SimpleText)")
		}
		t.MessageType = messaging.TypeSimpleText
		t.SMSSenderID = in.SMSSenderID
		return t, nil
	}
	t.MessageType = messaging.MessageType(in.MessageType)
	t.ChatServiceID = in.ChatServiceID
	t.Config = in.TypeSpecificConfig.cfg
	t.SMSFallbackEnabled = in.SMSFallbackEnabled
	t.SMSFallbackContent = in.SMSFallbackTemplateContent
	t.SMSFallbackSenderID = in.SMSFallbackSenderID
	return t, nil
}

// templateJSON holds the fields every template answers.
type templateJSON struct {
	ID              messaging.ID      `json:"id"`
	Name            string            `json:"name"`
	Description     *string           `json:"description"`
	MessageType     int               `json:"messageType"`
	ChannelType     messaging.Channel `json:"channelType"`
	TemplateContent string            `json:"templateContent"`
	ValidityPeriod  *int              `json:"validityPeriod"`
	CreatedAt       timestamp         `json:"createdAt"`
	UpdatedAt       timestamp         `json:"updatedAt"`
}

// smsTemplateJSON is an SMS template.
type smsTemplateJSON struct {
	templateJSON
	SMSSenderID *int64 `json:"smsSenderId"`
}

// chatTemplateJSON is a chat template.
type chatTemplateJSON struct {
	templateJSON
	ChatServiceID              int64   `json:"chatServiceId"`
	TypeSpecificConfig         *string `json:"typeSpecificConfig"`
	SMSFallbackEnabled         bool    `json:"smsFallbackEnabled"`
	SMSFallbackTemplateContent *string `json:"smsFallbackTemplateContent"`
	SMSFallbackSenderID        *int64  `json:"smsFallbackSenderId"`
}

// templateOut converts a template to its JSON form.
func templateOut(t *messaging.Template) (any, error) {
	base := templateJSON{ID: t.ID, Name: t.Name, Description: strOrNull(t.Description),
		MessageType: int(t.MessageType), ChannelType: t.Channel, TemplateContent: t.Content,
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt)}
	if t.ValidityPeriod > 0 {
		v := t.ValidityPeriod
		base.ValidityPeriod = &v
	}
	if t.Channel == messaging.ChannelSMS {
		base.MessageType = int(messaging.TypeSimpleText)
		return smsTemplateJSON{templateJSON: base, SMSSenderID: idOrNull(t.SMSSenderID)}, nil
	}
	out := chatTemplateJSON{templateJSON: base, ChatServiceID: t.ChatServiceID,
		SMSFallbackEnabled: t.SMSFallbackEnabled, SMSFallbackTemplateContent: strOrNull(t.SMSFallbackContent),
		SMSFallbackSenderID: idOrNull(t.SMSFallbackSenderID)}
	if t.Config != nil {
		b, err := json.Marshal(t.Config)
		if err != nil {
			return nil, fmt.Errorf("encode typeSpecificConfig of template %s: %w", t.ID, err)
		}
		s := string(b)
		out.TypeSpecificConfig = &s
	}
	return out, nil
}

func (s *server) createSMSTemplate(w http.ResponseWriter, r *http.Request) error {
	return s.createTemplate(w, r, messaging.ChannelSMS)
}

func (s *server) createChatTemplate(w http.ResponseWriter, r *http.Request) error {
	return s.createTemplate(w, r, messaging.ChannelChat)
}

// createTemplate answers POST /templates/sms and /templates/chat.
func (s *server) createTemplate(w http.ResponseWriter, r *http.Request, ch messaging.Channel) error {
	var in templateInput
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	t, err := in.template(ch)
	if err != nil {
		return err
	}
	t, err = s.campaigns.CreateTemplate(r.Context(), companyOf(r), t)
	if err != nil {
		return err
	}
	out, err := templateOut(&t)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/templates/"+t.ID.String())
	s.writeJSON(w, http.StatusCreated, out)
	return nil
}

// listTemplates answers GET /templates.
func (s *server) listTemplates(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	page := q.page()
	if err := q.err(); err != nil {
		return err
	}
	ts, total, err := s.campaigns.ListTemplates(r.Context(), companyOf(r), page)
	if err != nil {
		return err
	}
	out := make([]any, len(ts))
	for i := range ts {
		if out[i], err = templateOut(&ts[i]); err != nil {
			return err
		}
	}
	s.writeJSON(w, http.StatusOK, struct {
		Templates []any `json:"templates"`
		pageJSON
	}{out, pageOut(page, total)})
	return nil
}

// getTemplate answers GET /templates/{id}.
func (s *server) getTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	t, err := s.campaigns.GetTemplate(r.Context(), companyOf(r), id)
	if err != nil {
		return err
	}
	out, err := templateOut(&t)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}

// updateTemplate answers PUT /templates/{id}: the creation fields of the
// template's channel, validated the same way.
func (s *server) updateTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	company := companyOf(r)
	old, err := s.campaigns.GetTemplate(r.Context(), company, id)
	if err != nil {
		return err
	}
	var in templateInput
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	t, err := in.template(old.Channel)
	if err != nil {
		return err
	}
	t, err = s.campaigns.UpdateTemplate(r.Context(), company, id, t)
	if err != nil {
		return err
	}
	out, err := templateOut(&t)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteTemplate answers DELETE /templates/{id}: 204, no body.
func (s *server) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.campaigns.DeleteTemplate(r.Context(), companyOf(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// pageJSON is the paging part of list responses.
type pageJSON struct {
	TotalCount int `json:"totalCount"`
	Page       int `json:"page"`
	PageSize   int `json:"pageSize"`
	TotalPages int `json:"totalPages"`
}

func pageOut(p messaging.PageRequest, total int) pageJSON {
	return pageJSON{TotalCount: total, Page: p.Page, PageSize: p.PageSize, TotalPages: p.TotalPages(total)}
}

// previewJSON answers POST /templates/preview.
type previewJSON struct {
	RenderedText         string   `json:"renderedText"`
	Placeholders         []string `json:"placeholders"`
	MissingPlaceholders  []string `json:"missingPlaceholders"`
	Encoding             string   `json:"encoding"`
	Characters           int      `json:"characters"`
	Segments             int      `json:"segments"`
	CharactersPerSegment int      `json:"charactersPerSegment"`
	CharactersLeft       int      `json:"charactersLeft"`
}

// previewTemplate answers POST /templates/preview: an SMS text rendered
// with sample placeholder values, and how it travels (encoding, length in
// septets or UTF-16 units, segments, room left in the last one), computed
// as the SMPP transport will. A placeholder without a value stays as
// written and counts as such. Nothing is stored.
func (s *server) previewTemplate(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		TemplateContent *string           `json:"templateContent"`
		Placeholders    map[string]string `json:"placeholders"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	var fe messaging.FieldErrors
	if in.TemplateContent == nil {
		fe.Add("templateContent", "templateContent is required")
	} else {
		template.CheckField(&fe, "templateContent", *in.TemplateContent, 0, template.MaxSMSContentLen)
	}
	for name, v := range in.Placeholders {
		template.CheckFieldChars(&fe, "placeholders."+name, v)
	}
	if err := fe.Err(); err != nil {
		return err
	}
	t := template.Compile(*in.TemplateContent)
	out := previewJSON{Placeholders: append([]string{}, t.Names()...), MissingPlaceholders: []string{}}
	for _, name := range out.Placeholders {
		if _, ok := in.Placeholders[name]; !ok {
			out.MissingPlaceholders = append(out.MissingPlaceholders, name)
		}
	}
	out.RenderedText = t.Render(in.Placeholders, nil)
	seg := template.Segment(out.RenderedText)
	out.Encoding, out.Characters, out.Segments = string(seg.Encoding), seg.Units, seg.Segments
	out.CharactersPerSegment, out.CharactersLeft = seg.PerSegment(), seg.Left()
	s.writeJSON(w, http.StatusOK, out)
	return nil
}
