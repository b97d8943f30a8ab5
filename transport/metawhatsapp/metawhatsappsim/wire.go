package metawhatsappsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The JSON of a message request as the reference's Message schema has
// it, decoded strictly: a field it does not list is an error.
type reqMessage struct {
	MessagingProduct      string          `json:"messaging_product"`
	RecipientType         *string         `json:"recipient_type"`
	To                    string          `json:"to"`
	Type                  string          `json:"type"`
	Context               *reqContext     `json:"context"`
	Text                  *reqText        `json:"text"`
	Image                 *reqMedia       `json:"image"`
	Video                 *reqMedia       `json:"video"`
	Document              *reqMedia       `json:"document"`
	Interactive           *reqInteractive `json:"interactive"`
	Template              *reqTemplate    `json:"template"`
	BizOpaqueCallbackData *string         `json:"biz_opaque_callback_data"`
}

type reqContext struct {
	MessageID string `json:"message_id"`
}

type reqText struct {
	Body       string `json:"body"`
	PreviewURL *bool  `json:"preview_url"`
}

type reqMedia struct {
	ID       string  `json:"id"`
	Link     string  `json:"link"`
	Caption  *string `json:"caption"`
	Filename *string `json:"filename"`
}

type reqInteractive struct {
	Type   string     `json:"type"`
	Header *reqHeader `json:"header"`
	Body   *reqBody   `json:"body"`
	Footer *reqBody   `json:"footer"`
	Action *reqAction `json:"action"`
}

type reqHeader struct {
	Type     string    `json:"type"`
	Text     string    `json:"text"`
	Image    *reqMedia `json:"image"`
	Video    *reqMedia `json:"video"`
	Document *reqMedia `json:"document"`
}

type reqBody struct {
	Text string `json:"text"`
}

type reqAction struct {
	Name       string       `json:"name"`
	Parameters *reqCTA      `json:"parameters"`
	Buttons    []reqButton  `json:"buttons"`
	Button     string       `json:"button"`
	Sections   []reqSection `json:"sections"`
	Cards      []reqCard    `json:"cards"`
}

type reqCTA struct {
	DisplayText string `json:"display_text"`
	URL         string `json:"url"`
}

type reqButton struct {
	Type       string    `json:"type"`
	Reply      *reqReply `json:"reply"`
	QuickReply *reqReply `json:"quick_reply"`
}

type reqReply struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

type reqSection struct {
	Title string     `json:"title"`
	Rows  []reqReply `json:"rows"`
}

type reqCard struct {
	CardIndex *int       `json:"card_index"`
	Type      string     `json:"type"`
	Header    *reqHeader `json:"header"`
	Body      *reqBody   `json:"body"`
	Action    *reqAction `json:"action"`
}

type reqTemplate struct {
	Name       string         `json:"name"`
	Language   *reqLanguage   `json:"language"`
	Components []reqComponent `json:"components"`
}

type reqLanguage struct {
	Code   string `json:"code"`
	Policy string `json:"policy"`
}

type reqComponent struct {
	Type       string     `json:"type"`
	SubType    string     `json:"sub_type"`
	Index      string     `json:"index"`
	Parameters []reqParam `json:"parameters"`
}

type reqParam struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	Payload  *string         `json:"payload"`
	Image    *reqMedia       `json:"image"`
	Video    *reqMedia       `json:"video"`
	Document *reqMedia       `json:"document"`
	Currency json.RawMessage `json:"currency"`
	DateTime json.RawMessage `json:"date_time"`
}

// apiError is one error answer: Meta's code and the details.
type apiError struct {
	status  int
	code    int
	title   string
	details string
}

func (e *apiError) Error() string { return fmt.Sprintf("(#%d) %s: %s", e.code, e.title, e.details) }

func invalidParam(format string, args ...any) *apiError {
	return &apiError{400, 100, "Invalid parameter", fmt.Sprintf(format, args...)}
}

func missing(format string, args ...any) *apiError {
	return &apiError{400, 131008, "Required parameter is missing", fmt.Sprintf(format, args...)}
}

func notValid(format string, args ...any) *apiError {
	return &apiError{400, 131009, "Parameter value is not valid", fmt.Sprintf(format, args...)}
}

// decode reads a request body strictly.
func decode(body []byte) (*reqMessage, *apiError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var m reqMessage
	if err := dec.Decode(&m); err != nil {
		return nil, invalidParam("the body is not a valid message: %v", err)
	}
	if dec.More() {
		return nil, invalidParam("the body holds more than one JSON value")
	}
	return &m, nil
}

