package vonagesim

import (
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/heraldhq/herald/transport/chatprovider"
)

// request is the body of POST /v1/messages as the reference describes it
// for the viber_service and whatsapp channels. Unknown fields are
// refused when decoding.
type request struct {
	MessageType    string       `json:"message_type"`
	Channel        string       `json:"channel"`
	To             string       `json:"to"`
	From           string       `json:"from"`
	ClientRef      string       `json:"client_ref"`
	WebhookURL     string       `json:"webhook_url"`
	WebhookVersion string       `json:"webhook_version"`
	Text           *string      `json:"text"`
	Image          *mediaObj    `json:"image"`
	Video          *mediaObj    `json:"video"`
	File           *mediaObj    `json:"file"`
	Audio          *mediaObj    `json:"audio"`
	Template       *templateObj `json:"template"`
	WhatsApp       *waSettings  `json:"whatsapp"`
	Custom         *customObj   `json:"custom"`
	Context        *ctxObj      `json:"context"`
	ViberService   *viberObj    `json:"viber_service"`
	TTL            *int         `json:"ttl"`
}

type mediaObj struct {
	URL      string  `json:"url"`
	Caption  *string `json:"caption"`
	Name     *string `json:"name"`
	ThumbURL *string `json:"thumb_url"`
}

type templateObj struct {
	Name       string   `json:"name"`
	Parameters []string `json:"parameters"`
}

type waSettings struct {
	Policy string `json:"policy"`
	Locale string `json:"locale"`
}

type ctxObj struct {
	MessageUUID string `json:"message_uuid"`
}

type viberObj struct {
	Category string       `json:"category"`
	TTL      *int         `json:"ttl"`
	Type     string       `json:"type"`
	Action   *viberAction `json:"action"`
	Duration *string      `json:"duration"`
	FileSize *string      `json:"file_size"`
}

type viberAction struct {
	URL  string `json:"url"`
	Text string `json:"text"`
}

// customObj is a WhatsApp message in WhatsApp's own form; the simulator
// knows its interactive messages.
type customObj struct {
	Type        string          `json:"type"`
	Interactive *interactiveObj `json:"interactive"`
}

type interactiveObj struct {
	Type   string     `json:"type"`
	Header *headerObj `json:"header"`
	Body   *textObj   `json:"body"`
	Footer *textObj   `json:"footer"`
	Action actionObj  `json:"action"`
}

type headerObj struct {
	Type  string   `json:"type"`
	Text  string   `json:"text"`
	Image *linkObj `json:"image"`
	Video *linkObj `json:"video"`
}

type linkObj struct {
	Link string `json:"link"`
}

type textObj struct {
	Text string `json:"text"`
}

type actionObj struct {
	Name       string       `json:"name"`
	Parameters *ctaObj      `json:"parameters"`
	Button     string       `json:"button"`
	Buttons    []buttonObj  `json:"buttons"`
	Sections   []sectionObj `json:"sections"`
}

type ctaObj struct {
	DisplayText string `json:"display_text"`
	URL         string `json:"url"`
}

type buttonObj struct {
	Type  string    `json:"type"`
	Reply *replyObj `json:"reply"`
}

type replyObj struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type sectionObj struct {
	Title string   `json:"title"`
	Rows  []rowObj `json:"rows"`
}

type rowObj struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// badParam is the first field found wrong.
type badParam struct {
	field, reason string
	missing       bool
}

func missing(field string) *badParam {
	return &badParam{field: field, reason: "is required", missing: true}
}

func invalid(field, reason string) *badParam { return &badParam{field: field, reason: reason} }

// runes counts the characters of s.
func runes(s string) int { return utf8.RuneCountInString(s) }

