package server

import (
	"net/http"

	"github.com/heraldhq/herald/messaging"
)

// messageJSON is a message of GET /messages.
type messageJSON struct {
	ID             messaging.ID            `json:"id"`
	CampaignID     messaging.ID            `json:"campaignId"`
	PhoneNumber    string                  `json:"phoneNumber"`
	ExternalUserID *string                 `json:"externalUserId"`
	MessageContent string                  `json:"messageContent"`
	Status         messaging.MessageStatus `json:"status"`
	ChannelType    messaging.Channel       `json:"channelType"`
	Details        *string                 `json:"details"`
	SMSErrorCode   *string                 `json:"smsErrorCode"`
	Route          *string                 `json:"route"`
	CreatedAt      timestamp               `json:"createdAt"`
	SentAt         *timestamp              `json:"sentAt"`
	DeliveredAt    *timestamp              `json:"deliveredAt"`
	UpdatedAt      *timestamp              `json:"updatedAt"`
}

func messageOut(m *messaging.Message) messageJSON {
	out := messageJSON{ID: m.ID, CampaignID: m.CampaignID, PhoneNumber: m.Phone,
		ExternalUserID: strOrNull(m.ExternalUserID), MessageContent: m.Content, Status: m.Status,
		ChannelType: m.Channel, Details: strOrNull(m.Details), SMSErrorCode: strOrNull(m.SMSErrorCode), Route: strOrNull(m.Route),
		CreatedAt: ts(m.CreatedAt), SentAt: tsOrNull(m.SentAt), DeliveredAt: tsOrNull(m.DeliveredAt)}
	// updatedAt is null until something happened to the message after its
	// creation.
	if m.UpdatedAt.After(m.CreatedAt) {
		out.UpdatedAt = tsOrNull(&m.UpdatedAt)
	}
	return out
}

// getMessage answers GET /messages/{id}.
func (s *server) getMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	m, err := s.campaigns.GetMessage(r.Context(), companyOf(r), id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, messageOut(&m))
	return nil
}

// listMessages answers GET /messages.
func (s *server) listMessages(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	f := messaging.MessageFilter{Phone: q.phone("phoneNumber"), ExternalUserID: q.str("externalUserId"),
		CampaignID: q.id("campaignId"), From: q.date("startDate", false), To: q.date("endDate", true), PageRequest: q.page()}
	if st := q.str("status"); st != "" {
		status, err := messaging.ParseMessageStatus(st)
		if err != nil {
			q.fe.Add("status", "status must be one of Pending, Sending, Sent, Delivered, Seen or Failed, not %q", st)
		}
		f.Status = status
	}
	if err := q.err(); err != nil {
		return err
	}
	ms, total, err := s.campaigns.ListMessages(r.Context(), companyOf(r), f)
	if err != nil {
		return err
	}
	out := make([]messageJSON, len(ms))
	for i := range ms {
		out[i] = messageOut(&ms[i])
	}
	s.writeJSON(w, http.StatusOK, struct {
		Messages []messageJSON `json:"messages"`
		pageJSON
	}{out, pageOut(f.PageRequest, total)})
	return nil
}

// surveyResultJSON is one answer of GET /survey-results.
type surveyResultJSON struct {
	ID                  messaging.ID `json:"id"`
	CampaignID          messaging.ID `json:"campaignId"`
	PhoneNumber         string       `json:"phoneNumber"`
	ExternalUserID      *string      `json:"externalUserId"`
	SelectedOptionText  string       `json:"selectedOptionText"`
	SelectedOptionIndex int          `json:"selectedOptionIndex"`
	TrackingData        *string      `json:"trackingData"`
	RespondedAt         timestamp    `json:"respondedAt"`
}