// checkMessage applies the reference's rules to a message.
func checkMessage(m *reqMessage) *apiError {
	if m.MessagingProduct != "whatsapp" {
		return missing("messaging_product must be whatsapp")
	}
	if m.RecipientType != nil && *m.RecipientType != "individual" {
		return notValid("recipient_type must be individual")
	}
	to := strings.TrimPrefix(m.To, "+")
	if to == "" {
		return missing("to is required")
	}
	if len(to) < 7 || len(to) > 15 || strings.Trim(to, "0123456789") != "" {
		return notValid("to must be a phone number of 7 to 15 digits")
	}
	if m.BizOpaqueCallbackData != nil && utf8.RuneCountInString(*m.BizOpaqueCallbackData) > 512 {
		return notValid("biz_opaque_callback_data is at most 512 characters")
	}
	objects := map[string]bool{
		"text": m.Text != nil, "image": m.Image != nil, "video": m.Video != nil, "document": m.Document != nil,
		"interactive": m.Interactive != nil, "template": m.Template != nil,
	}
	if m.Type == "" {
		m.Type = "text"
	}
	present, known := objects[m.Type]
	if !known {
		return &apiError{400, 131051, "Unsupported message type", fmt.Sprintf("message type %q is not simulated", m.Type)}
	}
	if !present {
		return missing("a message of type %s needs the %s object", m.Type, m.Type)
	}
	for name, has := range objects {
		if has && name != m.Type {
			return invalidParam("a message of type %s cannot carry a %s object", m.Type, name)
		}
	}
	switch m.Type {
	case "text":
		return checkText("text.body", m.Text.Body, 4096)
	case "image", "video":
		return checkMedia(m.Type, mediaOf(m), false)
	case "document":
		return checkMedia("document", m.Document, true)
	case "interactive":
		return checkInteractive(m.Interactive)
	}
	return checkTemplate(m.Template)
}

func mediaOf(m *reqMessage) *reqMedia {
	if m.Image != nil {
		return m.Image
	}
	return m.Video
}

func checkText(field, s string, max int) *apiError {
	if strings.TrimSpace(s) == "" {
		return missing("%s is required", field)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return notValid("%s is at most %d characters, got %d", field, max, n)
	}
	return nil
}

func checkLink(field, s string) *apiError {
	if s == "" {
		return missing("%s is required", field)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return notValid("%s must be an http(s) URL", field)
	}
	return nil
}

func checkMedia(field string, m *reqMedia, document bool) *apiError {
	if m.ID != "" {
		return notValid("%s.id: uploaded media are not simulated, use link", field)
	}
	if err := checkLink(field+".link", m.Link); err != nil {
		return err
	}
	if m.Caption != nil {
		if err := checkText(field+".caption", *m.Caption, 1024); err != nil {
			return err
		}
	}
	if m.Filename != nil && !document {
		return invalidParam("%s.filename is for documents only", field)
	}
	return nil
}

// checkHeader checks a header of the given allowed types.
func checkHeader(field string, h *reqHeader, allowed ...string) *apiError {
	ok := false
	for _, a := range allowed {
		ok = ok || h.Type == a
	}
	if !ok {
		return notValid("%s.type must be one of %s", field, strings.Join(allowed, ", "))
	}
	set := 0
	for _, p := range []bool{h.Text != "", h.Image != nil, h.Video != nil, h.Document != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return invalidParam("%s carries exactly the object of its type", field)
	}
	switch h.Type {
	case "text":
		return checkText(field+".text", h.Text, 60)
	case "image":
		if h.Image == nil {
			return missing("%s.image is required", field)
		}
		return checkMedia(field+".image", h.Image, false)
	case "video":
		if h.Video == nil {
			return missing("%s.video is required", field)
		}
		return checkMedia(field+".video", h.Video, false)
	default:
		if h.Document == nil {
			return missing("%s.document is required", field)
		}
		return checkMedia(field+".document", h.Document, true)
	}
}

