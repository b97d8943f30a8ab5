package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// campaignInput is the body of POST /sms/campaigns and /chat/campaigns.
type campaignInput struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	TemplateID  string `json:"templateId"`
}

// campaignCreatedJSON answers a transactional campaign creation.
type campaignCreatedJSON struct {
	CampaignID messaging.ID             `json:"campaignId"`
	Name       string                   `json:"name"`
	Status     messaging.CampaignStatus `json:"status"`
	CreatedAt  timestamp                `json:"createdAt"`
}

func (s *server) createSMSCampaign(w http.ResponseWriter, r *http.Request) error {
	return s.createCampaign(w, r, messaging.ChannelSMS)
}

func (s *server) createChatCampaign(w http.ResponseWriter, r *http.Request) error {
	return s.createCampaign(w, r, messaging.ChannelChat)
}

// createCampaign answers POST /{channel}/campaigns: 201.
func (s *server) createCampaign(w http.ResponseWriter, r *http.Request, ch messaging.Channel) error {
	var in campaignInput
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	var fe messaging.FieldErrors
	tid := bodyID(&fe, "templateId", in.TemplateID)
	if err := fe.Err(); err != nil {
		return err
	}
	c, err := s.campaigns.CreateTransactional(r.Context(), companyOf(r), ch,
		campaign.NewCampaign{Name: in.Name, Description: in.Description, TemplateID: tid})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/campaigns/"+c.ID.String())
	s.writeJSON(w, http.StatusCreated, campaignCreatedJSON{CampaignID: c.ID, Name: c.Name, Status: c.Status, CreatedAt: ts(c.CreatedAt)})
	return nil
}

// messageInput is the body of an add-message.
type messageInput struct {
	PhoneNumber    string                `json:"phoneNumber"`
	ExternalUserID string                `json:"externalUserId"`
	Placeholders   recipientPlaceholders `json:"placeholders"`
	ValidityPeriod int                   `json:"validityPeriod"`
	// MissingPlaceholders is "keep" (the default) or "skip".
	MissingPlaceholders string `json:"missingPlaceholders"`
}

// messageQueuedJSON answers an add-message.
type messageQueuedJSON struct {
	MessageID   messaging.ID            `json:"messageId"`
	CampaignID  messaging.ID            `json:"campaignId"`
	PhoneNumber string                  `json:"phoneNumber"`
	Status      messaging.MessageStatus `json:"status"`
	Details     string                  `json:"details,omitempty"` // OPTED_OUT on a Failed message
	// MissingPlaceholders are the template's placeholders the message has
	// no value for, left as written.
	MissingPlaceholders []missingJSON `json:"missingPlaceholders"`
	QueuedAt            timestamp     `json:"queuedAt"`
}

// missingJSON is a placeholder some recipients of a send have no value
// for, and how many.
type missingJSON struct {
	Name       string `json:"name"`
	Recipients int    `json:"recipients"`
}

func missingOut(ms []campaign.MissingPlaceholder) []missingJSON {
	out := make([]missingJSON, len(ms))
	for i, m := range ms {
		out[i] = missingJSON{Name: m.Name, Recipients: m.Recipients}
	}
	return out
}

func (s *server) addSMSMessage(w http.ResponseWriter, r *http.Request) error {
	return s.addMessage(w, r, messaging.ChannelSMS)
}

func (s *server) addChatMessage(w http.ResponseWriter, r *http.Request) error {
	return s.addMessage(w, r, messaging.ChannelChat)
}

// addMessage answers POST /{channel}/campaigns/{id}/messages: 202.
func (s *server) addMessage(w http.ResponseWriter, r *http.Request, ch messaging.Channel) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in messageInput
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	policy, err := campaign.ParseMissingPolicy(in.MissingPlaceholders)
	if err != nil {
		return err
	}
	a, err := s.campaigns.AddMessageTo(r.Context(), companyOf(r), ch, id,
		campaign.Recipient{Phone: in.PhoneNumber, ExternalUserID: in.ExternalUserID, Placeholders: campaign.PlaceholdersOf(in.Placeholders),
			ValidityPeriod: in.ValidityPeriod}, policy)
	if err != nil {
		return err
	}
	m := a.Message
	s.writeJSON(w, http.StatusAccepted, messageQueuedJSON{MessageID: m.ID, CampaignID: m.CampaignID,
		PhoneNumber: m.Phone, Status: m.Status, Details: m.Details, MissingPlaceholders: missingOut(a.MissingPlaceholders), QueuedAt: ts(m.CreatedAt)})
	return nil
}

