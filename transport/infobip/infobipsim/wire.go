package infobipsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// The request as Infobip's reference describes it; unknown fields are
// refused.
type request struct {
	Messages []message      `json:"messages"`
	Options  map[string]any `json:"options"`
}

type message struct {
	Sender       string        `json:"sender"`
	Destinations []destination `json:"destinations"`
	Content      *content      `json:"content"`
	Options      *options      `json:"options"`
	Webhooks     *webhooks     `json:"webhooks"`
}

type destination struct {
	To        string `json:"to"`
	MessageID string `json:"messageId"`
}

type content struct {
	Type                  string   `json:"type"`
	Text                  *string  `json:"text"`
	MediaURL              *string  `json:"mediaUrl"`
	ShowImageInFullScreen *bool    `json:"showImageInFullScreen"`
	Button                *button  `json:"button"`
	MediaDuration         *string  `json:"mediaDuration"`
	ThumbnailURL          *string  `json:"thumbnailUrl"`
	ButtonTitle           *string  `json:"buttonTitle"`
	FileName              *string  `json:"fileName"`
	Options               []string `json:"options"`
	Cards                 []card   `json:"cards"`
}

type button struct {
	Title  string `json:"title"`
	Action string `json:"action"`
}

type card struct {
	Text     string   `json:"text"`
	MediaURL string   `json:"mediaUrl"`
	Buttons  []button `json:"buttons"`
}

type options struct {
	Platform            map[string]any  `json:"platform"`
	ValidityPeriod      *validityPeriod `json:"validityPeriod"`
	DeliveryTimeWindow  map[string]any  `json:"deliveryTimeWindow"`
	CampaignReferenceID string          `json:"campaignReferenceId"`
	SMSFailover         map[string]any  `json:"smsFailover"`
	TrackingData        string          `json:"trackingData"`
	Label               string          `json:"label"`
	ApplySessionRate    *bool           `json:"applySessionRate"`
	ToPrimaryDeviceOnly *bool           `json:"toPrimaryDeviceOnly"`
}

type validityPeriod struct {
	Amount   int    `json:"amount"`
	TimeUnit string `json:"timeUnit"`
}

type webhooks struct {
	Delivery     *delivery `json:"delivery"`
	ContentType  string    `json:"contentType"`
	CallbackData string    `json:"callbackData"`
	Seen         *seen     `json:"seen"`
}

type delivery struct {
	URL                             string `json:"url"`
	IntermediateReport              *bool  `json:"intermediateReport"`
	Notify                          *bool  `json:"notify"`
	ReceiveTriggeredFailoverReports *bool  `json:"receiveTriggeredFailoverReports"`
}

type seen struct {
	URL string `json:"url"`
}

