package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// ChatReason is why a chat message failed, in Herald's words. Provider
// adapters map their own error codes to these; the domain maps these to the
// codes of Herald's API (ChatCodes) and decides the SMS fallback from them.
type ChatReason string

// Chat failure reasons.
const (
	// ReasonBlocked: the person blocked the company's chat service.
	ReasonBlocked ChatReason = "blocked"
	// ReasonNotOnChannel: the number has no account on the chat app.
	ReasonNotOnChannel ChatReason = "not_on_channel"
	// ReasonNoSuitableDevice: the person's app cannot show this message
	// (an old version, a device without the feature).
	ReasonNoSuitableDevice ChatReason = "no_suitable_device"
	// ReasonExpired: the message was not delivered within its time to
	// live.
	ReasonExpired ChatReason = "expired"
	// ReasonRejected: the provider refused the content (a malformed or
	// unapproved message, a template it does not know).
	ReasonRejected ChatReason = "rejected"
	// ReasonUnsupported: the channel cannot carry this message type.
	ReasonUnsupported ChatReason = "unsupported"
	// ReasonServiceRefused: the provider refused the sender: an unknown
	// or inactive service, or credentials it does not accept.
	ReasonServiceRefused ChatReason = "service_refused"
	// ReasonNotPermitted: the provider may not send this message to this
	// person now (outside the customer's service window, a policy).
	ReasonNotPermitted ChatReason = "not_permitted"
	// ReasonInvalidNumber: the phone number is not a valid one.
	ReasonInvalidNumber ChatReason = "invalid_number"
	// ReasonTransient: the provider could not take the message now; the
	// same message may be sent again later (a timeout, a 5xx, a rate
	// limit).
	ReasonTransient ChatReason = "transient"
)

// ChatCode is the code and name a chat failure reason has in Herald's API
// (a failed message's details read "NAME (code)"), whether it is final,
// and whether it falls back to SMS.
type ChatCode struct {
	Code      int
	Name      string
	Permanent bool
	Fallback  bool
}

// ChatCodes is the one table of chat failure codes: each reason's code in
// Herald's API. The SMS fallback rule (NeedsFallback) reads it only.
func ChatCodes() map[ChatReason]ChatCode {
	return map[ChatReason]ChatCode{
		ReasonTransient:        {Code: 1, Name: "INTERNAL_FAILURE"},
		ReasonServiceRefused:   {Code: 2, Name: "BAD_SERVICE_ID", Permanent: true},
		ReasonRejected:         {Code: 3, Name: "BAD_DATA", Permanent: true},
		ReasonUnsupported:      {Code: 5, Name: "BAD_MESSAGE_TYPE", Permanent: true},
		ReasonBlocked:          {Code: 8, Name: "USER_BLOCKED", Permanent: true, Fallback: true},
		ReasonNotOnChannel:     {Code: 9, Name: "NOT_VIBER_USER", Permanent: true, Fallback: true},
		ReasonNoSuitableDevice: {Code: 10, Name: "NO_SUITABLE_DEVICE", Permanent: true, Fallback: true},
		ReasonNotPermitted:     {Code: 13, Name: "NOT_PERMITTED", Permanent: true},
		ReasonInvalidNumber:    {Code: 27, Name: "INVALID_PHONE_NUMBER", Permanent: true},
		ReasonExpired:          {Code: 0, Name: "EXPIRED", Permanent: true},
	}
}

// ChatFailure is the *SendError of a chat send that failed for reason:
// Permanent, Code and Details from ChatCodes, Reason set. detail is the
// provider's own word for it (its code or title), kept for logs; err the
// cause. An unknown reason is a permanent rejection.
func ChatFailure(reason ChatReason, detail string, err error) *SendError {
	c, ok := ChatCodes()[reason]
	if !ok {
		reason, c = ReasonRejected, ChatCodes()[ReasonRejected]
	}
	se := &SendError{Permanent: c.Permanent, Details: c.Name, Reason: reason, Provider: detail, Err: err}
	if c.Code != 0 {
		se.Code = fmt.Sprint(c.Code)
	}
	return se
}

// ChatSend is one chat message to send, rendered for its recipient, in
// Herald's words: an adapter maps it to its provider's request.
type ChatSend struct {
	MessageID messaging.ID // Herald's id: adapters send it as the provider's client reference
	CompanyID messaging.ID
	ServiceID int64  // Herald's chat service id
	Sender    string // the service's id at the provider (its ProviderServiceID)
	To        string // digits only, international
	// Ref is a number unique per message and the same on every retry, for
	// providers whose idempotency reference is a number.
	Ref    int64
	TTL    time.Duration // zero: the provider's default
	Type   messaging.MessageType
	Text   string
	Config messaging.ChatConfig
}

// ChatAccepted is a provider's acceptance of a chat message.
type ChatAccepted struct {
	ProviderID string // the provider's message id
	// AlreadySent: the provider had taken the same message before (an
	// idempotent retry); a success.
	AlreadySent bool
}

// ChatStatus is a status report of one chat message: Delivered, Seen or
// Failed (with Reason).
type ChatStatus struct {
	MessageID  messaging.ID // Herald's message id, from the provider's client reference
	ProviderID string       // the provider's message id, when it gives one
	// CompanyID, when set, is the company of the chat service the report
	// came through: a message of another company is left as it is (the
	// report is ignored). The chat router sets it.
	CompanyID messaging.ID
	Status    messaging.MessageStatus
	Reason    ChatReason // with Failed
	Detail    string     // the provider's own code or words, for logs
	At        time.Time  // when the provider says it happened (zero: now)
}

