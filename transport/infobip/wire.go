package infobip

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/heraldhq/herald/messaging"
)

// request is the body of POST /viber/2/messages.
type request struct {
	Messages []message `json:"messages"`
}

type message struct {
	Sender       string        `json:"sender"`
	Destinations []destination `json:"destinations"`
	Content      content       `json:"content"`
	Options      *options      `json:"options,omitempty"`
	Webhooks     *webhooks     `json:"webhooks,omitempty"`
}

type destination struct {
	To        string `json:"to"`
	MessageID string `json:"messageId,omitempty"`
}

// content is the union of Infobip's outbound content shapes; only the
// fields of Type are set.
type content struct {
	Type          string   `json:"type"`
	Text          string   `json:"text,omitempty"`
	MediaURL      string   `json:"mediaUrl,omitempty"`
	Button        *button  `json:"button,omitempty"`
	MediaDuration string   `json:"mediaDuration,omitempty"`
	ThumbnailURL  string   `json:"thumbnailUrl,omitempty"`
	FileName      string   `json:"fileName,omitempty"`
	Options       []string `json:"options,omitempty"`
	Cards         []card   `json:"cards,omitempty"`
}

type button struct {
	Title  string `json:"title"`
	Action string `json:"action"`
}

type card struct {
	Text     string   `json:"text"`
	MediaURL string   `json:"mediaUrl"`
	Buttons  []button `json:"buttons,omitempty"`
}

type options struct {
	ValidityPeriod *validityPeriod `json:"validityPeriod,omitempty"`
	TrackingData   string          `json:"trackingData,omitempty"`
}

type validityPeriod struct {
	Amount   int    `json:"amount"`
	TimeUnit string `json:"timeUnit"`
}

type webhooks struct {
	Delivery     *urlOnly `json:"delivery,omitempty"`
	Seen         *urlOnly `json:"seen,omitempty"`
	CallbackData string   `json:"callbackData,omitempty"`
}

type urlOnly struct {
	URL string `json:"url"`
}

// sendResponse is the answer of a send request.
type sendResponse struct {
	BulkID   string `json:"bulkId"`
	Messages []struct {
		MessageID   string `json:"messageId"`
		Status      Status `json:"status"`
		Destination string `json:"destination"`
	} `json:"messages"`
}

// apiError is the error body of Infobip's newer APIs.
type apiError struct {
	ErrorCode   string `json:"errorCode"`
	Description string `json:"description"`
	// RequestError is the error body of Infobip's older APIs.
	RequestError *struct {
		ServiceException struct {
			MessageID string `json:"messageId"`
			Text      string `json:"text"`
		} `json:"serviceException"`
	} `json:"requestError"`
}

// words returns the code and text of an error body, whichever its shape.
func (e apiError) words() (code, text string) {
	if e.ErrorCode != "" {
		return e.ErrorCode, e.Description
	}
	if e.RequestError != nil {
		return e.RequestError.ServiceException.MessageID, e.RequestError.ServiceException.Text
	}
	return "", ""
}

// reports is the body of every report Infobip posts: delivery reports,
// seen reports and inbound messages share the results array; the
// fields each item has tell which it is.
type reports struct {
	Results []report `json:"results"`
}

type report struct {
	// Delivery reports.
	BulkID       string  `json:"bulkId"`
	MessageID    string  `json:"messageId"`
	To           string  `json:"to"`
	Sender       string  `json:"sender"`
	SentAt       string  `json:"sentAt"`
	DoneAt       string  `json:"doneAt"`
	Status       *Status `json:"status"`
	Error        *Error  `json:"error"`
	CallbackData string  `json:"callbackData"`
	// Seen reports.
	From   string `json:"from"`
	SeenAt string `json:"seenAt"`
	// Inbound messages.
	ReceivedAt      string   `json:"receivedAt"`
	PairedMessageID string   `json:"pairedMessageId"`
	Message         *inbound `json:"message"`
}

type inbound struct {
	Type         string `json:"type"`
	Text         string `json:"text"`
	URL          string `json:"url"`
	FileName     string `json:"fileName"`
	TrackingData string `json:"trackingData"`
}

// Tracking data of a survey: "hs1.<message id>.<digest>.<digest>...",
// each digest the first 6 bytes of the SHA-256 of an option text in
// unpadded base64url (8 characters).
const trackingPrefix = "hs1"

func optionDigest(text string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(text)))
	return base64.RawURLEncoding.EncodeToString(sum[:6])
}

// surveyTracking is the trackingData of a survey message.
func surveyTracking(id messaging.ID, opts []messaging.SurveyOption) string {
	var b strings.Builder
	b.WriteString(trackingPrefix)
	b.WriteByte('.')
	b.WriteString(id.String())
	for _, o := range opts {
		b.WriteByte('.')
		b.WriteString(optionDigest(o.OptionText))
	}
	return b.String()
}

// parseTracking reads a survey's trackingData: its message id and the
// index of the option whose text is reply (-1 when none is).
func parseTracking(tracking, reply string) (messaging.ID, int, bool) {
	parts := strings.Split(tracking, ".")
	if len(parts) < 2 || parts[0] != trackingPrefix {
		return messaging.ID{}, -1, false
	}
	id, err := messaging.ParseID(parts[1])
	if err != nil {
		return messaging.ID{}, -1, false
	}
	want := optionDigest(reply)
	for i, d := range parts[2:] {
		if d == want {
			return id, i, true
		}
	}
	return id, -1, true
}
