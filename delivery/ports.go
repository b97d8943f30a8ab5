package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// SMS is one text to submit to an SMSC. The adapter chooses the encoding
// (GSM-7 when every character allows it, else UCS-2) and splits long texts
// into concatenated parts.
type SMS struct {
	MessageID messaging.ID // Herald's id, for logs and correlation
	CompanyID messaging.ID // whose message it is, for routes by company
	From      string       // the approved sender name (alphanumeric)
	To        string       // digits only, international
	Text      string
	// Validity, when positive, is how long the SMSC should keep trying to
	// deliver (SMPP validity_period); zero: the SMSC's default.
	Validity time.Duration
	// Withdraw, when not nil, is closed once the SMS is no longer to be
	// submitted (its campaign was paused or cancelled). A sender that has
	// not written any part of it to the SMSC yet then gives up and returns
	// ErrWithdrawn; once a part is on the wire, the SMS is finished.
	Withdraw <-chan struct{}
}

// ErrWithdrawn is the error of a send given up, before any part of it was
// written, because its message was withdrawn (SMS.Withdraw). The message
// is not sent: it goes back to Pending, or fails CANCELLED when its
// campaign was cancelled.
var ErrWithdrawn = errors.New("withdrawn before it was submitted")

// SMSResult is what the SMSC answered to a submitted SMS: one provider
// message id per part, in part order.
type SMSResult struct {
	PartIDs []string
	// Connector names the SMPP connector that took it, when the sender
	// routes among several (recorded as the message's route).
	Connector string
}

// SMSSender submits SMS. Send blocks until the SMSC answered every part or
// ctx ends; callers run many Sends concurrently and the adapter bounds how
// many are outstanding. Errors are *SendError (classified) or wrapped
// context errors.
type SMSSender interface {
	Send(ctx context.Context, sms SMS) (SMSResult, error)
}

// ReadyWaiter is implemented by senders that can tell whether a send could
// go out now, such as an SMPP client that is bound only while its SMSC
// connection is up. A lane whose sender implements it waits in WaitReady
// before each claim, so that while the provider cannot be reached no
// message is claimed and none uses up its attempts on sends that never
// leave. WaitReady returns nil once sends can go out, or an error when ctx
// ended or the sender was closed.
type ReadyWaiter interface {
	WaitReady(ctx context.Context) error
}

// SendLimiter is implemented by senders that bound how many sends may be
// in flight at once for a while, such as a chat client whose provider
// stopped answering: it lets one send through at a time (a probe) until
// the provider answers again, instead of every claimed message failing in
// turn and retrying against a provider that is down. A lane whose sender
// implements it keeps at most SendLimit messages claimed and not recorded
// (0: no bound but the lane's concurrency). Together with ReadyWaiter,
// whose WaitReady can space the probes out, it keeps an outage from
// turning into a storm of requests.
type SendLimiter interface {
	SendLimit() int
}

// Receipt is a delivery report from the SMSC for one part.
type Receipt struct {
	ProviderID string    // normalised provider message id of the part
	State      string    // DELIVRD, UNDELIV, EXPIRED, REJECTD, DELETED, UNKNOWN, ACCEPTD, ENROUTE
	Err        string    // the report's err field, as sent ("000" when none)
	At         time.Time // when the report says it happened (receipt time when absent)
}

// ReceiptHandler stores receipts. An SMPP adapter calls it for every
// delivery report and acknowledges the report (deliver_sm_resp) only after
// it returned nil; on an error it answers with a failure status so the SMSC
// sends it again. It may be called from many goroutines at once.
type ReceiptHandler func(ctx context.Context, r Receipt) error

// SendError is a classified send failure.
type SendError struct {
	// Permanent failures end the message Failed; the others are retried
	// with backoff.
	Permanent bool
	// Code is the provider's code (an SMPP command_status as 0x%08X, a
	// chat status number), empty when none.
	Code string
	// Details is the short reason stored on a failed message.
	Details string
	// Reason is a chat failure's reason (ChatFailure), empty for SMS.
	Reason ChatReason
	// Provider is the provider's own word for a chat failure (its code or
	// title), for logs.
	Provider string
	// RetryAfter, when positive, is how long the provider asked to wait
	// before the next attempt (a rate limit).
	RetryAfter time.Duration
	Err        error
}

// Error implements error.
func (e *SendError) Error() string {
	kind := "transient"
	if e.Permanent {
		kind = "permanent"
	}
	s := fmt.Sprintf("%s send failure", kind)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Details != "" {
		s += ": " + e.Details
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *SendError) Unwrap() error { return e.Err }

// IsPermanent reports whether err is a permanent send failure. Anything
// that is not a *SendError (a timeout, a dropped connection) is transient.
func IsPermanent(err error) bool {
	var se *SendError
	return errors.As(err, &se) && se.Permanent
}

// MinChatTTL is the shortest time to live the chat provider takes.
const MinChatTTL = 30 * time.Second

// ChatSender sends chat messages to a provider. Errors are *SendError
// made with ChatFailure (Reason set; RetryAfter when the provider asked
// to wait), or wrapped context errors (transient).
type ChatSender interface {
	SendChat(ctx context.Context, m ChatSend) (ChatAccepted, error)
}

// InboundPart is one deliver_sm that is not a receipt: a part (or the
// whole) of an SMS a person sent. Text is the part's text, decoded from its
// data coding. Parts of one message share From, To, Ref and Count, and
// are numbered Seq from 1 to Count; a message in one part has Count 1.
type InboundPart struct {
	From, To   string
	Text       string
	Ref        int
	Count, Seq int
	At         time.Time
}

// InboundHandler stores an inbound part; the SMPP adapter acknowledges
// the part only once it returned nil (else the SMSC sends it again).
type InboundHandler func(ctx context.Context, p InboundPart) error