// sendJSON answers every bulk and direct send.
type sendJSON struct {
	CampaignID          messaging.ID `json:"campaignId"`
	MessageCount        int          `json:"messageCount"`
	SkippedCount        int          `json:"skippedCount"`
	InvalidPhoneNumbers []string     `json:"invalidPhoneNumbers"`
	ContentTooLong      []string     `json:"contentTooLong"`
	// OptedOutPhoneNumbers (bulk sends only) lists the numbers skipped
	// because they opted out.
	OptedOutPhoneNumbers *[]string `json:"optedOutPhoneNumbers,omitempty"`
	// MissingPlaceholders (bulk sends only) counts the recipients without
	// a value for each placeholder of the template.
	MissingPlaceholders *[]missingJSON `json:"missingPlaceholders,omitempty"`
	// MissingPlaceholderPhoneNumbers (bulk sends only) lists the numbers
	// skipped for a missing value, with missingPlaceholders "skip".
	MissingPlaceholderPhoneNumbers *[]string `json:"missingPlaceholderPhoneNumbers,omitempty"`
	Status                         string    `json:"status"`
	QueuedAt                       timestamp `json:"queuedAt"`
	Message                        string    `json:"message"`
}

// skippedNote tells how many recipients were skipped, and why.
func skippedNote(invalid, tooLong, optedOut, missing int) string {
	note := skippedFor(invalid, tooLong)
	more := []string{}
	if optedOut > 0 {
		more = append(more, plural(optedOut, "recipient")+" who opted out (see optedOutPhoneNumbers) skipped")
	}
	if missing > 0 {
		more = append(more, plural(missing, "recipient")+" without a value for a placeholder (see missingPlaceholderPhoneNumbers) skipped")
	}
	if invalid == 0 && tooLong == 0 && len(more) > 0 {
		return strings.Join(more, "; ")
	}
	return strings.Join(append([]string{note}, more...), "; ")
}

