package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Message is one message: to one recipient, on one channel. Absent
// strings are empty and absent times zero.
type Message struct {
	ID         string `json:"id"`
	CampaignID string `json:"campaignId"`
	// PhoneNumber is normalised: digits only.
	PhoneNumber    string        `json:"phoneNumber"`
	ExternalUserID string        `json:"externalUserId"`
	MessageContent string        `json:"messageContent"`
	Status         MessageStatus `json:"status"`
	ChannelType    Channel       `json:"channelType"`
	// Details says why a message failed (UNDELIVERED, OPTED_OUT,
	// USER_BLOCKED (8), ...), or that its receipt did not come
	// (NO_RECEIPT).
	Details      string `json:"details"`
	SMSErrorCode string `json:"smsErrorCode"`
	// Route is the SMPP connector an SMS went through, when the server
	// routes among several.
	Route       string    `json:"route"`
	CreatedAt   time.Time `json:"createdAt"`
	SentAt      time.Time `json:"sentAt"`
	DeliveredAt time.Time `json:"deliveredAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// MessageListOptions filters GET /messages: at least one of PhoneNumber,
// ExternalUserID and CampaignID is required; the others narrow further.
type MessageListOptions struct {
	PhoneNumber    string
	ExternalUserID string
	CampaignID     string
	Status         MessageStatus
	// StartDate and EndDate bound the creation time (inclusive); zero: no
	// bound.
	StartDate, EndDate time.Time
	PageOptions
}

// SurveyResult is one answer to a survey.
type SurveyResult struct {
	ID                  string    `json:"id"`
	CampaignID          string    `json:"campaignId"`
	PhoneNumber         string    `json:"phoneNumber"`
	ExternalUserID      string    `json:"externalUserId"`
	SelectedOptionText  string    `json:"selectedOptionText"`
	SelectedOptionIndex int       `json:"selectedOptionIndex"`
	TrackingData        string    `json:"trackingData"`
	RespondedAt         time.Time `json:"respondedAt"`
}

// SurveyResultListOptions filters GET /survey-results. CampaignID (a
// survey campaign) is required.
type SurveyResultListOptions struct {
	CampaignID     string
	PhoneNumber    string
	ExternalUserID string
	// SelectedOptionIndex, when not nil, keeps the answers of that option
	// (from 0).
	SelectedOptionIndex *int
	StartDate, EndDate  time.Time
	PageOptions
}

// SurveySummary counts a survey campaign's answers per option.
type SurveySummary struct {
	CampaignID     string `json:"campaignId"`
	CampaignName   string `json:"campaignName"`
	TotalResponses int    `json:"totalResponses"`
	// TotalMessagesSent is the survey messages handed to a provider, their
	// fallback SMS included.
	TotalMessagesSent int `json:"totalMessagesSent"`
	// ResponseRate is a percentage.
	ResponseRate    float64       `json:"responseRate"`
	OptionBreakdown []OptionCount `json:"optionBreakdown"`
}

// OptionCount is one option's line of a SurveySummary.
type OptionCount struct {
	OptionIndex int     `json:"optionIndex"`
	OptionText  string  `json:"optionText"`
	Count       int     `json:"count"`
	Percentage  float64 `json:"percentage"`
}

// setTime sets a time parameter when t is not zero.
func setTime(q url.Values, name string, t time.Time) {
	if !t.IsZero() {
		q.Set(name, t.Format(time.RFC3339Nano))
	}
}

// setStr sets a parameter when v is not empty.
func setStr(q url.Values, name, v string) {
	if v != "" {
		q.Set(name, v)
	}
}

// ListMessages returns one page of the company's messages that match opts
// (GET /messages); a campaign's come newest first.
func (c *Client) ListMessages(ctx context.Context, opts MessageListOptions) (*Page[Message], error) {
	q := url.Values{}
	setStr(q, "phoneNumber", opts.PhoneNumber)
	setStr(q, "externalUserId", opts.ExternalUserID)
	setStr(q, "campaignId", opts.CampaignID)
	setStr(q, "status", string(opts.Status))
	setTime(q, "startDate", opts.StartDate)
	setTime(q, "endDate", opts.EndDate)
	return listPage[Message](ctx, c, "/messages", "messages", opts.values(q))
}

// AllMessages iterates over the company's messages that match opts, a page
// of opts.PageSize at a time; it stops at the first error, which it
// yields.
func (c *Client) AllMessages(ctx context.Context, opts MessageListOptions) iter.Seq2[Message, error] {
	return all(opts.Page, func(page int) (*Page[Message], error) {
		opts.Page = page
		return c.ListMessages(ctx, opts)
	})
}

// GetMessage reads a message by the id a send or an add-message answered
// (GET /messages/{id}).
func (c *Client) GetMessage(ctx context.Context, id string) (*Message, error) {
	var m Message
	if err := c.do(ctx, http.MethodGet, "/messages/"+seg(id), nil, nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ListSurveyResults returns one page of a survey campaign's answers, in
// the order they came (GET /survey-results).
func (c *Client) ListSurveyResults(ctx context.Context, opts SurveyResultListOptions) (*Page[SurveyResult], error) {
	q := url.Values{}
	setStr(q, "campaignId", opts.CampaignID)
	setStr(q, "phoneNumber", opts.PhoneNumber)
	setStr(q, "externalUserId", opts.ExternalUserID)
	if opts.SelectedOptionIndex != nil {
		q.Set("selectedOptionIndex", strconv.Itoa(*opts.SelectedOptionIndex))
	}
	setTime(q, "startDate", opts.StartDate)
	setTime(q, "endDate", opts.EndDate)
	return listPage[SurveyResult](ctx, c, "/survey-results", "results", opts.values(q))
}

// AllSurveyResults iterates over a survey campaign's answers, a page of
// opts.PageSize at a time; it stops at the first error, which it yields.
func (c *Client) AllSurveyResults(ctx context.Context, opts SurveyResultListOptions) iter.Seq2[SurveyResult, error] {
	return all(opts.Page, func(page int) (*Page[SurveyResult], error) {
		opts.Page = page
		return c.ListSurveyResults(ctx, opts)
	})
}

// SurveySummary counts a survey campaign's answers per option (GET
// /survey-results/{campaignId}/summary).
func (c *Client) SurveySummary(ctx context.Context, campaignID string) (*SurveySummary, error) {
	var s SurveySummary
	if err := c.do(ctx, http.MethodGet, "/survey-results/"+seg(campaignID)+"/summary", nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListSMSSenders returns the company's approved SMS senders (GET
// /sms-senders).
func (c *Client) ListSMSSenders(ctx context.Context) ([]SMSSender, error) {
	var out []SMSSender
	if err := c.do(ctx, http.MethodGet, "/sms-senders", nil, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListChatServices returns the company's chat services (GET
// /chat-services).
func (c *Client) ListChatServices(ctx context.Context) ([]ChatService, error) {
	var out []ChatService
	if err := c.do(ctx, http.MethodGet, "/chat-services", nil, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// OpenAPIDocument returns the server's OpenAPI document (GET
// /openapi.json), which describes every route of the API; it needs no
// key.
func (c *Client) OpenAPIDocument(ctx context.Context) (json.RawMessage, error) {
	var doc json.RawMessage
	if err := c.do(ctx, http.MethodGet, "/openapi.json", nil, nil, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}
