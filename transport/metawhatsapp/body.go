package metawhatsapp

import (
	"errors"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// The JSON of a message sent to POST /{phone number id}/messages: the
// Message schema of the reference, with only the fields Herald uses.
type outMessage struct {
	MessagingProduct string          `json:"messaging_product"`
	RecipientType    string          `json:"recipient_type"`
	To               string          `json:"to"`
	Type             string          `json:"type"`
	Text             *outText        `json:"text,omitempty"`
	Image            *outMedia       `json:"image,omitempty"`
	Video            *outMedia       `json:"video,omitempty"`
	Document         *outMedia       `json:"document,omitempty"`
	Interactive      *outInteractive `json:"interactive,omitempty"`
	Template         *outTemplate    `json:"template,omitempty"`
	// BizOpaqueCallbackData is Herald's message id, repeated by Meta in
	// the message's status webhooks.
	BizOpaqueCallbackData string `json:"biz_opaque_callback_data,omitempty"`
}

type outText struct {
	Body       string `json:"body"`
	PreviewURL bool   `json:"preview_url,omitempty"`
}

type outMedia struct {
	Link     string `json:"link"`
	Caption  string `json:"caption,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type outInteractive struct {
	Type   string     `json:"type"`
	Header *outHeader `json:"header,omitempty"`
	Body   *outBody   `json:"body,omitempty"`
	Action outAction  `json:"action"`
}

type outHeader struct {
	Type     string    `json:"type"`
	Image    *outMedia `json:"image,omitempty"`
	Video    *outMedia `json:"video,omitempty"`
	Document *outMedia `json:"document,omitempty"`
}

type outBody struct {
	Text string `json:"text"`
}

// outAction is the action of every interactive type Herald sends: cta_url
// (Name, Parameters), button (Buttons), list (Button, Sections), carousel
// (Cards).
type outAction struct {
	Name       string       `json:"name,omitempty"`
	Parameters *outCTA      `json:"parameters,omitempty"`
	Buttons    []outButton  `json:"buttons,omitempty"`
	Button     string       `json:"button,omitempty"`
	Sections   []outSection `json:"sections,omitempty"`
	Cards      []outCard    `json:"cards,omitempty"`
}

type outCTA struct {
	DisplayText string `json:"display_text"`
	URL         string `json:"url"`
}

type outButton struct {
	Type  string   `json:"type"`
	Reply outReply `json:"reply"`
}

type outReply struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type outSection struct {
	Rows []outReply `json:"rows"`
}

type outCard struct {
	CardIndex int       `json:"card_index"`
	Type      string    `json:"type"`
	Header    outHeader `json:"header"`
	Body      *outBody  `json:"body,omitempty"`
	Action    outAction `json:"action"`
}

type outTemplate struct {
	Name       string         `json:"name"`
	Language   outLanguage    `json:"language"`
	Components []outComponent `json:"components,omitempty"`
}

type outLanguage struct {
	Code string `json:"code"`
}

type outComponent struct {
	Type       string     `json:"type"`
	SubType    string     `json:"sub_type,omitempty"`
	Index      string     `json:"index,omitempty"`
	Parameters []outParam `json:"parameters"`
}

type outParam struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	Payload  string    `json:"payload,omitempty"`
	Image    *outMedia `json:"image,omitempty"`
	Video    *outMedia `json:"video,omitempty"`
	Document *outMedia `json:"document,omitempty"`
}

// DefaultListButton is the label of a survey list's button when the
// configuration has no buttonText.
const DefaultListButton = "Options"

// buildMessage maps m to the message WhatsApp is sent. An error is a
// *delivery.SendError: a message the channel cannot carry.
func buildMessage(m delivery.ChatSend) (*outMessage, error) {
	out := &outMessage{
		MessagingProduct:      "whatsapp",
		RecipientType:         "individual",
		To:                    m.To,
		BizOpaqueCallbackData: m.MessageID.String(),
	}
	c := m.Config
	if c.ProviderTemplate != nil {
		out.Type = "template"
		out.Template = buildTemplate(m)
		return out, nil
	}
	switch m.Type {
	case messaging.TypeSimpleText:
		out.Type = "text"
		out.Text = &outText{Body: m.Text, PreviewURL: hasLink(m.Text)}
	case messaging.TypeImageOnly:
		out.Type = "image"
		out.Image = &outMedia{Link: c.ImageURL, Caption: m.Text}
	case messaging.TypeButtonPlusText:
		out.Type = "interactive"
		out.Interactive = ctaURL(nil, m.Text, c.ButtonText, c.ButtonURL)
	case messaging.TypeImagePlusText:
		out.Type = "interactive"
		out.Interactive = ctaURL(&outHeader{Type: "image", Image: &outMedia{Link: c.ImageURL}}, m.Text, c.ButtonText, c.ButtonURL)
	case messaging.TypeCarousel:
		if strings.TrimSpace(m.Text) == "" {
			return nil, refuse("templateContent", "a WhatsApp carousel needs a text above its cards")
		}
		out.Type = "interactive"
		out.Interactive = carousel(m.Text, c.Items)
	case messaging.TypeSurvey:
		out.Type = "interactive"
		out.Interactive = survey(m.MessageID, m.Text, c)
	case messaging.TypeVideo:
		if c.ButtonText == "" {
			out.Type = "video"
			out.Video = &outMedia{Link: c.VideoURL, Caption: m.Text}
			break
		}
		if strings.TrimSpace(m.Text) == "" {
			return nil, refuse("templateContent", "a WhatsApp video with a button needs a text")
		}
		out.Type = "interactive"
		out.Interactive = ctaURL(&outHeader{Type: "video", Video: &outMedia{Link: c.VideoURL}}, m.Text, c.ButtonText, c.ButtonURL)
	case messaging.TypeFile:
		out.Type = "document"
		out.Document = &outMedia{Link: c.FileURL, Filename: c.FileName, Caption: m.Text}
	default:
		return nil, refuse("messageType", "message type "+strconv.Itoa(int(m.Type))+" is not a chat type")
	}
	return out, nil
}

func refuse(field, msg string) error {
	return delivery.ChatFailure(delivery.ReasonRejected, field, errors.New("metawhatsapp: "+msg))
}

func hasLink(s string) bool {
	return strings.Contains(s, "https://") || strings.Contains(s, "http://")
}

func ctaURL(h *outHeader, text, label, url string) *outInteractive {
	return &outInteractive{
		Type:   "cta_url",
		Header: h,
		Body:   &outBody{Text: text},
		Action: outAction{Name: "cta_url", Parameters: &outCTA{DisplayText: label, URL: url}},
	}
}

func carousel(text string, items []messaging.CarouselItem) *outInteractive {
	cards := make([]outCard, len(items))
	for i, it := range items {
		cards[i] = outCard{
			CardIndex: i,
			Type:      "cta_url",
			Header:    outHeader{Type: "image", Image: &outMedia{Link: it.ImageURL}},
			Body:      &outBody{Text: it.Title},
			Action:    outAction{Name: "cta_url", Parameters: &outCTA{DisplayText: it.ButtonText, URL: it.ButtonURL}},
		}
	}
	return &outInteractive{Type: "carousel", Body: &outBody{Text: text}, Action: outAction{Cards: cards}}
}

// survey is a reply-button message for up to three options, a list
// beyond. Each option's id is OptionID(message, index).
func survey(id messaging.ID, text string, c messaging.ChatConfig) *outInteractive {
	if len(c.Options) <= MaxButtonOptions {
		bs := make([]outButton, len(c.Options))
		for i, o := range c.Options {
			bs[i] = outButton{Type: "reply", Reply: outReply{ID: OptionID(id, i), Title: o.OptionText}}
		}
		return &outInteractive{Type: "button", Body: &outBody{Text: text}, Action: outAction{Buttons: bs}}
	}
	rows := make([]outReply, len(c.Options))
	for i, o := range c.Options {
		rows[i] = outReply{ID: OptionID(id, i), Title: o.OptionText}
	}
	label := c.ButtonText
	if label == "" {
		label = DefaultListButton
	}
	return &outInteractive{Type: "list", Body: &outBody{Text: text}, Action: outAction{Button: label, Sections: []outSection{{Rows: rows}}}}
}

// buildTemplate is the template message of m: its header media (the
// image, video or document of types 2, 4, 7 and 8), its body parameters
// in order, and for a survey one quick-reply payload per option.
func buildTemplate(m delivery.ChatSend) *outTemplate {
	c := m.Config
	pt := c.ProviderTemplate
	t := &outTemplate{Name: pt.Name, Language: outLanguage{Code: pt.Language}}
	var header *outParam
	switch m.Type {
	case messaging.TypeImageOnly, messaging.TypeImagePlusText:
		header = &outParam{Type: "image", Image: &outMedia{Link: c.ImageURL}}
	case messaging.TypeVideo:
		header = &outParam{Type: "video", Video: &outMedia{Link: c.VideoURL}}
	case messaging.TypeFile:
		header = &outParam{Type: "document", Document: &outMedia{Link: c.FileURL, Filename: c.FileName}}
	}
	if header != nil {
		t.Components = append(t.Components, outComponent{Type: "header", Parameters: []outParam{*header}})
	}
	if len(pt.Parameters) > 0 {
		ps := make([]outParam, len(pt.Parameters))
		for i, p := range pt.Parameters {
			ps[i] = outParam{Type: "text", Text: p}
		}
		t.Components = append(t.Components, outComponent{Type: "body", Parameters: ps})
	}
	if m.Type == messaging.TypeSurvey {
		for i := range c.Options {
			t.Components = append(t.Components, outComponent{
				Type: "button", SubType: "quick_reply", Index: strconv.Itoa(i),
				Parameters: []outParam{{Type: "payload", Payload: OptionID(m.MessageID, i)}},
			})
		}
	}
	return t
}

// OptionID is the id Herald gives option index of message id (a reply
// button's, a list row's or a quick reply's payload): WhatsApp sends it
// back with the person's pick.
func OptionID(id messaging.ID, index int) string {
	return id.String() + ":" + strconv.Itoa(index)
}

// ParseOptionID reads an OptionID; ok is false for any other id.
func ParseOptionID(s string) (id messaging.ID, index int, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return messaging.NilID, 0, false
	}
	id, err := messaging.ParseID(s[:i])
	if err != nil {
		return messaging.NilID, 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 0 || n > 99 {
		return messaging.NilID, 0, false
	}
	return id, n, true
}
