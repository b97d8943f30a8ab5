package chatsim

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Request is a send_message body as the simulator decoded it. Objects the
// body leaves out are nil.
type Request struct {
	ServiceID    string    `json:"service_id"`
	Dest         string    `json:"dest"`
	Seq          int64     `json:"seq"`
	TTL          *int64    `json:"ttl,omitempty"`
	Type         int       `json:"type"`
	TrackingData string    `json:"tracking_data"`
	Message      *Message  `json:"message,omitempty"`
	Video        *Video    `json:"video,omitempty"`
	File         *File     `json:"file,omitempty"`
	Carousel     *Carousel `json:"carousel,omitempty"`
	Survey       *Survey   `json:"survey,omitempty"`

	// Raw is the body exactly as received.
	Raw json.RawMessage `json:"-"`
	// Status is the status the request was answered with (-1 when it was
	// answered with an HTTP error instead).
	Status int `json:"-"`
	// Traceparent is the request's W3C trace context header, when it
	// carried one.
	Traceparent string `json:"-"`
}

// Message is the message object: text, image and button.
type Message struct {
	Text   string  `json:"text,omitempty"`
	Image  string  `json:"image,omitempty"`
	Button *Button `json:"button,omitempty"`
}

// Button is the button of a message.
type Button struct {
	Caption string `json:"caption"`
	Action  string `json:"action"`
}

// Video is the video object of a type 7 message.
type Video struct {
	URL          string `json:"url"`
	ThumbnailURL string `json:"thumbnail_url,omitempty"`
	FileSize     int64  `json:"file_size"`
	Duration     int    `json:"duration"`
}

// File is the file object of a type 8 message.
type File struct {
	URL      string `json:"url"`
	FileName string `json:"file_name"`
	FileType string `json:"file_type"`
}

// Carousel is the carousel object of a type 5 message.
type Carousel struct {
	Items []CarouselItem `json:"items"`
}

// CarouselItem is one card of a carousel.
type CarouselItem struct {
	Title           string      `json:"title"`
	ImageURL        string      `json:"image_url"`
	PrimaryButton   *LinkButton `json:"primary_button,omitempty"`
	SecondaryButton *LinkButton `json:"secondary_button,omitempty"`
}

// LinkButton is a carousel button.
type LinkButton struct {
	Label     string `json:"label"`
	ActionURL string `json:"action_url"`
}

// Survey is the survey object of a type 6 message.
type Survey struct {
	Options []SurveyOption `json:"options"`
}

// SurveyOption is one answer of a survey.
type SurveyOption struct {
	Text  string `json:"text"`
	Value string `json:"value"`
}

// Provider status codes the simulator answers.
const (
	StatusSuccess            = 0
	StatusBadServiceID       = 2
	StatusBadData            = 3
	StatusBadMessageType     = 5
	StatusBadParameters      = 6
	StatusUserBlocked        = 8
	StatusNotViberUser       = 9
	StatusNoSuitableDevice   = 10
	StatusAlreadySent        = 12
	StatusInvalidTTL         = 20
	StatusInvalidPhoneNumber = 27
)

// statusName is the name of a status code, for status_message.
func statusName(code int) string {
	switch code {
	case 0:
		return "SUCCESS"
	case 2:
		return "BAD_SERVICE_ID"
	case 3:
		return "BAD_DATA"
	case 5:
		return "BAD_MESSAGE_TYPE"
	case 6:
		return "BAD_PARAMETERS"
	case 8:
		return "USER_BLOCKED"
	case 9:
		return "NOT_VIBER_USER"
	case 10:
		return "NO_SUITABLE_DEVICE"
	case 12:
		return "ALREADY_SENT"
	case 20:
		return "INVALID_TTL"
	case 27:
		return "INVALID_PHONE_NUMBER"
	}
	return strconv.Itoa(code)
}

// validFileType reports whether t is an accepted file_type: lower-case.
func validFileType(t string) bool {
	switch t {
	case "pdf", "doc", "docx", "txt", "rtf", "xls", "xlsx", "csv", "ppt", "pptx", "zip", "rar":
		return true
	}
	return false
}