// Kinds of ChatInbound.
const (
	// InboundText: a message the person wrote (not a reply to an
	// option).
	InboundText = "text"
	// InboundReply: the person picked an option of a message (a survey
	// answer); OptionIndex says which.
	InboundReply = "reply"
	// InboundUnsubscribed: the person blocked the service.
	InboundUnsubscribed = "unsubscribed"
	// InboundSubscribed: the person allowed the service again.
	InboundSubscribed = "subscribed"
)

// ChatInbound is what a person sent on a chat channel to a service.
type ChatInbound struct {
	ServiceID int64 // Herald's chat service id
	// CompanyID is the service's company. The chat router sets it and
	// ServiceID for the adapter of each service; an adapter may leave both
	// empty.
	CompanyID messaging.ID
	// Sender is the service's id at the provider, when the provider names
	// it: the service is looked up by it when ServiceID is not known.
	Sender string
	Kind   string // InboundText, InboundReply, InboundUnsubscribed, InboundSubscribed
	// MessageID is the message replied to, when the provider says
	// (replies).
	MessageID messaging.ID
	Phone     string
	Text      string
	// OptionIndex is the 0-based option picked (replies), -1 when none.
	OptionIndex int
	At          time.Time
}

// Reporter takes what providers report back: SMS receipts, inbound SMS,
// chat statuses and what people send on chat channels. herald.New makes
// one and hands it to every transport it builds. Each method returns nil
// once the report is stored; an adapter acknowledges a report to its
// provider only then, so that the provider sends it again otherwise.
// Every method may be called from many goroutines at once.
type Reporter interface {
	Receipt(ctx context.Context, r Receipt) error
	InboundSMS(ctx context.Context, p InboundPart) error
	// ChatStatuses stores several status reports in one store write, and
	// says what became of each. An error means none is known to be
	// stored.
	ChatStatuses(ctx context.Context, ss []ChatStatus) ([]ChatEventOutcome, error)
	ChatInbound(ctx context.Context, in ChatInbound) (ChatEventOutcome, error)
}

// OnceReporter is a Reporter that can record the replay keys of status
// reports in the store write of the reports (ChatEvents.ChatStatusesOnce):
// a callback's reports are then taken once, and a failed write neither
// stores them nor remembers their keys. keyOf[i] is the index in keys of
// the key of ss[i]; nil: keys[i] is that of ss[i]. ok false means nothing
// was done:
// guard is not the store the reports go to, or the reports need another
// path; the caller records the keys in guard and calls ChatStatuses.
type OnceReporter interface {
	ChatStatusesOnce(ctx context.Context, guard any, keys []ReplayKey, ss []ChatStatus, keyOf []int) (seen []bool,
		out []ChatEventOutcome, ok bool, err error)
}

// ErrRateLimited wraps the transient send failures of a provider that
// answered with its rate limit; SendError.RetryAfter says how long it
// asked to wait.
var ErrRateLimited = errors.New("rate limited by the provider")

// ChatContactRecorder remembers when people last wrote to a chat service
// (the customer window some channels keep). The stores implement it.
type ChatContactRecorder interface {
	RecordInbound(ctx context.Context, serviceID int64, phone string, at time.Time) error
}

// Reports is a Reporter made of its parts. A nil part refuses what it
// would take, with an error, so that the provider sends it again.
type Reports struct {
	// Receipts stores SMS delivery receipts.
	Receipts ReceiptHandler
	// Inbound stores the parts of inbound SMS.
	Inbound InboundHandler
	// Chat stores chat statuses and what people send on chat channels.
	Chat *ChatEvents
}

var (
	_ Reporter     = Reports{}
	_ OnceReporter = Reports{}
)

// Receipt implements Reporter.
func (r Reports) Receipt(ctx context.Context, rc Receipt) error {
	if r.Receipts == nil {
		return errors.New("receipt: no receiver for this report")
	}
	return r.Receipts(ctx, rc)
}

// InboundSMS implements Reporter.
func (r Reports) InboundSMS(ctx context.Context, p InboundPart) error {
	if r.Inbound == nil {
		return errors.New("inbound SMS: no receiver for this report")
	}
	return r.Inbound(ctx, p)
}

// ChatStatuses implements Reporter.
func (r Reports) ChatStatuses(ctx context.Context, ss []ChatStatus) ([]ChatEventOutcome, error) {
	if r.Chat == nil {
		return nil, errors.New("chat statuses: no receiver for this report")
	}
	return r.Chat.ChatStatuses(ctx, ss)
}

// ChatStatusesOnce implements OnceReporter.
func (r Reports) ChatStatusesOnce(ctx context.Context, guard any, keys []ReplayKey, ss []ChatStatus,
	keyOf []int) ([]bool, []ChatEventOutcome, bool, error) {
	if r.Chat == nil {
		return nil, nil, false, nil
	}
	return r.Chat.ChatStatusesOnce(ctx, guard, keys, ss, keyOf)
}

// ChatInbound implements Reporter.
func (r Reports) ChatInbound(ctx context.Context, in ChatInbound) (ChatEventOutcome, error) {
	if r.Chat == nil {
		return ChatEventError, errors.New("chat inbound: no receiver for this report")
	}
	return r.Chat.ChatInbound(ctx, in)
}
