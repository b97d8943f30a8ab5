package messaging

import "fmt"

// Channel is the channel a message travels on. The values are the API's
// wire values.
type Channel string

// Channels.
const (
	ChannelSMS  Channel = "Smpp" // SMS over SMPP
	ChannelChat Channel = "Chat" // the rich chat-application channel
)

// Valid reports whether c is a known channel.
func (c Channel) Valid() bool { return c == ChannelSMS || c == ChannelChat }

// SendingMode tells bulk campaigns from transactional ones.
type SendingMode string

// Sending modes.
const (
	ModeBulk          SendingMode = "Bulk"
	ModeTransactional SendingMode = "Transactional"
)

// ParseSendingMode checks a wire value.
func ParseSendingMode(s string) (SendingMode, error) {
	switch m := SendingMode(s); m {
	case ModeBulk, ModeTransactional:
		return m, nil
	}
	return "", Invalidf("sendingMode", "sendingMode must be Bulk or Transactional")
}

// CampaignStatus is the lifecycle state of a campaign.
type CampaignStatus string

// Campaign statuses.
const (
	CampaignDraft      CampaignStatus = "Draft"
	CampaignQueuing    CampaignStatus = "Queuing"
	CampaignReady      CampaignStatus = "Ready"
	CampaignInProgress CampaignStatus = "InProgress"
	CampaignPaused     CampaignStatus = "Paused"
	CampaignCompleted  CampaignStatus = "Completed"
	CampaignFailed     CampaignStatus = "Failed"
)

// CampaignStatuses lists every campaign status.
func CampaignStatuses() []CampaignStatus {
	return []CampaignStatus{CampaignDraft, CampaignQueuing, CampaignReady, CampaignInProgress,
		CampaignPaused, CampaignCompleted, CampaignFailed}
}

// ParseCampaignStatus reads a campaign status as the API writes it.
func ParseCampaignStatus(s string) (CampaignStatus, error) {
	for _, st := range CampaignStatuses() {
		if string(st) == s {
			return st, nil
		}
	}
	return "", Invalidf("status", "status must be one of Draft, Queuing, Ready, InProgress, Paused, Completed, Failed")
}

// MessageStatus is the delivery state of one message.
type MessageStatus string

// Message statuses, in their forward order. Failed is final and can be
// reached from any status before Delivered.
const (
	StatusPending   MessageStatus = "Pending"
	StatusSending   MessageStatus = "Sending"
	StatusSent      MessageStatus = "Sent"
	StatusDelivered MessageStatus = "Delivered"
	StatusSeen      MessageStatus = "Seen"
	StatusFailed    MessageStatus = "Failed"
)

// MessageStatuses lists every message status in forward order.
func MessageStatuses() []MessageStatus {
	return []MessageStatus{StatusPending, StatusSending, StatusSent, StatusDelivered, StatusSeen, StatusFailed}
}

// ParseMessageStatus reads a message status as the API writes it.
func ParseMessageStatus(s string) (MessageStatus, error) {
	for _, st := range MessageStatuses() {
		if string(st) == s {
			return st, nil
		}
	}
	return "", Invalidf("status", "status must be one of Pending, Sending, Sent, Delivered, Seen, Failed")
}

// rank orders the statuses on the path Pending -> Sending -> Sent ->
// Delivered -> Seen.
func (s MessageStatus) rank() int {
	switch s {
	case StatusPending:
		return 1
	case StatusSending:
		return 2
	case StatusSent:
		return 3
	case StatusDelivered:
		return 4
	case StatusSeen:
		return 5
	case StatusFailed:
		return 6
	}
	return 0
}

// Valid reports whether s is a known status.
func (s MessageStatus) Valid() bool { return s.rank() > 0 }

// Final reports whether nothing more happens to a message in s as far as
// the send goes (Delivered may still become Seen).
func (s MessageStatus) Final() bool {
	return s == StatusDelivered || s == StatusSeen || s == StatusFailed
}

// Unsent reports whether a message in s has not been handed to a provider
// yet: it still counts against the company's pending capacity and keeps a
// bulk campaign from completing.
func (s MessageStatus) Unsent() bool { return s == StatusPending || s == StatusSending }

// CanAdvance reports whether a message may move from s to next. Statuses
// only move forward: Pending -> Sending -> Sent -> Delivered -> Seen, any
// status before Delivered may become Failed, and steps may be skipped (a
// receipt can be applied to a message whose Sent was not recorded yet).
// Sending -> Pending is the one step back: the recovery of a message whose
// send was interrupted. Nothing leaves Failed or Seen.
func (s MessageStatus) CanAdvance(next MessageStatus) bool {
	if !s.Valid() || !next.Valid() {
		return false
	}
	switch {
	case s == StatusFailed || s == StatusSeen:
		return false
	case next == StatusFailed:
		return s.rank() < StatusDelivered.rank()
	case s == StatusSending && next == StatusPending:
		return true
	}
	return next.rank() > s.rank()
}

// MessageType is the chat message type, 1 to 8. SMS templates always
// carry MessageType 1.
type MessageType int

// Chat message types.
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

// Valid reports whether t is one of the eight chat message types.
func (t MessageType) Valid() bool { return t >= TypeSimpleText && t <= TypeFile }

// String returns the API's name of the type.
func (t MessageType) String() string {
	switch t {
	case TypeSimpleText:
		return "SimpleText"
	case TypeImageOnly:
		return "ImageOnly"
	case TypeButtonPlusText:
		return "ButtonPlusText"
	case TypeImagePlusText:
		return "ImagePlusText"
	case TypeCarousel:
		return "Carousel"
	case TypeSurvey:
		return "Survey"
	case TypeVideo:
		return "Video"
	case TypeFile:
		return "File"
	}
	return fmt.Sprintf("MessageType(%d)", int(t))
}

// Bounds of a validity period (validityPeriod, in seconds).
const (
	MinValidity = 60
	MaxValidity = 604800 // 7 days
)

// DetailsExpired is the details of a message that ran out of validity
// before it reached a provider (and of a chat message the provider let
// expire).
const DetailsExpired = "EXPIRED"

// CheckValidity checks a validityPeriod given to the API (seconds; 0: not
// given): an Invalid error on field when out of bounds.
func CheckValidity(field string, seconds int) error {
	if seconds != 0 && (seconds < MinValidity || seconds > MaxValidity) {
		return Invalidf(field, "%s must be between %d and %d seconds", field, MinValidity, MaxValidity)
	}
	return nil
}