// skippedFor tells how many recipients were skipped for an invalid number
// or a message too long.
func skippedFor(invalid, tooLong int) string {
	switch {
	case invalid == 0 && tooLong == 0:
		return "no recipient was skipped"
	case tooLong == 0:
		return plural(invalid, "invalid phone number") + " skipped (see invalidPhoneNumbers)"
	case invalid == 0:
		return plural(tooLong, "recipient") + " skipped whose message would be too long (see contentTooLong)"
	}
	return plural(invalid, "invalid phone number") + " (see invalidPhoneNumbers) and " +
		plural(tooLong, "recipient") + " whose message would be too long (see contentTooLong) skipped"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// sendOut converts a send result; bulk tells a bulk send (Queuing, to be
// started) from a direct one (Pending, already on its way).
func sendOut(res campaign.SendResult, bulk bool) sendJSON {
	out := sendJSON{CampaignID: res.Campaign.ID, MessageCount: res.MessageCount, SkippedCount: res.SkippedCount,
		InvalidPhoneNumbers: res.InvalidPhoneNumbers, ContentTooLong: res.ContentTooLong, QueuedAt: ts(res.QueuedAt)}
	if out.InvalidPhoneNumbers == nil {
		out.InvalidPhoneNumbers = []string{}
	}
	if out.ContentTooLong == nil {
		out.ContentTooLong = []string{}
	}
	optedOut := res.OptedOutPhoneNumbers
	var missing []missingJSON
	skippedMissing := res.MissingPlaceholderPhoneNumbers
	if bulk {
		if optedOut == nil {
			optedOut = []string{}
		}
		out.OptedOutPhoneNumbers = &optedOut
		missing = missingOut(res.MissingPlaceholders)
		out.MissingPlaceholders = &missing
		if skippedMissing == nil {
			skippedMissing = []string{}
		}
		out.MissingPlaceholderPhoneNumbers = &skippedMissing
	}
	skipped := skippedNote(len(out.InvalidPhoneNumbers), len(out.ContentTooLong), len(optedOut), len(skippedMissing))
	id := res.Campaign.ID.String()
	if bulk {
		out.Status = string(messaging.CampaignQueuing)
		verb := "are"
		if res.MessageCount == 1 {
			verb = "is"
		}
		out.Message = fmt.Sprintf("Campaign accepted: %s %s being prepared; %s.%s Poll GET /api/v1/campaigns/%s until its status is Ready, then start it with POST /api/v1/campaigns/%s/start.",
			plural(res.MessageCount, "message"), verb, skipped, missingNote(missing, len(skippedMissing) > 0), id, id)
	} else {
		out.Status = string(messaging.StatusPending)
		out.Message = fmt.Sprintf("%s queued for sending; %s. Follow them with GET /api/v1/campaigns/%s.",
			plural(res.MessageCount, "message"), skipped, id)
	}
	return out
}

// missingNote tells, when some recipients lack a placeholder's value and
// were not skipped, that their messages show it as written.
func missingNote(missing []missingJSON, skipped bool) string {
	if len(missing) == 0 || skipped {
		return ""
	}
	names := make([]string, len(missing))
	for i, m := range missing {
		names[i] = "{{" + m.Name + "}}"
	}
	return " Some recipients have no value for " + strings.Join(names, ", ") +
		" (see missingPlaceholders): their messages show it as written; send missingPlaceholders \"skip\" to leave them out."
}

// bulkInput holds the fields of a bulk send beside recipients.
type bulkInput struct {
	TemplateID          string
	Placeholders        placeholderValues
	MissingPlaceholders string
}

func (s *server) sendSMSBulk(w http.ResponseWriter, r *http.Request) error {
	return s.sendBulk(w, r, messaging.ChannelSMS)
}

func (s *server) sendChatBulk(w http.ResponseWriter, r *http.Request) error {
	return s.sendBulk(w, r, messaging.ChannelChat)
}

// sendBulk answers POST /sms/promotional and /chat/send: 202, Queuing.
func (s *server) sendBulk(w http.ResponseWriter, r *http.Request, ch messaging.Channel) error {
	var in bulkInput
	var validity int
	var window *windowJSON
	recipients, err := s.decodeSend(w, r, sendFields{"templateId": &in.TemplateID, "placeholders": &in.Placeholders, "validityPeriod": &validity,
		"sendWindow": &window, "missingPlaceholders": &in.MissingPlaceholders}, false)
	if err != nil {
		return err
	}
	var fe messaging.FieldErrors
	tid := bodyID(&fe, "templateId", in.TemplateID)
	policy, err := campaign.ParseMissingPolicy(in.MissingPlaceholders)
	if err != nil {
		return err
	}
	var sw *messaging.SendWindow
	if window != nil {
		v, err := messaging.ParseSendWindow(window.From, window.To, window.TimeZone)
		if err != nil {
			return err
		}
		sw = &v
	}
	if err := fe.Err(); err != nil {
		return err
	}
	res, err := s.campaigns.SendBulk(r.Context(), companyOf(r), campaign.BulkSend{Channel: ch, TemplateID: tid, Recipients: recipients, Placeholders: in.Placeholders,
		ValidityPeriod: validity, Window: sw, Missing: policy})
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusAccepted, sendOut(res, true))
	return nil
}

// sendDirectSMS answers POST /sms/send: 202, Pending.
func (s *server) sendDirectSMS(w http.ResponseWriter, r *http.Request) error {
	var (
		d            campaign.DirectSMS
		placeholders placeholderValues
	)
	recipients, err := s.decodeSend(w, r, sendFields{"messageContent": &d.Content, "smsSenderId": &d.SMSSenderID,
		"placeholders": &placeholders, "validityPeriod": &d.ValidityPeriod}, true)
	if err != nil {
		return err
	}
	if placeholders != nil {
		return invalidField("placeholders", "placeholders: direct sends take no placeholders")
	}
	d.Recipients = recipients
	res, err := s.campaigns.SendDirectSMS(r.Context(), companyOf(r), d)
	if err != nil {
		return err
	}
	s.rememberTrace(r, res.Campaign.ID)
	s.writeJSON(w, http.StatusAccepted, sendOut(res, false))
	return nil
}

