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
	From      string       // the approved sender name (alphanumeric)
	To        string       // digits only, international
	Text      string
}

// SMSResult is what the SMSC answered to a submitted SMS: one provider
// message id per part, in part order.
type SMSResult struct {
	PartIDs []string
}

// SMSSender submits SMS. Send blocks until the SMSC answered every part or
// ctx ends; callers run many Sends concurrently and the adapter bounds how
// many are outstanding. Errors are *SendError (classified) or wrapped
// context errors.
type SMSSender interface {
	Send(ctx context.Context, sms SMS) (SMSResult, error)
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
	Err     error
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