func checkInteractive(in *reqInteractive) *apiError {
	if in.Action == nil {
		return missing("interactive.action is required")
	}
	if in.Footer != nil {
		if err := checkText("interactive.footer.text", in.Footer.Text, 60); err != nil {
			return err
		}
	}
	bodyMax := 1024
	if in.Type == "list" {
		bodyMax = 4096
	}
	if in.Body == nil {
		return missing("interactive.body is required")
	}
	if err := checkText("interactive.body.text", in.Body.Text, bodyMax); err != nil {
		return err
	}
	a := in.Action
	switch in.Type {
	case "button":
		if in.Header != nil {
			if err := checkHeader("interactive.header", in.Header, "text", "image", "video", "document"); err != nil {
				return err
			}
		}
		return checkReplyButtons(a)
	case "list":
		if in.Header != nil {
			if err := checkHeader("interactive.header", in.Header, "text"); err != nil {
				return err
			}
		}
		return checkList(a)
	case "cta_url":
		if in.Header != nil {
			if err := checkHeader("interactive.header", in.Header, "text", "image", "video", "document"); err != nil {
				return err
			}
		}
		return checkCTA("interactive.action", a)
	case "carousel":
		if in.Header != nil || in.Footer != nil {
			return invalidParam("a carousel message has no header or footer")
		}
		return checkCards(a)
	case "":
		return missing("interactive.type is required")
	}
	return &apiError{400, 131051, "Unsupported message type", fmt.Sprintf("interactive type %q is not simulated", in.Type)}
}

func checkReplyButtons(a *reqAction) *apiError {
	if len(a.Buttons) < 1 || len(a.Buttons) > 3 {
		return notValid("interactive.action.buttons holds 1 to 3 buttons, got %d", len(a.Buttons))
	}
	if a.Name != "" || a.Parameters != nil || a.Button != "" || a.Sections != nil || a.Cards != nil {
		return invalidParam("a button message's action holds buttons only")
	}
	ids, titles := map[string]bool{}, map[string]bool{}
	for i, b := range a.Buttons {
		f := "interactive.action.buttons[" + strconv.Itoa(i) + "]"
		if b.Type != "reply" || b.Reply == nil || b.QuickReply != nil {
			return notValid("%s must be of type reply with a reply object", f)
		}
		if err := checkRow(f+".reply", *b.Reply, 256, 20, false); err != nil {
			return err
		}
		if ids[b.Reply.ID] || titles[b.Reply.Title] {
			return notValid("%s: button ids and titles must be unique", f)
		}
		ids[b.Reply.ID], titles[b.Reply.Title] = true, true
	}
	return nil
}

func checkRow(field string, r reqReply, maxID, maxTitle int, description bool) *apiError {
	if r.ID == "" || strings.TrimSpace(r.ID) != r.ID || len(r.ID) > maxID {
		return notValid("%s.id must be 1 to %d characters without leading or trailing spaces", field, maxID)
	}
	if err := checkText(field+".title", r.Title, maxTitle); err != nil {
		return err
	}
	if r.Description != "" {
		if !description {
			return invalidParam("%s has no description", field)
		}
		if utf8.RuneCountInString(r.Description) > 72 {
			return notValid("%s.description is at most 72 characters", field)
		}
	}
	return nil
}

func checkList(a *reqAction) *apiError {
	if err := checkText("interactive.action.button", a.Button, 20); err != nil {
		return err
	}
	if a.Name != "" || a.Parameters != nil || a.Buttons != nil || a.Cards != nil {
		return invalidParam("a list message's action holds button and sections only")
	}
	if len(a.Sections) < 1 || len(a.Sections) > 10 {
		return notValid("interactive.action.sections holds 1 to 10 sections")
	}
	rows, ids := 0, map[string]bool{}
	for i, s := range a.Sections {
		f := "interactive.action.sections[" + strconv.Itoa(i) + "]"
		if len(a.Sections) > 1 || s.Title != "" {
			if err := checkText(f+".title", s.Title, 24); err != nil {
				return err
			}
		}
		if len(s.Rows) == 0 {
			return missing("%s.rows is required", f)
		}
		for j, r := range s.Rows {
			rf := f + ".rows[" + strconv.Itoa(j) + "]"
			if err := checkRow(rf, r, 200, 24, true); err != nil {
				return err
			}
			if ids[r.ID] {
				return notValid("%s.id must be unique", rf)
			}
			ids[r.ID] = true
			rows++
		}
	}
	if rows > 10 {
		return notValid("a list holds at most 10 rows, got %d", rows)
	}
	return nil
}

func checkCTA(field string, a *reqAction) *apiError {
	if a.Name != "cta_url" {
		return notValid("%s.name must be cta_url", field)
	}
	if a.Buttons != nil || a.Button != "" || a.Sections != nil || a.Cards != nil {
		return invalidParam("%s of a URL button holds name and parameters only", field)
	}
	if a.Parameters == nil {
		return missing("%s.parameters is required", field)
	}
	if err := checkText(field+".parameters.display_text", a.Parameters.DisplayText, 20); err != nil {
		return err
	}
	return checkLink(field+".parameters.url", a.Parameters.URL)
}