// sendDirectChat answers POST /chat/send-text: 202, Pending.
func (s *server) sendDirectChat(w http.ResponseWriter, r *http.Request) error {
	var (
		d            campaign.DirectChat
		placeholders placeholderValues
	)
	recipients, err := s.decodeSend(w, r, sendFields{"messageContent": &d.Content, "chatServiceId": &d.ChatServiceID,
		"smsFallbackText": &d.SMSFallbackText, "smsFallbackSenderId": &d.SMSFallbackSenderID,
		"placeholders": &placeholders, "validityPeriod": &d.ValidityPeriod}, true)
	if err != nil {
		return err
	}
	if placeholders != nil {
		return invalidField("placeholders", "placeholders: direct sends take no placeholders")
	}
	d.Recipients = recipients
	res, err := s.campaigns.SendDirectChat(r.Context(), companyOf(r), d)
	if err != nil {
		return err
	}
	s.rememberTrace(r, res.Campaign.ID)
	s.writeJSON(w, http.StatusAccepted, sendOut(res, false))
	return nil
}

// campaignJSON is a campaign of GET /campaigns.
type campaignJSON struct {
	CampaignID    messaging.ID             `json:"campaignId"`
	Name          string                   `json:"name"`
	Description   *string                  `json:"description"`
	Status        messaging.CampaignStatus `json:"status"`
	Channel       messaging.Channel        `json:"channel"`
	SendingMode   messaging.SendingMode    `json:"sendingMode"`
	TotalMessages int                      `json:"totalMessages"`
	// PreparedCount counts the messages written so far: the progress of a
	// Queuing campaign's preparation, totalMessages afterwards.
	PreparedCount  int `json:"preparedCount"`
	DeliveredCount int `json:"deliveredCount"`
	FailedCount    int `json:"failedCount"`
	PendingCount   int `json:"pendingCount"`
	SeenCount      int `json:"seenCount"`
	// UnconfirmedCount counts the SMS whose receipt did not come within
	// the receipt timeout.
	UnconfirmedCount int `json:"unconfirmedCount"`
	// CancelledAt tells a cancelled campaign (status Completed) from one
	// that ran to its end.
	CancelledAt *timestamp `json:"cancelledAt,omitempty"`
	CreatedAt   timestamp  `json:"createdAt"`
}

// campaignDetailJSON is a campaign of GET /campaigns/{id}.
type campaignDetailJSON struct {
	campaignJSON
	ChatServiceID             *int64        `json:"chatServiceId"`
	TemplateID                *messaging.ID `json:"templateId"`
	TemplateName              *string       `json:"templateName"`
	StartedAt                 *timestamp    `json:"startedAt"`
	CompletedAt               *timestamp    `json:"completedAt"`
	ScheduledAt               *timestamp    `json:"scheduledAt,omitempty"`
	ValidityPeriod            *int          `json:"validityPeriod"`
	SendWindow                *windowJSON   `json:"sendWindow"`
	WaitingForWindowCount     int           `json:"waitingForWindowCount"`
	FailureReason             *string       `json:"failureReason"`
	SMSFallbackCount          int           `json:"smsFallbackCount"`
	SMSFallbackDeliveredCount int           `json:"smsFallbackDeliveredCount"`
	SMSFallbackFailedCount    int           `json:"smsFallbackFailedCount"`
	OverallDeliveryRate       float64       `json:"overallDeliveryRate"`
}

func campaignOut(c *messaging.Campaign, st campaign.Stats) campaignJSON {
	return campaignJSON{CampaignID: c.ID, Name: c.Name, Description: strOrNull(c.Description), Status: c.Status,
		Channel: c.Channel, SendingMode: c.Mode, TotalMessages: st.TotalMessages, PreparedCount: st.Prepared, DeliveredCount: st.Delivered,
		FailedCount: st.Failed, PendingCount: st.Pending, SeenCount: st.Seen, UnconfirmedCount: st.Unconfirmed, CancelledAt: tsOrNull(c.CancelledAt), CreatedAt: ts(c.CreatedAt)}
}

