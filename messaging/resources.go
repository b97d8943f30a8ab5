package messaging

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// Company is a tenant. Every resource belongs to exactly one company and
// is invisible to the others. A new company is inactive until an operator
// activates it; requests under an inactive company's key get 503.
type Company struct {
	ID        ID
	Name      string
	Active    bool
	CreatedAt time.Time
	// MaxPerSecond caps the company's messages handed to a provider a
	// second, SMS and chat together, for every process sharing the
	// store; 0: none.
	MaxPerSecond float64
}

// CompanyNameKey is the form company names are compared in: trimmed and
// lower-cased, so that "Acme" and " acme" are one name.
func CompanyNameKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// APIKey describes one of a company's API keys. The key itself is shown
// once, when it is made; the store keeps its selector and hash only.
type APIKey struct {
	ID        int64
	CompanyID ID
	// Name tells the keys of a company apart ("production", "ci").
	Name      string
	CreatedAt time.Time
	// LastUsedAt is when the key last authenticated a request, to the
	// minute; nil: never.
	LastUsedAt *time.Time
	// ExpiresAt is when the key stops working on its own: a newer key
	// gave it a grace period. Nil: never.
	ExpiresAt *time.Time
}

// SMSSender is an alphanumeric SMS sender name (at most 11 characters)
// registered for a company. Only approved senders may send.
type SMSSender struct {
	ID        int64
	CompanyID ID
	SenderID  string
	Approved  bool
	CreatedAt time.Time
}

// MaxSenderIDLen is the longest SMS sender name.
const MaxSenderIDLen = 11

// Chat providers and channels a chat service names by default.
const (
	// DefaultChatProvider is the provider of a service that names none:
	// Herald's own chat protocol.
	DefaultChatProvider = "herald"
	// DefaultChatChannel is the channel of a service that names none.
	DefaultChatChannel = ChatChannelViber
	// ChatChannelViber is the chat network Viber.
	ChatChannelViber = "viber"
	// ChatChannelWhatsApp is the chat network WhatsApp.
	ChatChannelWhatsApp = "whatsapp"
)

// ChatService is a company's brand account at a chat provider.
// ProviderServiceID is the service's id at the provider: the sender its
// messages go out as.
type ChatService struct {
	ID                int64
	CompanyID         ID
	BrandName         string
	ProviderServiceID string
	// Provider names the chat provider ("herald", "vonage", "infobip",
	// "meta-whatsapp"); empty means DefaultChatProvider.
	Provider string
	// Channel is the chat network the service reaches ("viber",
	// "whatsapp"); empty means DefaultChatChannel.
	Channel string
	// BaseURL is the provider's API endpoint; empty: the provider's
	// public one.
	BaseURL string
	// Credentials is the object the provider authenticates the service
	// with. It is write-only: the API never shows it. Stores return it
	// from ChatServices only; other reads leave it nil and set
	// CredentialsSet.
	Credentials json.RawMessage
	// CredentialsSet tells whether the service has credentials.
	CredentialsSet bool
	CreatedAt      time.Time
}

// ProviderName is the service's provider, DefaultChatProvider when it
// names none.
func (cs ChatService) ProviderName() string {
	if cs.Provider == "" {
		return DefaultChatProvider
	}
	return cs.Provider
}

// ChannelName is the service's channel, DefaultChatChannel when it names
// none.
func (cs ChatService) ChannelName() string {
	if cs.Channel == "" {
		return DefaultChatChannel
	}
	return cs.Channel
}

// CarouselItem is one card of a Carousel (type 5) chat message.
type CarouselItem struct {
	Title               string `json:"title"`
	ImageURL            string `json:"imageUrl"`
	ButtonText          string `json:"buttonText"`
	ButtonURL           string `json:"buttonUrl"`
	SecondaryButtonText string `json:"secondaryButtonText,omitempty"`
	SecondaryButtonURL  string `json:"secondaryButtonUrl,omitempty"`
}

// SurveyOption is one answer of a Survey (type 6) chat message.
type SurveyOption struct {
	OptionText  string `json:"optionText"`
	OptionValue string `json:"optionValue"`
}

