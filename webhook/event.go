package webhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// Event is one thing that happened in a company, as its endpoints
// receive it. The store writes it in the transaction of the change it
// reports, so that no committed change loses its event.
type Event struct {
	ID        messaging.ID
	CompanyID messaging.ID
	Type      EventType
	// Subject is what the event is about (the message of a
	// message.status, the campaign of a campaign.status): the events of
	// one subject reach an endpoint in the order they happened.
	Subject   messaging.ID
	CreatedAt time.Time
	// Data is the event's data object, in JSON.
	Data json.RawMessage
}

// Body returns the JSON body of the requests carrying e:
// {"id", "type", "createdAt", "data"}.
func (e Event) Body() []byte {
	return e.AppendBody(make([]byte, 0, 128+len(e.Data)))
}

// AppendBody appends e's Body to b and returns the result. The body is
// written directly, without reflection: the data is JSON Herald wrote,
// kept as it is.
func (e Event) AppendBody(b []byte) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, e.ID.String()...)
	b = append(b, `","type":`...)
	b = appendString(b, string(e.Type))
	b = append(b, `,"createdAt":"`...)
	b = e.CreatedAt.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","data":`...)
	if len(e.Data) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, e.Data...)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// mustJSON encodes v, the data of an event about subject: strings,
// numbers, ids, times and JSON Herald wrote, which cannot fail to encode.
func mustJSON(v any, subject messaging.ID) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("webhook: the event data of %s: %v", subject, err))
	}
	return b
}

// stamp writes t as the API does: RFC 3339, UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func stampPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := stamp(*t)
	return &s
}

// MessageStatusData is the data of a message.status event: the message
// as it is once it moved to Status.
type MessageStatusData struct {
	MessageID      messaging.ID            `json:"messageId"`
	CampaignID     messaging.ID            `json:"campaignId"`
	ChannelType    messaging.Channel       `json:"channelType"`
	Status         messaging.MessageStatus `json:"status"`
	Details        *string                 `json:"details"`
	SMSErrorCode   *string                 `json:"smsErrorCode"`
	ChatErrorCode  *string                 `json:"chatErrorCode"`
	PhoneNumber    string                  `json:"phoneNumber"`
	ExternalUserID *string                 `json:"externalUserId"`
	// FallbackFor is, on a fallback SMS, the id of the chat message it
	// replaces.
	FallbackFor *messaging.ID `json:"fallbackFor"`
	CreatedAt   string        `json:"createdAt"`
	SentAt      *string       `json:"sentAt"`
	DeliveredAt *string       `json:"deliveredAt"`
	SeenAt      *string       `json:"seenAt"`
}

// MessageStatusEvent returns the message.status event, with id id at
// time at, of m having moved to m.Status. What m gained after that status
// is left out: the times of later statuses (a message read once it was
// Seen, reported as having moved to Delivered, shows no seenAt), and the
// details and error code of a failure on a Sent, Delivered or Seen event.
func MessageStatusEvent(id messaging.ID, m *messaging.Message, at time.Time) Event {
	switch m.Status {
	case messaging.StatusPending:
		c := *m
		c.DeliveredAt, c.SeenAt = nil, nil
		m = &c
	case messaging.StatusSent:
		c := *m
		c.DeliveredAt, c.SeenAt, c.Details, c.SMSErrorCode = nil, nil, "", ""
		m = &c
	case messaging.StatusDelivered:
		c := *m
		c.SeenAt, c.Details, c.SMSErrorCode = nil, "", ""
		m = &c
	case messaging.StatusSeen:
		c := *m
		c.Details, c.SMSErrorCode = "", ""
		m = &c
	}
	d := MessageStatusData{MessageID: m.ID, CampaignID: m.CampaignID, ChannelType: m.Channel, Status: m.Status,
		Details: nullable(m.Details), SMSErrorCode: nullable(m.SMSErrorCode), PhoneNumber: m.Phone,
		ExternalUserID: nullable(m.ExternalUserID), CreatedAt: stamp(m.CreatedAt),
		SentAt: stampPtr(m.SentAt), DeliveredAt: stampPtr(m.DeliveredAt), SeenAt: stampPtr(m.SeenAt)}
	if m.Channel == messaging.ChannelChat && m.Status == messaging.StatusFailed {
		d.ChatErrorCode = nullable(chatErrorCode(m.Details))
	}
	if m.IsFallback() {
		f := m.FallbackFor
		d.FallbackFor = &f
	}
	data := d.appendJSON(make([]byte, 0, 320+len(d.PhoneNumber)))
	return Event{ID: id, CompanyID: m.CompanyID, Type: MessageStatus, Subject: m.ID, CreatedAt: at, Data: data}
}