func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// validate checks r for channel (the simulator's); nil when valid.
func validate(channel string, r *request) *badParam {
	wire := "viber_service"
	if channel == chatprovider.ChannelWhatsApp {
		wire = "whatsapp"
	}
	switch {
	case r.MessageType == "":
		return missing("message_type")
	case r.Channel == "":
		return missing("channel")
	case r.To == "":
		return missing("to")
	case r.From == "":
		return missing("from")
	case r.Channel != wire:
		return invalid("channel", "this application sends on "+wire)
	}
	if n := len(r.To); n < 7 || n > 15 || !digits(r.To) {
		return invalid("to", "must be an E.164 number without + (7 to 15 digits)")
	}
	if runes(r.From) > 50 {
		return invalid("from", "must be at most 50 characters")
	}
	if runes(r.ClientRef) > 100 {
		return invalid("client_ref", "must be at most 100 characters")
	}
	if r.WebhookURL != "" && !webURL(r.WebhookURL) {
		return invalid("webhook_url", "must be an http or https URL")
	}
	if r.WebhookVersion != "" && r.WebhookVersion != "v1" && r.WebhookVersion != "v0.1" {
		return invalid("webhook_version", "must be v1 or v0.1")
	}
	if wire == "whatsapp" {
		return validateWhatsApp(r)
	}
	return validateViber(r)
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// only refuses the objects that do not belong to the message type.
func only(r *request, allowed ...string) *badParam {
	present := map[string]bool{
		"text": r.Text != nil, "image": r.Image != nil, "video": r.Video != nil, "file": r.File != nil,
		"audio": r.Audio != nil, "template": r.Template != nil, "whatsapp": r.WhatsApp != nil, "custom": r.Custom != nil,
	}
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, f := range []string{"text", "image", "video", "file", "audio", "template", "whatsapp", "custom"} {
		if present[f] && !ok[f] {
			return invalid(f, "does not belong to message_type "+r.MessageType)
		}
	}
	return nil
}

func validateViber(r *request) *badParam {
	if r.Context != nil || r.TTL != nil {
		if r.Context != nil {
			return invalid("context", "is not a field of viber_service messages")
		}
		return invalid("ttl", "a viber_service message takes its ttl in viber_service.ttl")
	}
	vs := r.ViberService
	if vs != nil {
		if vs.Category != "" && vs.Category != "transaction" && vs.Category != "promotion" {
			return invalid("viber_service.category", "must be transaction or promotion")
		}
		if vs.TTL != nil && (*vs.TTL < 30 || *vs.TTL > 259200) {
			return invalid("viber_service.ttl", "must be 30 to 259200 seconds")
		}
		if vs.Type != "" && vs.Type != "string" && vs.Type != "template" {
			return invalid("viber_service.type", "must be string or template")
		}
		if a := vs.Action; a != nil {
			if a.URL == "" || !webURL(a.URL) {
				return invalid("viber_service.action.url", "must be an http or https URL")
			}
			if a.Text == "" || runes(a.Text) > 30 {
				return invalid("viber_service.action.text", "must be 1 to 30 characters")
			}
		}
	}
	hasAction := vs != nil && vs.Action != nil
	if r.MessageType != "video" && vs != nil && (vs.Duration != nil || vs.FileSize != nil) {
		return invalid("viber_service.duration", "belongs to video messages only")
	}
	switch r.MessageType {
	case "text":
		if bad := only(r, "text"); bad != nil {
			return bad
		}
		if r.Text == nil || *r.Text == "" {
			return missing("text")
		}
		if runes(*r.Text) > 1000 {
			return invalid("text", "must be at most 1000 characters")
		}
	case "image":
		if bad := only(r, "image"); bad != nil {
			return bad
		}
		if r.Image == nil || r.Image.URL == "" {
			return missing("image.url")
		}
		if r.Image.Name != nil || r.Image.ThumbURL != nil {
			return invalid("image", "takes url and caption only")
		}
		if !webURL(r.Image.URL) {
			return invalid("image.url", "must be an http or https URL")
		}
	case "video":
		if bad := only(r, "video"); bad != nil {
			return bad
		}
		if r.Video == nil || r.Video.URL == "" {
			return missing("video.url")
		}
		if r.Video.Name != nil {
			return invalid("video.name", "is not a field of a video")
		}
		if r.Video.ThumbURL == nil || !webURL(*r.Video.ThumbURL) {
			return missing("video.thumb_url")
		}
		if r.Video.Caption != nil && runes(*r.Video.Caption) > 1000 {
			return invalid("video.caption", "must be at most 1000 characters")
		}
		if vs == nil || vs.Duration == nil {
			return missing("viber_service.duration")
		}
		if n, err := strconv.Atoi(*vs.Duration); err != nil || n < 1 || n > 600 {
			return invalid("viber_service.duration", "must be 1 to 600 seconds, as a string")
		}
		if vs.FileSize == nil {
			return missing("viber_service.file_size")
		}
		if n, err := strconv.Atoi(*vs.FileSize); err != nil || n < 1 || n > 200 {
			return invalid("viber_service.file_size", "must be 1 to 200 MB, as a string")
		}
	case "file":
		if bad := only(r, "file"); bad != nil {
			return bad
		}
		if r.File == nil || r.File.URL == "" {
			return missing("file.url")
		}
		if r.File.ThumbURL != nil {
			return invalid("file.thumb_url", "is not a field of a file")
		}
		if r.File.Name != nil && runes(*r.File.Name) > 25 {
			return invalid("file.name", "must be at most 25 characters")
		}
		if hasAction {
			return invalid("viber_service.action", "a file message carries no button")
		}
	default:
		return invalid("message_type", "viber_service messages are text, image, video or file")
	}
	return nil
}

func validateWhatsApp(r *request) *badParam {
	if r.ViberService != nil {
		return invalid("viber_service", "is not a field of whatsapp messages")
	}
	if r.TTL != nil {
		return invalid("ttl", "is not a field of these whatsapp messages")
	}
	switch r.MessageType {
	case "text":
		if bad := only(r, "text"); bad != nil {
			return bad
		}
		if r.Text == nil || *r.Text == "" {
			return missing("text")
		}
		if runes(*r.Text) > 4096 {
			return invalid("text", "must be at most 4096 characters")
		}
	case "image", "video", "file", "audio":
		if bad := only(r, r.MessageType); bad != nil {
			return bad
		}
		m := map[string]*mediaObj{"image": r.Image, "video": r.Video, "file": r.File, "audio": r.Audio}[r.MessageType]
		if m == nil || m.URL == "" {
			return missing(r.MessageType + ".url")
		}
		if !webURL(m.URL) {
			return invalid(r.MessageType+".url", "must be an http or https URL")
		}
		if m.ThumbURL != nil || (m.Name != nil && r.MessageType != "file") {
			return invalid(r.MessageType, "has a field that does not belong to it")
		}
		if m.Caption != nil && runes(*m.Caption) > 3000 {
			return invalid(r.MessageType+".caption", "must be at most 3000 characters")
		}
	case "template":
		if bad := only(r, "template", "whatsapp"); bad != nil {
			return bad
		}
		if r.Template == nil || r.Template.Name == "" {
			return missing("template.name")
		}
		if r.WhatsApp == nil || r.WhatsApp.Locale == "" {
			return missing("whatsapp.locale")
		}
		if r.WhatsApp.Policy != "" && r.WhatsApp.Policy != "deterministic" {
			return invalid("whatsapp.policy", "must be deterministic")
		}
	case "custom":
		if bad := only(r, "custom"); bad != nil {
			return bad
		}
		if r.Custom == nil {
			return missing("custom")
		}
		return validateCustom(r.Custom)
	default:
		return invalid("message_type", "whatsapp messages are text, image, audio, video, file, template or custom")
	}
	return nil
}

// validateCustom checks an interactive WhatsApp message: reply buttons,
// a list, or a call-to-action URL button.
func validateCustom(c *customObj) *badParam {
	if c.Type != "interactive" || c.Interactive == nil {
		return invalid("custom.type", "the simulator knows interactive custom messages only")
	}
	in := c.Interactive
	if in.Body == nil || in.Body.Text == "" {
		return missing("custom.interactive.body.text")
	}
	if runes(in.Body.Text) > 1024 {
		return invalid("custom.interactive.body.text", "must be at most 1024 characters")
	}
	a := in.Action
	switch in.Type {
	case "button":
		if n := len(a.Buttons); n < 1 || n > 3 {
			return invalid("custom.interactive.action.buttons", "must hold 1 to 3 buttons")
		}
		ids := map[string]bool{}
		for _, b := range a.Buttons {
			if b.Type != "reply" || b.Reply == nil {
				return invalid("custom.interactive.action.buttons.type", "must be reply")
			}
			if b.Reply.ID == "" || len(b.Reply.ID) > 256 || ids[b.Reply.ID] {
				return invalid("custom.interactive.action.buttons.reply.id", "must be 1 to 256 characters, unique")
			}
			ids[b.Reply.ID] = true
			if b.Reply.Title == "" || runes(b.Reply.Title) > 20 {
				return invalid("custom.interactive.action.buttons.reply.title", "must be 1 to 20 characters")
			}
		}
	case "list":
		if a.Button == "" || runes(a.Button) > 20 {
			return invalid("custom.interactive.action.button", "must be 1 to 20 characters")
		}
		if n := len(a.Sections); n < 1 || n > 10 {
			return invalid("custom.interactive.action.sections", "must hold 1 to 10 sections")
		}
		rows, ids := 0, map[string]bool{}
		for _, sec := range a.Sections {
			if len(a.Sections) > 1 && sec.Title == "" {
				return missing("custom.interactive.action.sections.title")
			}
			for _, row := range sec.Rows {
				rows++
				if row.ID == "" || len(row.ID) > 200 || ids[row.ID] {
					return invalid("custom.interactive.action.sections.rows.id", "must be 1 to 200 characters, unique")
				}
				ids[row.ID] = true
				if row.Title == "" || runes(row.Title) > 24 {
					return invalid("custom.interactive.action.sections.rows.title", "must be 1 to 24 characters")
				}
				if runes(row.Description) > 72 {
					return invalid("custom.interactive.action.sections.rows.description", "must be at most 72 characters")
				}
			}
		}
		if rows < 1 || rows > 10 {
			return invalid("custom.interactive.action.sections.rows", "must hold 1 to 10 rows in all")
		}
	case "cta_url":
		if a.Name != "cta_url" || a.Parameters == nil {
			return missing("custom.interactive.action.parameters")
		}
		if a.Parameters.DisplayText == "" || runes(a.Parameters.DisplayText) > 20 {
			return invalid("custom.interactive.action.parameters.display_text", "must be 1 to 20 characters")
		}
		if !webURL(a.Parameters.URL) {
			return invalid("custom.interactive.action.parameters.url", "must be an http or https URL")
		}
		if h := in.Header; h != nil {
			if h.Type == "image" && (h.Image == nil || !webURL(h.Image.Link)) {
				return invalid("custom.interactive.header.image.link", "must be an http or https URL")
			}
		}
	default:
		return invalid("custom.interactive.type", "must be button, list or cta_url")
	}
	return nil
}