// ChatConfig is the `typeSpecificConfig` of a chat template: which fields
// matter depends on the message type. Its JSON form is the API's.
type ChatConfig struct {
	ImageURL     string         `json:"imageUrl,omitempty"`
	ButtonText   string         `json:"buttonText,omitempty"`
	ButtonURL    string         `json:"buttonUrl,omitempty"`
	Items        []CarouselItem `json:"items,omitempty"`
	Options      []SurveyOption `json:"options,omitempty"`
	VideoURL     string         `json:"videoUrl,omitempty"`
	ThumbnailURL string         `json:"thumbnailUrl,omitempty"`
	FileSize     int64          `json:"fileSize,omitempty"`
	Duration     int            `json:"duration,omitempty"`
	FileURL      string         `json:"fileUrl,omitempty"`
	FileName     string         `json:"fileName,omitempty"`
	FileType     string         `json:"fileType,omitempty"`
	// ProviderTemplate names the provider's approved template a message
	// goes out as, for providers that send business-initiated messages
	// only so (WhatsApp).
	ProviderTemplate *ProviderTemplate `json:"providerTemplate,omitempty"`
}

// ProviderTemplate is a template approved at the chat provider: its name,
// its language, and its parameters in order, each a text that may hold
// {{placeholders}}, rendered for each recipient like the content.
type ProviderTemplate struct {
	Name       string   `json:"name"`
	Language   string   `json:"language"`
	Parameters []string `json:"parameters,omitempty"`
}