type status struct {
	GroupID     int    `json:"groupId"`
	GroupName   string `json:"groupName"`
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

type reportError struct {
	GroupID     int    `json:"groupId"`
	GroupName   string `json:"groupName"`
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Permanent   bool   `json:"permanent"`
}

type answer struct {
	MessageID   string `json:"messageId"`
	Status      status `json:"status"`
	Destination string `json:"destination"`
}

type sendResponse struct {
	BulkID   string   `json:"bulkId"`
	Messages []answer `json:"messages"`
}

func statusPending() status {
	return status{GroupID: 1, GroupName: "PENDING", ID: 7, Name: "PENDING_ENROUTE", Description: "Message sent to next instance"}
}

func statusDuplicate() status {
	return status{GroupID: 5, GroupName: "REJECTED", ID: 23, Name: "REJECTED_DUPLICATE_MESSAGE_ID", Description: "Duplicate message id"}
}

// phoneNumber reports whether s is 7 to 15 digits.
func phoneNumber(s string) bool {
	if len(s) < 7 || len(s) > 15 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isoDuration reports whether s is an ISO 8601 duration of hours,
// minutes and seconds (PT1H2M3S, PT95S).
func isoDuration(s string) bool {
	return regexp.MustCompile(`^PT([0-9]+H)?([0-9]+M)?([0-9]+S)?$`).MatchString(s) && s != "PT"
}

// fileType reports whether ext is a file type Infobip's reference lists
// for FILE content.
func fileType(ext string) bool {
	switch ext {
	case "doc", "docx", "rtf", "dot", "dotx", "odt", "odf", "fodt", "txt", "info", "pdf", "xps", "pdax", "eps",
		"xls", "xlsx", "ods", "fods", "csv", "xlsm", "xltx":
		return true
	}
	return false
}

// decode reads a request body strictly and returns its violations.
func decode(body []byte) (request, []violation) {
	var req request
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		return req, []violation{{Property: "body", Violation: err.Error()}}
	}
	var vs []violation
	add := func(p, format string, args ...any) {
		vs = append(vs, violation{Property: p, Violation: fmt.Sprintf(format, args...)})
	}
	if len(req.Messages) == 0 {
		add("messages", "must not be empty")
	}
	for i, m := range req.Messages {
		p := fmt.Sprintf("messages[%d]", i)
		if strings.TrimSpace(m.Sender) == "" {
			add(p+".sender", "must not be blank")
		}
		if len(m.Destinations) == 0 {
			add(p+".destinations", "must not be empty")
		}
		for j, dst := range m.Destinations {
			if !phoneNumber(dst.To) {
				add(fmt.Sprintf("%s.destinations[%d].to", p, j), "must be 7 to 15 digits")
			}
			if len(dst.MessageID) > 200 {
				add(fmt.Sprintf("%s.destinations[%d].messageId", p, j), "must be at most 200 characters")
			}
		}
		if m.Content == nil {
			add(p+".content", "must not be null")
		} else {
			checkContent(p+".content", m.Content, add)
		}
		if o := m.Options; o != nil {
			if v := o.ValidityPeriod; v != nil {
				if v.Amount <= 0 {
					add(p+".options.validityPeriod.amount", "must be positive")
				}
				switch v.TimeUnit {
				case "", "SECONDS", "MINUTES", "HOURS":
				default:
					add(p+".options.validityPeriod.timeUnit", "must be SECONDS, MINUTES or HOURS")
				}
			}
			switch o.Label {
			case "", "PROMOTIONAL", "TRANSACTIONAL":
			default:
				add(p+".options.label", "must be PROMOTIONAL or TRANSACTIONAL")
			}
		}
		if w := m.Webhooks; w != nil {
			if len(w.CallbackData) > 4000 {
				add(p+".webhooks.callbackData", "must be at most 4000 characters")
			}
			if w.Delivery != nil && w.Delivery.URL != "" && !httpURL(w.Delivery.URL) {
				add(p+".webhooks.delivery.url", "must be an http or https URL")
			}
			if w.Seen != nil && w.Seen.URL != "" && !httpURL(w.Seen.URL) {
				add(p+".webhooks.seen.url", "must be an http or https URL")
			}
		}
	}
	return req, vs
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func ext(s string) string {
	if u, err := url.Parse(s); err == nil {
		s = u.Path
	}
	return strings.ToLower(strings.TrimPrefix(path.Ext(s), "."))
}

// checkContent checks a content object against its type: the fields the
// type requires, and no field of another type.
func checkContent(p string, c *content, add func(p, format string, args ...any)) {
	set := map[string]bool{
		"text": c.Text != nil, "mediaUrl": c.MediaURL != nil, "showImageInFullScreen": c.ShowImageInFullScreen != nil,
		"button": c.Button != nil, "mediaDuration": c.MediaDuration != nil, "thumbnailUrl": c.ThumbnailURL != nil,
		"buttonTitle": c.ButtonTitle != nil, "fileName": c.FileName != nil, "options": c.Options != nil, "cards": c.Cards != nil,
	}
	var allowed, required []string
	switch c.Type {
	case "TEXT":
		allowed, required = []string{"text", "button"}, []string{"text"}
	case "IMAGE":
		allowed, required = []string{"text", "mediaUrl", "showImageInFullScreen", "button"}, []string{"mediaUrl"}
	case "VIDEO":
		allowed = []string{"text", "mediaUrl", "mediaDuration", "thumbnailUrl", "buttonTitle", "button"}
		required = []string{"mediaUrl", "mediaDuration", "thumbnailUrl"}
	case "FILE":
		allowed, required = []string{"fileName", "mediaUrl"}, []string{"fileName", "mediaUrl"}
	case "LIST":
		allowed, required = []string{"text", "options"}, []string{"text", "options"}
	case "CAROUSEL":
		allowed, required = []string{"text", "cards"}, []string{"text", "cards"}
	default:
		add(p+".type", "must be TEXT, IMAGE, VIDEO, FILE, LIST or CAROUSEL, got %q", c.Type)
		return
	}
	ok := map[string]bool{}
	for _, f := range allowed {
		ok[f] = true
	}
	for f, isSet := range set {
		if isSet && !ok[f] {
			add(p+"."+f, "is not a field of %s content", c.Type)
		}
	}
	for _, f := range required {
		if !set[f] {
			add(p+"."+f, "must not be null")
		}
	}
	if c.Text != nil && (strings.TrimSpace(*c.Text) == "" || len([]rune(*c.Text)) > 1000) {
		add(p+".text", "must be 1 to 1000 characters")
	}
	if c.MediaURL != nil && !httpURL(*c.MediaURL) {
		add(p+".mediaUrl", "must be an http or https URL")
	}
	if c.Button != nil {
		checkButton(p+".button", *c.Button, 0, add)
	}
	switch c.Type {
	case "IMAGE":
		if e := ""; c.MediaURL != nil {
			if e = ext(*c.MediaURL); e != "" && e != "jpg" && e != "jpeg" && e != "png" {
				add(p+".mediaUrl", "must be a .jpg, .jpeg or .png image")
			}
		}
	case "VIDEO":
		if c.MediaDuration != nil && !isoDuration(*c.MediaDuration) {
			add(p+".mediaDuration", "must be an ISO 8601 duration like PT95S")
		}
		if c.ThumbnailURL != nil && !httpURL(*c.ThumbnailURL) {
			add(p+".thumbnailUrl", "must be an http or https URL")
		}
	case "FILE":
		if c.FileName != nil && !fileType(ext(*c.FileName)) {
			add(p+".fileName", "must end in a supported file type")
		}
	case "LIST":
		if n := len(c.Options); n < 2 || n > 5 {
			add(p+".options", "must hold 2 to 5 options")
		}
		for i, o := range c.Options {
			if strings.TrimSpace(o) == "" {
				add(fmt.Sprintf("%s.options[%d]", p, i), "must not be blank")
			}
		}
	case "CAROUSEL":
		if n := len(c.Cards); n < 2 || n > 5 {
			add(p+".cards", "must hold 2 to 5 cards")
		}
		for i, cd := range c.Cards {
			cp := fmt.Sprintf("%s.cards[%d]", p, i)
			if strings.TrimSpace(cd.Text) == "" {
				add(cp+".text", "must not be blank")
			}
			if !httpURL(cd.MediaURL) {
				add(cp+".mediaUrl", "must be an http or https URL")
			}
			if len(cd.Buttons) > 2 {
				add(cp+".buttons", "must hold at most 2 buttons")
			}
			for j, b := range cd.Buttons {
				checkButton(fmt.Sprintf("%s.buttons[%d]", cp, j), b, 10+2*j, add)
			}
		}
	}
}

// checkButton checks a button; max is the longest title (0: none).
func checkButton(p string, b button, max int, add func(p, format string, args ...any)) {
	if strings.TrimSpace(b.Title) == "" {
		add(p+".title", "must not be blank")
	} else if max > 0 && len([]rune(b.Title)) > max {
		add(p+".title", "must be at most %d characters", max)
	}
	if strings.TrimSpace(b.Action) == "" {
		add(p+".action", "must not be blank")
	}
}