// appendJSON appends d as encoding/json writes it, field by field without
// reflection: a store writes one for every status change of a message.
func (d *MessageStatusData) appendJSON(b []byte) []byte {
	b = append(b, `{"messageId":`...)
	b = appendID(b, d.MessageID)
	b = append(b, `,"campaignId":`...)
	b = appendID(b, d.CampaignID)
	b = append(b, `,"channelType":`...)
	b = appendString(b, string(d.ChannelType))
	b = append(b, `,"status":`...)
	b = appendString(b, string(d.Status))
	b = append(b, `,"details":`...)
	b = appendStringPtr(b, d.Details)
	b = append(b, `,"smsErrorCode":`...)
	b = appendStringPtr(b, d.SMSErrorCode)
	b = append(b, `,"chatErrorCode":`...)
	b = appendStringPtr(b, d.ChatErrorCode)
	b = append(b, `,"phoneNumber":`...)
	b = appendString(b, d.PhoneNumber)
	b = append(b, `,"externalUserId":`...)
	b = appendStringPtr(b, d.ExternalUserID)
	b = append(b, `,"fallbackFor":`...)
	if d.FallbackFor == nil {
		b = append(b, "null"...)
	} else {
		b = appendID(b, *d.FallbackFor)
	}
	b = append(b, `,"createdAt":`...)
	b = appendString(b, d.CreatedAt)
	b = append(b, `,"sentAt":`...)
	b = appendStringPtr(b, d.SentAt)
	b = append(b, `,"deliveredAt":`...)
	b = appendStringPtr(b, d.DeliveredAt)
	b = append(b, `,"seenAt":`...)
	b = appendStringPtr(b, d.SeenAt)
	return append(b, '}')
}

// appendID appends id as a JSON string.
func appendID(b []byte, id messaging.ID) []byte {
	b = append(b, '"')
	b, _ = id.AppendText(b) // an id always encodes
	return append(b, '"')
}