// Template is an SMS or chat message template. SMS templates have
// MessageType 1 and may name an SMSSenderID; chat templates name a
// ChatServiceID, a MessageType 1-8, an optional Config and an optional SMS
// fallback. Zero integer ids mean "none".
type Template struct {
	ID                  ID
	CompanyID           ID
	Name                string
	Description         string
	Channel             Channel
	MessageType         MessageType
	Content             string
	SMSSenderID         int64
	ChatServiceID       int64
	Config              *ChatConfig
	SMSFallbackEnabled  bool
	SMSFallbackContent  string
	SMSFallbackSenderID int64
	// ValidityPeriod is the default validity, in seconds, of the messages
	// sent from the template (0: none): see Message.ExpiresAt.
	ValidityPeriod int
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// StatusCounts counts messages by status.
type StatusCounts struct {
	Pending   int
	Sending   int
	Sent      int
	Delivered int
	Seen      int
	Failed    int
	// Unconfirmed counts the Sent messages (a part of Sent, not besides
	// it) whose delivery receipt did not come within the receipt timeout:
	// they wait for nothing any more, and a receipt that still comes
	// settles them.
	Unconfirmed int
}

// Add adds n to the count of status s.
func (c *StatusCounts) Add(s MessageStatus, n int) {
	switch s {
	case StatusPending:
		c.Pending += n
	case StatusSending:
		c.Sending += n
	case StatusSent:
		c.Sent += n
	case StatusDelivered:
		c.Delivered += n
	case StatusSeen:
		c.Seen += n
	case StatusFailed:
		c.Failed += n
	}
}

// Of returns the count of status s.
func (c StatusCounts) Of(s MessageStatus) int {
	switch s {
	case StatusPending:
		return c.Pending
	case StatusSending:
		return c.Sending
	case StatusSent:
		return c.Sent
	case StatusDelivered:
		return c.Delivered
	case StatusSeen:
		return c.Seen
	case StatusFailed:
		return c.Failed
	}
	return 0
}

// Awaiting is the number of Sent messages still waiting for their
// delivery report: Sent less Unconfirmed.
func (c StatusCounts) Awaiting() int { return c.Sent - c.Unconfirmed }

// Total is the number of messages counted.
func (c StatusCounts) Total() int {
	return c.Pending + c.Sending + c.Sent + c.Delivered + c.Seen + c.Failed
}

// Unsent is the number of messages not yet handed to a provider.
func (c StatusCounts) Unsent() int { return c.Pending + c.Sending }

// Campaign groups messages sent from one template (or one direct send).
//
// Counts count the campaign's own messages (for a chat campaign, its chat
// messages); FallbackCounts count the SMS sent as fallback for them.
// Planned is the number of messages the campaign was admitted with: for a
// campaign still Queuing, Planned minus Counts.Total() is capacity reserved
// for messages not inserted yet.
type Campaign struct {
	ID             ID
	CompanyID      ID
	Name           string
	Description    string
	Channel        Channel
	Mode           SendingMode
	Status         CampaignStatus
	Hidden         bool // created by a direct send: left out of campaign lists
	TemplateID     ID   // zero for direct sends
	TemplateName   string
	MessageType    MessageType // what its messages are (1 for SMS)
	Config         *ChatConfig // chat extras as rendered at creation, shared by its messages
	SMSSenderID    int64
	ChatServiceID  int64
	FallbackSender int64 // SMS sender of the chat -> SMS fallback, zero when none
	Planned        int
	Counts         StatusCounts
	FallbackCounts StatusCounts
	FailureReason  string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	StartedAt      *time.Time
	CompletedAt    *time.Time
	// CancelledAt is set when the campaign was cancelled: it is then
	// Completed, its messages not handed to a provider Failed (details
	// CANCELLED).
	CancelledAt *time.Time
	// ValidFor, when positive, is how long the messages of a bulk or
	// direct campaign stay worth sending, counted from the campaign's
	// start: one still Pending after StartedAt + ValidFor fails EXPIRED
	// without reaching a provider.
	ValidFor time.Duration
	// SendWindow, when set, keeps a bulk campaign's messages to a part of
	// the day in each recipient's local time.
	SendWindow *SendWindow
	// WaitingForWindow counts, when the campaign has a SendWindow, its
	// Pending messages held back until a later time (the window's
	// opening, or a retry's backoff). It is worked out when the campaign
	// is read (campaign.Service.GetCampaign), not stored.
	WaitingForWindow int
	// ScheduledAt is when a Ready campaign starts by itself (the start's
	// sendAt); it stays once the campaign started on its schedule, and is
	// cleared by a start by hand.
	ScheduledAt *time.Time
}

// Message is one message to one phone number.
//
// A chat message may carry the rendered text of its SMS fallback
// (FallbackContent). A fallback SMS carries the id of the chat message it
// stands in for (FallbackFor). Config, when not nil, overrides the
// campaign's chat extras for this message (placeholders rendered in
// buttonUrl or fileUrl).
type Message struct {
	ID                ID
	CompanyID         ID
	CampaignID        ID
	Channel           Channel
	Phone             string
	ExternalUserID    string
	Content           string
	Config            *ChatConfig
	FallbackContent   string
	FallbackFor       ID
	Status            MessageStatus
	Details           string
	SMSErrorCode      string
	ProviderMessageID string
	Attempts          int
	DueAt             time.Time // when a Pending message may be claimed next
	LeaseUntil        time.Time // when a Sending message's claim expires
	CreatedAt         time.Time
	UpdatedAt         time.Time
	SentAt            *time.Time
	DeliveredAt       *time.Time
	SeenAt            *time.Time
	// Route names the SMPP connector an SMS went through, when the SMS
	// sender routes among several; empty otherwise.
	Route string
	// ExpiresAt, when set, is when the message stops being worth sending
	// (a transactional message's validity, counted from its creation; a
	// fallback SMS inherits its chat message's): one still Pending then
	// fails EXPIRED without reaching a provider.
	ExpiresAt *time.Time
}

// IsFallback reports whether m is an SMS sent in place of a chat message.
func (m *Message) IsFallback() bool { return !m.FallbackFor.IsZero() }

// SurveyResult is the first answer of a recipient to a Survey message.
type SurveyResult struct {
	ID             ID
	CompanyID      ID
	CampaignID     ID
	MessageID      ID
	Phone          string
	ExternalUserID string
	OptionIndex    int
	OptionText     string
	TrackingData   string
	RespondedAt    time.Time
}

// PageRequest asks for one page of a list: Page is 1-based, PageSize at
// most MaxPageSize.
type PageRequest struct {
	Page     int
	PageSize int
}

// Paging limits of the API (docs/api.md).
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Offset is the number of rows before the page.
func (p PageRequest) Offset() int { return (p.Page - 1) * p.PageSize }

// Normalize fills defaults and checks the limits.
func (p PageRequest) Normalize() (PageRequest, error) {
	if p.Page == 0 {
		p.Page = 1
	}
	if p.PageSize == 0 {
		p.PageSize = DefaultPageSize
	}
	var fe FieldErrors
	if p.Page < 1 {
		fe.Add("page", "page must be at least 1")
	}
	if p.PageSize < 1 || p.PageSize > MaxPageSize {
		fe.Add("pageSize", "pageSize must be between 1 and %d", MaxPageSize)
	}
	return p, fe.Err()
}

// TotalPages is the number of pages needed for total rows.
func (p PageRequest) TotalPages(total int) int {
	if p.PageSize <= 0 || total <= 0 {
		return 0
	}
	return (total + p.PageSize - 1) / p.PageSize
}

// CampaignFilter selects campaigns of GET /campaigns. Hidden (direct-send)
// campaigns are never listed.
type CampaignFilter struct {
	Mode   SendingMode    // empty: every mode
	Status CampaignStatus // empty: every status
	PageRequest
}

// MessageFilter selects messages of GET /messages: by phone number,
// external user id, campaign and status (each when given), created between
// From and To (inclusive; zero: open). Messages come newest first: by
// CreatedAt, or by ID (the order they were made in) when the filter is
// on a campaign without a phone or external user id.
type MessageFilter struct {
	Phone          string
	ExternalUserID string
	CampaignID     ID
	Status         MessageStatus
	From, To       time.Time
	PageRequest
}

// SurveyResultFilter selects survey results of one campaign.
type SurveyResultFilter struct {
	CampaignID     ID
	Phone          string
	ExternalUserID string
	From, To       time.Time // respondedAt bounds, inclusive; zero: open
	OptionIndex    *int
	PageRequest
}

// CampaignTransition is a campaign status change, as a store applies it
// (campaign.Store.TransitionCampaign).
type CampaignTransition struct {
	CompanyID, CampaignID ID
	// From lists the statuses the campaign may be in; To is where it goes.
	From []CampaignStatus
	To   CampaignStatus
	// At is when it happens.
	At time.Time
	// Reason is the FailureReason of a move to Failed.
	Reason string
	// Scheduled makes the move the start a schedule asked for: it happens
	// only if the campaign is scheduled at or before At (else Conflict).
	// A move to InProgress that is not Scheduled drops any schedule.
	Scheduled bool
}

// InboundMessage is an SMS a person sent to one of the senders (a
// mobile-originated message), its parts put together.
type InboundMessage struct {
	ID ID
	// CompanyID is the company whose approved sender the message was sent
	// to; zero when no company's is.
	CompanyID  ID
	Phone      string // the person's number, digits only
	To         string // the destination: a sender id
	Text       string
	Parts      int
	ReceivedAt time.Time // when its last part came
}

// InboundFilter selects a company's inbound messages, latest first.
type InboundFilter struct {
	Phone string // digits only; empty: any
	PageRequest
}

// MessageTally counts a company's messages of one channel and one status,
// and for Failed messages of one reason: a row of a summary of messages
// (campaign.CampaignStore.SummarizeMessages).
type MessageTally struct {
	CompanyID ID
	Channel   Channel
	Status    MessageStatus
	// Reason is the details of the Failed messages counted (empty when
	// they carry none); empty for every other status.
	Reason string
	Count  int
}

// CompareTallies orders tallies by company, channel, status and reason.
func CompareTallies(a, b MessageTally) int {
	if c := bytes.Compare(a.CompanyID[:], b.CompanyID[:]); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Channel), string(b.Channel)); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Status), string(b.Status)); c != 0 {
		return c
	}
	return strings.Compare(a.Reason, b.Reason)
}