func campaignDetailOut(c *messaging.Campaign) campaignDetailJSON {
	st := campaign.StatsOf(*c)
	out := campaignDetailJSON{campaignJSON: campaignOut(c, st), ChatServiceID: idOrNull(c.ChatServiceID),
		StartedAt: tsOrNull(c.StartedAt), CompletedAt: tsOrNull(c.CompletedAt), ScheduledAt: tsOrNull(c.ScheduledAt), FailureReason: strOrNull(c.FailureReason),
		SMSFallbackCount: st.FallbackCount, SMSFallbackDeliveredCount: st.FallbackDelivered,
		SMSFallbackFailedCount: st.FallbackFailed, OverallDeliveryRate: st.OverallDeliveryRate}
	if c.ValidFor > 0 {
		v := int(c.ValidFor / time.Second)
		out.ValidityPeriod = &v
	}
	if w := c.SendWindow; w != nil {
		out.SendWindow = &windowJSON{From: messaging.Clock(w.From), To: messaging.Clock(w.To), TimeZone: w.TimeZone}
		out.WaitingForWindowCount = c.WaitingForWindow
	}
	if !c.TemplateID.IsZero() {
		id := c.TemplateID
		out.TemplateID = &id
		out.TemplateName = &c.TemplateName
	}
	return out
}

// listCampaigns answers GET /campaigns.
func (s *server) listCampaigns(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	f := messaging.CampaignFilter{PageRequest: q.page()}
	if m := q.str("sendingMode"); m != "" {
		mode, err := messaging.ParseSendingMode(m)
		if err != nil {
			q.fe.Add("sendingMode", "sendingMode must be Bulk or Transactional, not %q", m)
		}
		f.Mode = mode
	}
	if st := q.str("status"); st != "" {
		status, err := messaging.ParseCampaignStatus(st)
		if err != nil {
			q.fe.Add("status", "status must be one of Draft, Queuing, Ready, InProgress, Paused, Completed or Failed, not %q", st)
		}
		f.Status = status
	}
	if err := q.err(); err != nil {
		return err
	}
	cs, total, err := s.campaigns.ListCampaigns(r.Context(), companyOf(r), f)
	if err != nil {
		return err
	}
	out := make([]campaignJSON, len(cs))
	for i := range cs {
		out[i] = campaignOut(&cs[i], campaign.StatsOf(cs[i]))
	}
	s.writeJSON(w, http.StatusOK, struct {
		Campaigns []campaignJSON `json:"campaigns"`
		pageJSON
	}{out, pageOut(f.PageRequest, total)})
	return nil
}

// getCampaign answers GET /campaigns/{id}.
func (s *server) getCampaign(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := s.campaigns.GetCampaign(r.Context(), companyOf(r), id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, campaignDetailOut(&c))
	return nil
}

// startCampaign answers POST /campaigns/{id}/start.
func (s *server) startCampaign(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	// The body is optional: {"sendAt": RFC 3339} schedules the start.
	var in struct {
		SendAt *string `json:"sendAt"`
	}
	body, err := io.ReadAll(s.body(w, r))
	if err != nil {
		return decodeError(err, "")
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := checkText(body); err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&in); err != nil {
			return decodeError(err, "")
		}
		if err := endOfBody(dec); err != nil {
			return err
		}
	}
	var c messaging.Campaign
	if in.SendAt != nil {
		at, perr := time.Parse(time.RFC3339, *in.SendAt)
		if perr != nil {
			return invalidField("sendAt", fmt.Sprintf("sendAt must be an RFC 3339 time (2026-05-01T09:00:00Z), not %q", *in.SendAt))
		}
		c, err = s.campaigns.Schedule(r.Context(), companyOf(r), id, at)
	} else {
		c, err = s.campaigns.Start(r.Context(), companyOf(r), id)
	}
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, struct {
		CampaignID  messaging.ID             `json:"campaignId"`
		Status      messaging.CampaignStatus `json:"status"`
		ScheduledAt *timestamp               `json:"scheduledAt,omitempty"`
	}{c.ID, c.Status, tsOrNull(c.ScheduledAt)})
	return nil
}

// campaignMove answers POST /campaigns/{id}/pause, /resume and /cancel
// with the campaign's id and its status after the move.
func (s *server) campaignMove(move func(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		c, err := move(r.Context(), companyOf(r), id)
		if err != nil {
			return err
		}
		s.writeJSON(w, http.StatusOK, campaignDetailOut(&c))
		return nil
	}
}

// windowJSON is a send window: times of day "HH:MM", and the IANA zone of
// every recipient when given (else each one's own, from the number).
type windowJSON struct {
	From     string `json:"from"`
	To       string `json:"to"`
	TimeZone string `json:"timeZone,omitempty"`
}
