package vonage

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// sendRequest is the body of POST /v1/messages. Only the fields of the
// message's shape are set.
type sendRequest struct {
	MessageType    string        `json:"message_type"`
	Channel        string        `json:"channel"`
	To             string        `json:"to"`
	From           string        `json:"from"`
	ClientRef      string        `json:"client_ref,omitempty"`
	WebhookURL     string        `json:"webhook_url,omitempty"`
	WebhookVersion string        `json:"webhook_version,omitempty"`
	Text           string        `json:"text,omitempty"`
	Image          *media        `json:"image,omitempty"`
	Video          *media        `json:"video,omitempty"`
	File           *media        `json:"file,omitempty"`
	Template       *waTemplate   `json:"template,omitempty"`
	WhatsApp       *waSettings   `json:"whatsapp,omitempty"`
	Custom         *waCustom     `json:"custom,omitempty"`
	ViberService   *viberService `json:"viber_service,omitempty"`
}

// media is an image, video or file object.
type media struct {
	URL      string `json:"url"`
	Caption  string `json:"caption,omitempty"`
	Name     string `json:"name,omitempty"`
	ThumbURL string `json:"thumb_url,omitempty"`
}

// viberService is the viber_service object: TTL, the button (action),
// and a video's duration and size.
type viberService struct {
	Category string       `json:"category,omitempty"`
	TTL      int          `json:"ttl,omitempty"`
	Type     string       `json:"type,omitempty"`
	Action   *viberAction `json:"action,omitempty"`
	Duration string       `json:"duration,omitempty"`
	FileSize string       `json:"file_size,omitempty"`
}

// viberAction is the button of a Viber text, image or video message.
type viberAction struct {
	URL  string `json:"url"`
	Text string `json:"text"`
}

// waTemplate and waSettings make a WhatsApp template message.
type waTemplate struct {
	Name       string   `json:"name"`
	Parameters []string `json:"parameters,omitempty"`
}

type waSettings struct {
	Policy string `json:"policy,omitempty"`
	Locale string `json:"locale,omitempty"`
}

// waCustom is the custom object of a WhatsApp message: an interactive
// message in WhatsApp's own form, passed through by Vonage.
type waCustom struct {
	Type        string        `json:"type"`
	Interactive waInteractive `json:"interactive"`
}

type waInteractive struct {
	Type   string    `json:"type"` // button, list, cta_url
	Header *waHeader `json:"header,omitempty"`
	Body   waText    `json:"body"`
	Action waAction  `json:"action"`
}

type waHeader struct {
	Type  string  `json:"type"`
	Image *waLink `json:"image,omitempty"`
}

type waLink struct {
	Link string `json:"link"`
}

type waText struct {
	Text string `json:"text"`
}

type waAction struct {
	Name       string      `json:"name,omitempty"`
	Parameters *waCTA      `json:"parameters,omitempty"`
	Button     string      `json:"button,omitempty"`
	Buttons    []waButton  `json:"buttons,omitempty"`
	Sections   []waSection `json:"sections,omitempty"`
}

type waCTA struct {
	DisplayText string `json:"display_text"`
	URL         string `json:"url"`
}

type waButton struct {
	Type  string  `json:"type"`
	Reply waReply `json:"reply"`
}

type waReply struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type waSection struct {
	Title string  `json:"title,omitempty"`
	Rows  []waRow `json:"rows"`
}

type waRow struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// The bounds of viber_service.ttl, in seconds.
const (
	viberTTLMin = 30
	viberTTLMax = 259200
)

// ListButtonText is the label of the button that opens a WhatsApp list
// (a survey of more than three options, or with a long option).
const ListButtonText = "Choose"

// OptionID is the id of a survey option as sent: the message id and the
// option's 0-based index, so that a reply names both.
func OptionID(id messaging.ID, index int) string {
	return id.String() + ":" + strconv.Itoa(index)
}

// ParseOptionID reads an id made by OptionID.
func ParseOptionID(s string) (messaging.ID, int, bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return messaging.ID{}, 0, false
	}
	id, err := messaging.ParseID(s[:i])
	if err != nil {
		return messaging.ID{}, 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 0 {
		return messaging.ID{}, 0, false
	}
	return id, n, true
}

// buildRequest maps m to the body of its send over channel. callbackURL,
// when set, is sent as the message's status webhook.
func buildRequest(channel string, m delivery.ChatSend, callbackURL string) (sendRequest, error) {
	r := sendRequest{
		Channel:   wireChannel(channel),
		To:        m.To,
		From:      m.Sender,
		ClientRef: m.MessageID.String(),
	}
	if callbackURL != "" {
		r.WebhookURL, r.WebhookVersion = callbackURL, "v1"
	}
	c := m.Config
	if channel == chatprovider.ChannelWhatsApp {
		return r, whatsAppShape(&r, m, c)
	}
	viberShape(&r, m, c)
	return r, nil
}

