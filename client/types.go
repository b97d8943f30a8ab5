package client

// Channel is the channel of a template, a campaign or a message.
type Channel string

// Channels.
const (
	ChannelSMS  Channel = "Smpp"
	ChannelChat Channel = "Chat"
)

// CampaignStatus is the status of a campaign.
type CampaignStatus string

// Campaign statuses; docs/api.md tells their lifecycle.
const (
	CampaignDraft      CampaignStatus = "Draft"
	CampaignQueuing    CampaignStatus = "Queuing"
	CampaignReady      CampaignStatus = "Ready"
	CampaignInProgress CampaignStatus = "InProgress"
	CampaignPaused     CampaignStatus = "Paused"
	CampaignCompleted  CampaignStatus = "Completed"
	CampaignFailed     CampaignStatus = "Failed"
)

// SendingMode tells a bulk campaign from a transactional one.
type SendingMode string

// Sending modes.
const (
	SendingBulk          SendingMode = "Bulk"
	SendingTransactional SendingMode = "Transactional"
)

// MessageStatus is the status of a message.
type MessageStatus string

// Message statuses: Pending, Sending, Sent, then Delivered (and Seen, for
// chat), or Failed.
const (
	MessagePending   MessageStatus = "Pending"
	MessageSending   MessageStatus = "Sending"
	MessageSent      MessageStatus = "Sent"
	MessageDelivered MessageStatus = "Delivered"
	MessageSeen      MessageStatus = "Seen"
	MessageFailed    MessageStatus = "Failed"
)

// Final tells whether a message in status s has settled: Delivered, Seen
// or Failed.
func (s MessageStatus) Final() bool {
	return s == MessageDelivered || s == MessageSeen || s == MessageFailed
}

// MessageType is the type of a chat template; SMS templates are
// SimpleText.
type MessageType int

// Message types.
const (
	TypeSimpleText     MessageType = 1
	TypeImageOnly      MessageType = 2
	TypeButtonPlusText MessageType = 3
	TypeImagePlusText  MessageType = 4
	TypeCarousel       MessageType = 5
	TypeSurvey         MessageType = 6
	TypeVideo          MessageType = 7
	TypeFile           MessageType = 8
)

// ChatService is a chat service (a brand at the chat provider) of the
// company.
type ChatService struct {
	ID        int64  `json:"id"`
	BrandName string `json:"brandName"`
	// Channel is the chat network the service reaches: "viber" or
	// "whatsapp". A template of a WhatsApp service may name a
	// ProviderTemplate.
	Channel string `json:"channel"`
	// Provider is the chat provider: "herald", "vonage", "infobip" or
	// "meta-whatsapp".
	Provider string `json:"provider"`
}

// SMSSender is an approved SMS sender (alphanumeric originator) of the
// company.
type SMSSender struct {
	ID       int64  `json:"id"`
	SenderID string `json:"senderId"`
}