// validate checks a decoded request and returns the status to answer
// instead of accepting it, or 0.
func (r *Request) validate(serviceIDs map[string]bool) int {
	switch {
	case r.ServiceID == "" || r.Dest == "" || r.Seq == 0:
		return StatusBadData
	case len(serviceIDs) > 0 && !serviceIDs[r.ServiceID]:
		return StatusBadServiceID
	case !validNumber(r.Dest):
		return StatusInvalidPhoneNumber
	case r.TTL != nil && (*r.TTL < 30 || *r.TTL > 1209600):
		return StatusInvalidTTL
	case r.Type < 1 || r.Type > 8:
		return StatusBadMessageType
	}
	if !r.contentValid() {
		return StatusBadParameters
	}
	return StatusSuccess
}

// validNumber reports whether s is an international number: 7 to 15
// digits.
func validNumber(s string) bool {
	if len(s) < 7 || len(s) > 15 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// contentValid checks that the request carries what its type needs and
// nothing that belongs to another type.
func (r *Request) contentValid() bool {
	m := r.Message
	if m == nil {
		m = &Message{}
	}
	hasButton := m.Button != nil
	buttonOK := hasButton && m.Button.Caption != "" && m.Button.Action != ""
	// Objects that belong to one type only.
	if (r.Video != nil) != (r.Type == 7) || (r.File != nil) != (r.Type == 8) ||
		(r.Carousel != nil) != (r.Type == 5) || (r.Survey != nil) != (r.Type == 6) {
		return false
	}
	if m.Image != "" && r.Type != 2 && r.Type != 4 {
		return false
	}
	if hasButton && r.Type != 3 && r.Type != 4 && r.Type != 7 {
		return false
	}
	switch r.Type {
	case 1:
		return m.Text != ""
	case 2:
		return m.Image != ""
	case 3:
		return m.Text != "" && buttonOK
	case 4:
		return m.Text != "" && m.Image != "" && buttonOK
	case 5:
		n := len(r.Carousel.Items)
		if n < 2 || n > 5 {
			return false
		}
		for _, it := range r.Carousel.Items {
			if it.Title == "" || it.ImageURL == "" || it.PrimaryButton == nil ||
				it.PrimaryButton.Label == "" || it.PrimaryButton.ActionURL == "" {
				return false
			}
			if it.SecondaryButton != nil && (it.SecondaryButton.Label == "" || it.SecondaryButton.ActionURL == "") {
				return false
			}
		}
		return true
	case 6:
		n := len(r.Survey.Options)
		if m.Text == "" || n < 2 || n > 5 {
			return false
		}
		for _, o := range r.Survey.Options {
			if o.Text == "" {
				return false
			}
		}
		return true
	case 7:
		return r.Video.URL != "" && r.Video.FileSize >= 0 && r.Video.Duration >= 0 && (!hasButton || buttonOK)
	case 8:
		return r.File.URL != "" && r.File.FileName != "" && validFileType(r.File.FileType)
	}
	return false
}

// outcomeByNumber is the status a valid message to dest is answered with,
// and whether an accepted one later fails (numbers ending 0011).
func outcomeByNumber(dest, lateFailureSuffix string) (status int, failLater bool) {
	switch {
	case strings.HasSuffix(dest, "0008"):
		return StatusUserBlocked, false
	case strings.HasSuffix(dest, "0009"):
		return StatusNotViberUser, false
	case strings.HasSuffix(dest, "0010"):
		return StatusNoSuitableDevice, false
	case lateFailureSuffix != "" && strings.HasSuffix(dest, lateFailureSuffix):
		return StatusSuccess, true
	}
	return StatusSuccess, false
}

// statusEvent is a status callback.
type statusEvent struct {
	Event        string `json:"event"`
	MessageToken string `json:"message_token"`
	TrackingData string `json:"tracking_data"`
	Status       string `json:"status"`
	ErrorCode    int    `json:"error_code"`
	Timestamp    int64  `json:"timestamp"`
	PhoneNumber  string `json:"phone_number"`
}

// replyEvent is a reply callback.
type replyEvent struct {
	Event        string       `json:"event"`
	MessageToken string       `json:"message_token"`
	TrackingData string       `json:"tracking_data"`
	Timestamp    int64        `json:"timestamp"`
	PhoneNumber  string       `json:"phone_number"`
	Text         string       `json:"text"`
	Survey       *replySurvey `json:"survey,omitempty"`
}

// replySurvey is the survey object of a reply.
type replySurvey struct {
	OptionIndex int    `json:"option_index"`
	OptionValue string `json:"option_value"`
}
