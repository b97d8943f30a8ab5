package client

import (
	"context"
	"io"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// CampaignInput creates a transactional campaign: a campaign from a
// template that takes messages one at a time (AddSMSMessage,
// AddChatMessage) for as long as it exists.
type CampaignInput struct {
	// Name is required; TemplateID is the template's id, of the campaign's
	// channel. Required.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	TemplateID  string `json:"templateId"`
}

// CampaignCreated answers the creation of a transactional campaign.
type CampaignCreated struct {
	CampaignID string         `json:"campaignId"`
	Name       string         `json:"name"`
	Status     CampaignStatus `json:"status"`
	CreatedAt  time.Time      `json:"createdAt"`
}

// MessageInput adds one message to a transactional campaign.
type MessageInput struct {
	// PhoneNumber: an optional +, then 10 to 15 digits. Required.
	PhoneNumber string `json:"phoneNumber"`
	// ExternalUserID is the caller's own identifier, for tracking.
	ExternalUserID string `json:"externalUserId,omitempty"`
	// Placeholders are the values of the template's {{placeholders}}.
	Placeholders map[string]string `json:"placeholders,omitempty"`
	// ValidityPeriod, in seconds from now (60 to 604800), overrides the
	// template's; 0: the template's.
	ValidityPeriod int `json:"validityPeriod,omitempty"`
	// MissingPlaceholders says what to do when Placeholders lack a value
	// the template uses: MissingKeep (or "") sends the placeholder as
	// written and names it in MessageQueued.MissingPlaceholders;
	// MissingSkip refuses the message (a 400 on placeholders.<name>).
	MissingPlaceholders string `json:"missingPlaceholders,omitempty"`
}

// The values of MissingPlaceholders in BulkSend and MessageInput.
const (
	// MissingKeep sends a placeholder without a value as written: the
	// default.
	MissingKeep = "keep"
	// MissingSkip leaves out the recipients without a value.
	MissingSkip = "skip"
)

// MissingPlaceholder is a placeholder of the template that some
// recipients of a send have no value for.
type MissingPlaceholder struct {
	// Name is the placeholder's name, without braces.
	Name string `json:"name"`
	// Recipients counts the recipients without a value for it.
	Recipients int `json:"recipients"`
}

// MessageQueued answers a message added to a transactional campaign.
type MessageQueued struct {
	MessageID  string `json:"messageId"`
	CampaignID string `json:"campaignId"`
	// PhoneNumber is normalised: digits only.
	PhoneNumber string `json:"phoneNumber"`
	// Status is Pending, or Failed (Details OPTED_OUT) when the number
	// opted out of the company's messages of the channel.
	Status  MessageStatus `json:"status"`
	Details string        `json:"details"`
	// MissingPlaceholders are the template's placeholders the message has
	// no value for, left as written in it (Recipients 1 each).
	MissingPlaceholders []MissingPlaceholder `json:"missingPlaceholders"`
	QueuedAt            time.Time            `json:"queuedAt"`
}

// Recipient is one addressee of a bulk send.
type Recipient struct {
	// PhoneNumber: an optional +, then 10 to 15 digits; an invalid one is
	// skipped and reported, not a failure of the request. Required.
	PhoneNumber    string `json:"phoneNumber"`
	ExternalUserID string `json:"externalUserId,omitempty"`
	// Placeholders override BulkSend.Placeholders for this recipient.
	Placeholders map[string]string `json:"placeholders,omitempty"`
}

// DirectRecipient is one addressee of a direct send.
type DirectRecipient struct {
	PhoneNumber    string `json:"phoneNumber"`
	ExternalUserID string `json:"externalUserId,omitempty"`
}

// SendWindow is the part of the day in which messages may be sent, in each
// recipient's local time ("09:00" to "20:00"; From after To spans
// midnight; To may be "24:00").
type SendWindow struct {
	From string `json:"from"`
	To   string `json:"to"`
	// TimeZone, an IANA name, puts every recipient in that zone instead of
	// the one told from their number.
	TimeZone string `json:"timeZone,omitempty"`
}

// BulkSend sends a template to many recipients (SendSMSPromotional,
// SendChatBulk): the campaign is created Queuing, becomes Ready once its
// messages are written, and is sent once started (StartCampaign).
type BulkSend struct {
	// TemplateID is a template of the route's channel. Required.
	TemplateID string `json:"templateId"`
	// Recipients: 1 to 200,000. Required.
	Recipients []Recipient `json:"recipients"`
	// Placeholders are the values every recipient shares.
	Placeholders map[string]string `json:"placeholders,omitempty"`
	// ValidityPeriod, in seconds from the campaign's start (60 to
	// 604800), overrides the template's.
	ValidityPeriod int `json:"validityPeriod,omitempty"`
	// SendWindow keeps the messages to a part of the day.
	SendWindow *SendWindow `json:"sendWindow,omitempty"`
	// MissingPlaceholders says what to do with the recipients lacking a
	// value for a placeholder of the template: MissingKeep (or "") sends
	// their message with the placeholder as written, MissingSkip leaves
	// them out. SendResult.MissingPlaceholders counts them either way.
	MissingPlaceholders string `json:"missingPlaceholders,omitempty"`
}

// DirectSMS sends a raw text, without template or placeholders, at once
// (SendSMS).
type DirectSMS struct {
	// MessageContent is sent as written (at most 1,600 characters).
	// Required.
	MessageContent string `json:"messageContent"`
	// SMSSenderID is an approved SMS sender of the company. Required.
	SMSSenderID int64 `json:"smsSenderId"`
	// Recipients: 1 to 200,000. Required.
	Recipients []DirectRecipient `json:"recipients"`
	// ValidityPeriod, in seconds (60 to 604800); 0: none.
	ValidityPeriod int `json:"validityPeriod,omitempty"`
}

// DirectChat sends a raw chat text at once (SendChatText), with an
// optional SMS fallback.
type DirectChat struct {
	// MessageContent is sent as written (at most 1,000 characters).
	// Required.
	MessageContent string `json:"messageContent"`
	// ChatServiceID is a chat service of the company. Required.
	ChatServiceID int64 `json:"chatServiceId"`
	// SMSFallbackText (GSM-7 only) is sent from SMSFallbackSenderID when
	// the chat message cannot reach the person (chat errors 8, 9, 10).
	SMSFallbackText     string `json:"smsFallbackText,omitempty"`
	SMSFallbackSenderID int64  `json:"smsFallbackSenderId,omitempty"`
	// Recipients: 1 to 200,000. Required.
	Recipients     []DirectRecipient `json:"recipients"`
	ValidityPeriod int               `json:"validityPeriod,omitempty"`
}

// SendResult answers every bulk and direct send.
type SendResult struct {
	CampaignID string `json:"campaignId"`
	// MessageCount is the recipients accepted, one message each.
	MessageCount int `json:"messageCount"`
	// SkippedCount is the recipients skipped: the four lists together.
	SkippedCount int `json:"skippedCount"`
	// InvalidPhoneNumbers and ContentTooLong list skipped numbers as they
	// were sent; OptedOutPhoneNumbers (bulk sends only) those skipped
	// because they opted out, digits only.
	InvalidPhoneNumbers  []string `json:"invalidPhoneNumbers"`
	ContentTooLong       []string `json:"contentTooLong"`
	OptedOutPhoneNumbers []string `json:"optedOutPhoneNumbers"`
	// MissingPlaceholders (bulk sends only) are the template's
	// placeholders that some recipients have no value for, with how many
	// lack each; MissingPlaceholderPhoneNumbers the numbers, as sent,
	// skipped for that with MissingSkip.
	MissingPlaceholders            []MissingPlaceholder `json:"missingPlaceholders"`
	MissingPlaceholderPhoneNumbers []string             `json:"missingPlaceholderPhoneNumbers"`
	// Status is "Queuing" for bulk sends (start the campaign once it is
	// Ready) and "Pending" for direct sends.
	Status   string    `json:"status"`
	QueuedAt time.Time `json:"queuedAt"`
	// Message tells what to do next, for a person.
	Message string `json:"message"`
}

// Campaign is a campaign as lists show it.
type Campaign struct {
	CampaignID  string         `json:"campaignId"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Status      CampaignStatus `json:"status"`
	Channel     Channel        `json:"channel"`
	SendingMode SendingMode    `json:"sendingMode"`
	// TotalMessages is the campaign's messages (while Queuing, the
	// recipients admitted); PreparedCount those written so far.
	TotalMessages int `json:"totalMessages"`
	PreparedCount int `json:"preparedCount"`
	// DeliveredCount counts Delivered and Seen messages, SeenCount the
	// Seen ones; PendingCount those not settled; UnconfirmedCount the SMS
	// whose receipt did not come in time.
	DeliveredCount   int `json:"deliveredCount"`
	FailedCount      int `json:"failedCount"`
	PendingCount     int `json:"pendingCount"`
	SeenCount        int `json:"seenCount"`
	UnconfirmedCount int `json:"unconfirmedCount"`
	// CancelledAt is set when the campaign was cancelled (its Status is
	// then Completed); zero otherwise.
	CancelledAt time.Time `json:"cancelledAt"`
	CreatedAt   time.Time `json:"createdAt"`
}

// CampaignDetail is a campaign as GetCampaign (and pause, resume and
// cancel) answer it. Absent times are zero.
type CampaignDetail struct {
	Campaign
	ChatServiceID int64     `json:"chatServiceId"`
	TemplateID    string    `json:"templateId"` // empty for direct sends
	TemplateName  string    `json:"templateName"`
	StartedAt     time.Time `json:"startedAt"`
	CompletedAt   time.Time `json:"completedAt"`
	// ScheduledAt is the sendAt the campaign was scheduled for.
	ScheduledAt   time.Time `json:"scheduledAt"`
	FailureReason string    `json:"failureReason"`
	// ValidityPeriod in seconds from the start; 0: none.
	ValidityPeriod int         `json:"validityPeriod"`
	SendWindow     *SendWindow `json:"sendWindow"`
	// WaitingForWindowCount is the Pending messages held back until
	// later (the window, or a retry's backoff).
	WaitingForWindowCount     int `json:"waitingForWindowCount"`
	SMSFallbackCount          int `json:"smsFallbackCount"`
	SMSFallbackDeliveredCount int `json:"smsFallbackDeliveredCount"`
	SMSFallbackFailedCount    int `json:"smsFallbackFailedCount"`
	// OverallDeliveryRate is the percentage of a chat campaign's messages
	// that reached the person by chat or by their fallback SMS.
	OverallDeliveryRate float64 `json:"overallDeliveryRate"`
}

// CampaignStarted answers StartCampaign and ScheduleCampaign.
type CampaignStarted struct {
	CampaignID string `json:"campaignId"`
	// Status is InProgress, or Ready when scheduled.
	Status CampaignStatus `json:"status"`
	// ScheduledAt is when a scheduled campaign starts; zero otherwise.
	ScheduledAt time.Time `json:"scheduledAt"`
}

// CampaignListOptions filters GET /campaigns; zero fields do not filter.
// Direct sends are never listed.
type CampaignListOptions struct {
	SendingMode SendingMode
	Status      CampaignStatus
	PageOptions
}

// CreateSMSCampaign creates a transactional SMS campaign (POST
// /sms/campaigns), InProgress at once.
func (c *Client) CreateSMSCampaign(ctx context.Context, in CampaignInput) (*CampaignCreated, error) {
	return c.createCampaign(ctx, "/sms/campaigns", in)
}

// CreateChatCampaign creates a transactional chat campaign (POST
// /chat/campaigns), InProgress at once.
func (c *Client) CreateChatCampaign(ctx context.Context, in CampaignInput) (*CampaignCreated, error) {
	return c.createCampaign(ctx, "/chat/campaigns", in)
}

func (c *Client) createCampaign(ctx context.Context, path string, in CampaignInput) (*CampaignCreated, error) {
	var out CampaignCreated
	if err := c.do(ctx, http.MethodPost, path, nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AddSMSMessage adds a message to a transactional SMS campaign (POST
// /sms/campaigns/{id}/messages).
func (c *Client) AddSMSMessage(ctx context.Context, campaignID string, in MessageInput) (*MessageQueued, error) {
	return c.addMessage(ctx, "/sms/campaigns/"+seg(campaignID)+"/messages", in)
}

// AddChatMessage adds a message to a transactional chat campaign (POST
// /chat/campaigns/{id}/messages).
func (c *Client) AddChatMessage(ctx context.Context, campaignID string, in MessageInput) (*MessageQueued, error) {
	return c.addMessage(ctx, "/chat/campaigns/"+seg(campaignID)+"/messages", in)
}

func (c *Client) addMessage(ctx context.Context, path string, in MessageInput) (*MessageQueued, error) {
	var out MessageQueued
	if err := c.do(ctx, http.MethodPost, path, nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SendSMSPromotional sends an SMS template in bulk (POST
// /sms/promotional): the campaign is Queuing; start it once Ready.
func (c *Client) SendSMSPromotional(ctx context.Context, in BulkSend) (*SendResult, error) {
	return c.send(ctx, "/sms/promotional", in)
}

// SendChatBulk sends a chat template in bulk (POST /chat/send): the
// campaign is Queuing; start it once Ready.
func (c *Client) SendChatBulk(ctx context.Context, in BulkSend) (*SendResult, error) {
	return c.send(ctx, "/chat/send", in)
}

// SendSMS sends a raw SMS text at once (POST /sms/send), in a campaign of
// its own that ListCampaigns leaves out.
func (c *Client) SendSMS(ctx context.Context, in DirectSMS) (*SendResult, error) {
	return c.send(ctx, "/sms/send", in)
}

// SendChatText sends a raw chat text at once (POST /chat/send-text), in a
// campaign of its own that ListCampaigns leaves out.
func (c *Client) SendChatText(ctx context.Context, in DirectChat) (*SendResult, error) {
	return c.send(ctx, "/chat/send-text", in)
}

func (c *Client) send(ctx context.Context, path string, in any) (*SendResult, error) {
	var out SendResult
	if err := c.do(ctx, http.MethodPost, path, nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListCampaigns returns one page of the company's campaigns, newest first
// (GET /campaigns).
func (c *Client) ListCampaigns(ctx context.Context, opts CampaignListOptions) (*Page[Campaign], error) {
	q := url.Values{}
	if opts.SendingMode != "" {
		q.Set("sendingMode", string(opts.SendingMode))
	}
	if opts.Status != "" {
		q.Set("status", string(opts.Status))
	}
	return listPage[Campaign](ctx, c, "/campaigns", "campaigns", opts.values(q))
}

// AllCampaigns iterates over the company's campaigns, newest first, a page
// of opts.PageSize at a time; it stops at the first error, which it
// yields.
func (c *Client) AllCampaigns(ctx context.Context, opts CampaignListOptions) iter.Seq2[Campaign, error] {
	return all(opts.Page, func(page int) (*Page[Campaign], error) {
		opts.Page = page
		return c.ListCampaigns(ctx, opts)
	})
}

// GetCampaign reads a campaign with its counters (GET /campaigns/{id}).
func (c *Client) GetCampaign(ctx context.Context, id string) (*CampaignDetail, error) {
	var out CampaignDetail
	if err := c.do(ctx, http.MethodGet, "/campaigns/"+seg(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StartCampaign starts a Ready campaign now (POST /campaigns/{id}/start),
// dropping a schedule it had.
func (c *Client) StartCampaign(ctx context.Context, id string) (*CampaignStarted, error) {
	return c.start(ctx, id, nil)
}

// ScheduleCampaign schedules a Ready campaign to start by itself at sendAt
// (POST /campaigns/{id}/start with sendAt), at most 90 days ahead; it stays
// Ready until then. A new call replaces the schedule.
func (c *Client) ScheduleCampaign(ctx context.Context, id string, sendAt time.Time) (*CampaignStarted, error) {
	return c.start(ctx, id, &struct {
		SendAt string `json:"sendAt"`
	}{sendAt.Format(time.RFC3339)})
}

func (c *Client) start(ctx context.Context, id string, body any) (*CampaignStarted, error) {
	var out CampaignStarted
	if err := c.do(ctx, http.MethodPost, "/campaigns/"+seg(id)+"/start", nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PauseCampaign pauses an InProgress campaign (POST
// /campaigns/{id}/pause).
func (c *Client) PauseCampaign(ctx context.Context, id string) (*CampaignDetail, error) {
	return c.move(ctx, id, "pause")
}

// ResumeCampaign resumes a Paused campaign (POST /campaigns/{id}/resume).
func (c *Client) ResumeCampaign(ctx context.Context, id string) (*CampaignDetail, error) {
	return c.move(ctx, id, "resume")
}

// CancelCampaign cancels a Ready, InProgress or Paused campaign (POST
// /campaigns/{id}/cancel): it becomes Completed, and its messages not
// handed to a provider yet fail with details CANCELLED.
func (c *Client) CancelCampaign(ctx context.Context, id string) (*CampaignDetail, error) {
	return c.move(ctx, id, "cancel")
}

func (c *Client) move(ctx context.Context, id, action string) (*CampaignDetail, error) {
	var out CampaignDetail
	if err := c.do(ctx, http.MethodPost, "/campaigns/"+seg(id)+"/"+action, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExportCampaignMessages streams every message of a campaign, its fallback
// SMS included, as CSV (GET /campaigns/{id}/messages.csv): a header row
// (id, phoneNumber, externalUserId, channelType, status, details,
// smsErrorCode, fallbackFor, messageContent, createdAt, sentAt,
// deliveredAt, updatedAt, route), then one row a message in the order
// they were made. The caller closes the reader; a reading error means the
// export was cut short, and its rows are not the whole campaign.
func (c *Client) ExportCampaignMessages(ctx context.Context, id string) (io.ReadCloser, error) {
	return c.rc.Open(ctx, http.MethodGet, "/campaigns/"+seg(id)+"/messages.csv", nil, "text/csv")
}