// appendStringPtr appends *s as a JSON string, or null.
func appendStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// chatErrorCode is the provider's code in the details of a failed chat
// message, written "NAME (code)": "USER_BLOCKED (8)" gives "8".
func chatErrorCode(details string) string {
	if !strings.HasSuffix(details, ")") {
		return ""
	}
	i := strings.LastIndexByte(details, '(')
	if i < 0 {
		return ""
	}
	code := details[i+1 : len(details)-1]
	for _, c := range code {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return code
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// CampaignStatusData is the data of a campaign.status event: the campaign
// with its counters once it moved to Status, as GET /campaigns/{id} shows
// them.
type CampaignStatusData struct {
	CampaignID                messaging.ID             `json:"campaignId"`
	Name                      string                   `json:"name"`
	Status                    messaging.CampaignStatus `json:"status"`
	ChannelType               messaging.Channel        `json:"channelType"`
	SendingMode               messaging.SendingMode    `json:"sendingMode"`
	TotalMessages             int                      `json:"totalMessages"`
	PendingCount              int                      `json:"pendingCount"`
	DeliveredCount            int                      `json:"deliveredCount"`
	SeenCount                 int                      `json:"seenCount"`
	FailedCount               int                      `json:"failedCount"`
	UnconfirmedCount          int                      `json:"unconfirmedCount"`
	SMSFallbackCount          int                      `json:"smsFallbackCount"`
	SMSFallbackDeliveredCount int                      `json:"smsFallbackDeliveredCount"`
	SMSFallbackFailedCount    int                      `json:"smsFallbackFailedCount"`
	OverallDeliveryRate       float64                  `json:"overallDeliveryRate"`
	FailureReason             *string                  `json:"failureReason"`
	CreatedAt                 string                   `json:"createdAt"`
	StartedAt                 *string                  `json:"startedAt"`
	CompletedAt               *string                  `json:"completedAt"`
}

// CampaignStatusEvent returns the campaign.status event, with id id at
// time at, of c having moved to c.Status.
func CampaignStatusEvent(id messaging.ID, c *messaging.Campaign, at time.Time) Event {
	st := campaign.StatsOf(*c)
	d := CampaignStatusData{CampaignID: c.ID, Name: c.Name, Status: c.Status, ChannelType: c.Channel, SendingMode: c.Mode,
		TotalMessages: st.TotalMessages, PendingCount: st.Pending, DeliveredCount: st.Delivered, SeenCount: st.Seen,
		FailedCount: st.Failed, UnconfirmedCount: st.Unconfirmed, SMSFallbackCount: st.FallbackCount,
		SMSFallbackDeliveredCount: st.FallbackDelivered, SMSFallbackFailedCount: st.FallbackFailed,
		OverallDeliveryRate: st.OverallDeliveryRate, FailureReason: nullable(c.FailureReason), CreatedAt: stamp(c.CreatedAt),
		StartedAt: stampPtr(c.StartedAt), CompletedAt: stampPtr(c.CompletedAt)}
	data := mustJSON(d, c.ID)
	return Event{ID: id, CompanyID: c.CompanyID, Type: CampaignStatus, Subject: c.ID, CreatedAt: at, Data: data}
}

// SurveyAnsweredData is the data of a survey.answered event: the answer
// recorded, as GET /survey-results shows it.
type SurveyAnsweredData struct {
	ResultID            messaging.ID `json:"resultId"`
	CampaignID          messaging.ID `json:"campaignId"`
	MessageID           messaging.ID `json:"messageId"`
	PhoneNumber         string       `json:"phoneNumber"`
	ExternalUserID      *string      `json:"externalUserId"`
	SelectedOptionIndex int          `json:"selectedOptionIndex"`
	SelectedOptionText  string       `json:"selectedOptionText"`
	RespondedAt         string       `json:"respondedAt"`
}

// SurveyAnsweredEvent returns the survey.answered event, with id id at
// time at, of the answer r. Its subject is the answered message.
func SurveyAnsweredEvent(id messaging.ID, r *messaging.SurveyResult, at time.Time) Event {
	d := SurveyAnsweredData{ResultID: r.ID, CampaignID: r.CampaignID, MessageID: r.MessageID, PhoneNumber: r.Phone,
		ExternalUserID: nullable(r.ExternalUserID), SelectedOptionIndex: r.OptionIndex, SelectedOptionText: r.OptionText,
		RespondedAt: stamp(r.RespondedAt)}
	data := mustJSON(d, r.ID)
	return Event{ID: id, CompanyID: r.CompanyID, Type: SurveyAnswered, Subject: r.MessageID, CreatedAt: at, Data: data}
}

// InboundData is the data of a message.inbound event: an SMS a person
// sent to one of the company's senders.
type InboundData struct {
	InboundID   messaging.ID `json:"inboundId"`
	PhoneNumber string       `json:"phoneNumber"`
	To          string       `json:"to"`
	Text        string       `json:"text"`
	Parts       int          `json:"parts"`
	ReceivedAt  string       `json:"receivedAt"`
}

// InboundEvent returns the message.inbound event, with id id at time at,
// of m. Its subject is the inbound message.
func InboundEvent(id messaging.ID, m *messaging.InboundMessage, at time.Time) Event {
	d := InboundData{InboundID: m.ID, PhoneNumber: m.Phone, To: m.To, Text: m.Text, Parts: m.Parts, ReceivedAt: stamp(m.ReceivedAt)}
	data := mustJSON(d, m.ID)
	return Event{ID: id, CompanyID: m.CompanyID, Type: MessageInbound, Subject: m.ID, CreatedAt: at, Data: data}
}

// MessageStatusRef returns the message.status event, with id id at time
// at, of the message messageID of company companyID having moved to
// status, carrying the status only: a store that keeps events so writes
// less in the transaction of the move, and describes the message when the
// event is read (Describe).
func MessageStatusRef(id, companyID, messageID messaging.ID, status messaging.MessageStatus, at time.Time) Event {
	return Event{ID: id, CompanyID: companyID, Type: MessageStatus, Subject: messageID, CreatedAt: at,
		Data: mustJSON(statusRef{status}, messageID)}
}

// statusRef is the data of an event written by MessageStatusRef.
type statusRef struct {
	Status messaging.MessageStatus `json:"status"`
}

// readStatusRef returns the data of an event written by
// MessageStatusRef, read without encoding/json when it is as
// MessageStatusRef writes it.
func readStatusRef(data []byte) statusRef {
	const head, tail = `{"status":"`, `"}`
	if len(data) >= len(head)+len(tail) && string(data[:len(head)]) == head && string(data[len(data)-len(tail):]) == tail {
		st := data[len(head) : len(data)-len(tail)]
		if !bytes.ContainsAny(st, `"\\`) {
			return statusRef{messaging.MessageStatus(st)}
		}
	}
	var ref statusRef
	_ = json.Unmarshal(data, &ref)
	return ref
}

// Describe returns the event written by MessageStatusRef with its data
// built from m, the message as it is now, moved to the status the event
// carries (later times left out as in MessageStatusEvent). Without m (a
// message purged since), the data holds the message id and the status.
func Describe(e Event, m *messaging.Message) Event {
	ref := readStatusRef(e.Data)
	if m == nil {
		e.Data = mustJSON(struct {
			MessageID messaging.ID            `json:"messageId"`
			Status    messaging.MessageStatus `json:"status"`
		}{e.Subject, ref.Status}, e.Subject)
		return e
	}
	c := *m
	c.Status = ref.Status
	return MessageStatusEvent(e.ID, &c, e.CreatedAt)
}

// OptOutData is the data of an optout.changed event.
type OptOutData struct {
	PhoneNumber string `json:"phoneNumber"`
	// Channel is what the number opted out of, or back in to: All or Chat.
	Channel  string `json:"channel"`
	OptedOut bool   `json:"optedOut"`
	// Source is where the change came from: api, keyword or chat.
	Source    string `json:"source"`
	ChangedAt string `json:"changedAt"`
}

// OptOutEvent returns the optout.changed event, with id id, of the
// company's number phone having opted out of channel (optedOut) or back
// in, from source at at. Its subject is derived from the company and the
// number, so one number's changes arrive in order.
func OptOutEvent(id, companyID messaging.ID, phone, channel, source string, optedOut bool, at time.Time) Event {
	d := OptOutData{PhoneNumber: phone, Channel: channel, OptedOut: optedOut, Source: source, ChangedAt: stamp(at)}
	return Event{ID: id, CompanyID: companyID, Type: OptOutChanged, Subject: phoneSubject(companyID, phone), CreatedAt: at,
		Data: mustJSON(d, companyID)}
}

// phoneSubject is a stable id for a company's number: the first 16 bytes
// of the SHA-256 of both.
func phoneSubject(companyID messaging.ID, phone string) messaging.ID {
	h := sha256.New()
	h.Write(companyID[:])
	h.Write([]byte(phone))
	var id messaging.ID
	copy(id[:], h.Sum(nil))
	return id
}