func checkCards(a *reqAction) *apiError {
	if a.Name != "" || a.Parameters != nil || a.Buttons != nil || a.Button != "" || a.Sections != nil {
		return invalidParam("a carousel message's action holds cards only")
	}
	if len(a.Cards) < 2 || len(a.Cards) > 10 {
		return notValid("interactive.action.cards holds 2 to 10 cards, got %d", len(a.Cards))
	}
	kind := ""
	for i, c := range a.Cards {
		f := "interactive.action.cards[" + strconv.Itoa(i) + "]"
		if c.CardIndex == nil || *c.CardIndex != i {
			return notValid("%s.card_index must be %d", f, i)
		}
		if c.Type != "cta_url" {
			return notValid("%s.type must be cta_url", f)
		}
		if c.Header == nil {
			return missing("%s.header is required", f)
		}
		if err := checkHeader(f+".header", c.Header, "image", "video"); err != nil {
			return err
		}
		if c.Body != nil {
			if err := checkText(f+".body.text", c.Body.Text, 160); err != nil {
				return err
			}
		}
		if c.Action == nil {
			return missing("%s.action is required", f)
		}
		k := "url"
		if c.Action.Buttons != nil {
			k = "quick_reply"
			if len(c.Action.Buttons) > 2 {
				return notValid("%s.action holds at most 2 quick-reply buttons", f)
			}
			for j, b := range c.Action.Buttons {
				if b.Type != "quick_reply" || b.QuickReply == nil || b.Reply != nil {
					return notValid("%s.action.buttons[%d] must be of type quick_reply", f, j)
				}
				if err := checkRow(fmt.Sprintf("%s.action.buttons[%d].quick_reply", f, j), *b.QuickReply, 256, 20, false); err != nil {
					return err
				}
			}
			k += strconv.Itoa(len(c.Action.Buttons))
		} else if err := checkCTA(f+".action", c.Action); err != nil {
			return err
		}
		if kind != "" && k != kind {
			return notValid("every card of a carousel has the same buttons")
		}
		kind = k
	}
	return nil
}

func checkTemplate(t *reqTemplate) *apiError {
	if t.Name == "" {
		return missing("template.name is required")
	}
	if t.Language == nil || t.Language.Code == "" {
		return missing("template.language.code is required")
	}
	if t.Language.Policy != "" && t.Language.Policy != "deterministic" {
		return notValid("template.language.policy must be deterministic")
	}
	for i, c := range t.Components {
		f := "template.components[" + strconv.Itoa(i) + "]"
		switch c.Type {
		case "header", "body":
			if c.SubType != "" || c.Index != "" {
				return invalidParam("%s: sub_type and index are for buttons", f)
			}
		case "button":
			if c.SubType != "quick_reply" && c.SubType != "url" {
				return notValid("%s.sub_type must be quick_reply or url", f)
			}
			if n, err := strconv.Atoi(c.Index); err != nil || n < 0 || n > 9 {
				return notValid("%s.index must be 0 to 9", f)
			}
			if len(c.Parameters) != 1 {
				return notValid("%s holds one parameter", f)
			}
		default:
			return notValid("%s.type must be header, body or button", f)
		}
		for j, p := range c.Parameters {
			if err := checkParam(fmt.Sprintf("%s.parameters[%d]", f, j), c.Type, c.SubType, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkParam(f, component, subType string, p reqParam) *apiError {
	switch {
	case component == "button" && subType == "quick_reply":
		if p.Type != "payload" || p.Payload == nil || *p.Payload == "" {
			return notValid("%s must be a payload", f)
		}
	case component == "button":
		if p.Type != "text" || p.Text == nil {
			return notValid("%s must be a text", f)
		}
	case p.Type == "text":
		if p.Text == nil {
			return missing("%s.text is required", f)
		}
		return checkText(f+".text", *p.Text, 32768)
	case p.Type == "currency" || p.Type == "date_time":
		if len(p.Currency) == 0 && len(p.DateTime) == 0 {
			return missing("%s needs its %s object", f, p.Type)
		}
	case component == "header" && p.Type == "image" && p.Image != nil:
		return checkMedia(f+".image", p.Image, false)
	case component == "header" && p.Type == "video" && p.Video != nil:
		return checkMedia(f+".video", p.Video, false)
	case component == "header" && p.Type == "document" && p.Document != nil:
		return checkMedia(f+".document", p.Document, true)
	default:
		return notValid("%s: type %q does not fit a %s component", f, p.Type, component)
	}
	return nil
}