// listSurveyResults answers GET /survey-results.
func (s *server) listSurveyResults(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	f := messaging.SurveyResultFilter{CampaignID: q.id("campaignId"), Phone: q.phone("phoneNumber"),
		ExternalUserID: q.str("externalUserId"), From: q.date("startDate", false), To: q.date("endDate", true),
		PageRequest: q.page()}
	if _, bad := q.fe["campaignId"]; !bad && q.str("campaignId") == "" {
		q.fe.Add("campaignId", "campaignId is required")
	}
	if q.str("selectedOptionIndex") != "" {
		n := q.intOr("selectedOptionIndex", 0)
		f.OptionIndex = &n
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		q.fe.Add("endDate", "endDate must not be before startDate")
	}
	if err := q.err(); err != nil {
		return err
	}
	rs, total, err := s.surveys.ListResults(r.Context(), companyOf(r), f)
	if err != nil {
		return err
	}
	out := make([]surveyResultJSON, len(rs))
	for i := range rs {
		x := &rs[i]
		out[i] = surveyResultJSON{ID: x.ID, CampaignID: x.CampaignID, PhoneNumber: x.Phone,
			ExternalUserID: strOrNull(x.ExternalUserID), SelectedOptionText: x.OptionText,
			SelectedOptionIndex: x.OptionIndex, TrackingData: strOrNull(x.TrackingData), RespondedAt: ts(x.RespondedAt)}
	}
	s.writeJSON(w, http.StatusOK, struct {
		Results []surveyResultJSON `json:"results"`
		pageJSON
	}{out, pageOut(f.PageRequest, total)})
	return nil
}

// optionJSON is one line of a survey summary.
type optionJSON struct {
	OptionIndex int     `json:"optionIndex"`
	OptionText  string  `json:"optionText"`
	Count       int     `json:"count"`
	Percentage  float64 `json:"percentage"`
}

// surveySummary answers GET /survey-results/{campaignId}/summary.
func (s *server) surveySummary(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "campaignId")
	if err != nil {
		return err
	}
	sum, err := s.surveys.Summarize(r.Context(), companyOf(r), id)
	if err != nil {
		return err
	}
	opts := make([]optionJSON, len(sum.Options))
	for i, o := range sum.Options {
		opts[i] = optionJSON{OptionIndex: o.Index, OptionText: o.Text, Count: o.Count, Percentage: o.Percentage}
	}
	s.writeJSON(w, http.StatusOK, struct {
		CampaignID        messaging.ID `json:"campaignId"`
		CampaignName      string       `json:"campaignName"`
		TotalResponses    int          `json:"totalResponses"`
		TotalMessagesSent int          `json:"totalMessagesSent"`
		ResponseRate      float64      `json:"responseRate"`
		OptionBreakdown   []optionJSON `json:"optionBreakdown"`
	}{sum.CampaignID, sum.CampaignName, sum.TotalResponses, sum.TotalMessagesSent, sum.ResponseRate, opts})
	return nil
}

// chatServiceJSON is one entry of GET /chat-services.
type chatServiceJSON struct {
	ID        int64  `json:"id"`
	BrandName string `json:"brandName"`
	Channel   string `json:"channel"`
	Provider  string `json:"provider"`
}

// listChatServices answers GET /chat-services.
func (s *server) listChatServices(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.accounts.ListChatServices(r.Context(), companyOf(r))
	if err != nil {
		return err
	}
	out := make([]chatServiceJSON, len(cs))
	for i, c := range cs {
		out[i] = chatServiceJSON{ID: c.ID, BrandName: c.BrandName, Channel: c.ChannelName(), Provider: c.ProviderName()}
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}

// smsSenderJSON is one entry of GET /sms-senders.
type smsSenderJSON struct {
	ID       int64  `json:"id"`
	SenderID string `json:"senderId"`
}

// listSMSSenders answers GET /sms-senders: approved senders only.
func (s *server) listSMSSenders(w http.ResponseWriter, r *http.Request) error {
	ss, err := s.accounts.ListSMSSenders(r.Context(), companyOf(r))
	if err != nil {
		return err
	}
	out := make([]smsSenderJSON, 0, len(ss))
	for _, sd := range ss {
		if sd.Approved {
			out = append(out, smsSenderJSON{ID: sd.ID, SenderID: sd.SenderID})
		}
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}