// viberShape fills r for a Viber message (Carries checked it).
func viberShape(r *sendRequest, m delivery.ChatSend, c messaging.ChatConfig) {
	vs := &viberService{}
	if m.TTL > 0 {
		vs.TTL = clamp(int(m.TTL/time.Second), viberTTLMin, viberTTLMax)
	}
	switch m.Type {
	case messaging.TypeButtonPlusText, messaging.TypeImagePlusText, messaging.TypeVideo:
		if c.ButtonText != "" && c.ButtonURL != "" {
			vs.Action = &viberAction{URL: c.ButtonURL, Text: c.ButtonText}
		}
	}
	switch m.Type {
	case messaging.TypeImageOnly, messaging.TypeImagePlusText:
		r.MessageType = "image"
		r.Image = &media{URL: c.ImageURL, Caption: m.Text}
	case messaging.TypeVideo:
		r.MessageType = "video"
		r.Video = &media{URL: c.VideoURL, Caption: m.Text, ThumbURL: c.ThumbnailURL}
		vs.Duration = strconv.Itoa(c.Duration)
		vs.FileSize = strconv.FormatInt(megabytes(c.FileSize), 10)
	case messaging.TypeFile:
		r.MessageType = "file"
		r.File = &media{URL: c.FileURL, Name: c.FileName, Caption: m.Text}
	default: // text, button + text
		r.MessageType = "text"
		r.Text = m.Text
	}
	if *vs != (viberService{}) {
		r.ViberService = vs
	}
}

// whatsAppShape fills r for a WhatsApp message (Carries checked it).
func whatsAppShape(r *sendRequest, m delivery.ChatSend, c messaging.ChatConfig) error {
	if pt := c.ProviderTemplate; pt != nil {
		r.MessageType = "template"
		r.Template = &waTemplate{Name: pt.Name, Parameters: pt.Parameters}
		r.WhatsApp = &waSettings{Policy: "deterministic", Locale: pt.Language}
		return nil
	}
	switch m.Type {
	case messaging.TypeSimpleText:
		r.MessageType, r.Text = "text", m.Text
	case messaging.TypeImageOnly:
		r.MessageType = "image"
		r.Image = &media{URL: c.ImageURL, Caption: m.Text}
	case messaging.TypeVideo:
		r.MessageType = "video"
		r.Video = &media{URL: c.VideoURL, Caption: m.Text}
	case messaging.TypeFile:
		r.MessageType = "file"
		r.File = &media{URL: c.FileURL, Caption: m.Text, Name: c.FileName}
	case messaging.TypeButtonPlusText, messaging.TypeImagePlusText:
		in := waInteractive{
			Type:   "cta_url",
			Body:   waText{Text: m.Text},
			Action: waAction{Name: "cta_url", Parameters: &waCTA{DisplayText: c.ButtonText, URL: c.ButtonURL}},
		}
		if m.Type == messaging.TypeImagePlusText {
			in.Header = &waHeader{Type: "image", Image: &waLink{Link: c.ImageURL}}
		}
		r.MessageType = "custom"
		r.Custom = &waCustom{Type: "interactive", Interactive: in}
	case messaging.TypeSurvey:
		r.MessageType = "custom"
		r.Custom = &waCustom{Type: "interactive", Interactive: surveyInteractive(m.MessageID, m.Text, c.Options)}
	default:
		return fmt.Errorf("vonage: whatsapp cannot carry message type %d", m.Type)
	}
	return nil
}

// surveyInteractive is a survey as reply buttons (at most three options,
// each short enough) or else as a list of one section.
func surveyInteractive(id messaging.ID, question string, opts []messaging.SurveyOption) waInteractive {
	buttons := len(opts) <= waReplyButtonsMax
	for _, o := range opts {
		if utf8.RuneCountInString(o.OptionText) > waButtonTitleMax {
			buttons = false
		}
	}
	in := waInteractive{Body: waText{Text: question}}
	if buttons {
		in.Type = "button"
		for i, o := range opts {
			in.Action.Buttons = append(in.Action.Buttons, waButton{Type: "reply", Reply: waReply{ID: OptionID(id, i), Title: o.OptionText}})
		}
		return in
	}
	in.Type = "list"
	in.Action.Button = ListButtonText
	sec := waSection{}
	for i, o := range opts {
		sec.Rows = append(sec.Rows, waRow{ID: OptionID(id, i), Title: o.OptionText})
	}
	in.Action.Sections = []waSection{sec}
	return in
}

func clamp(v, lo, hi int) int {
	return min(max(v, lo), hi)
}
