package chat

import (
	"strconv"

	"github.com/heraldhq/herald/delivery"
)

// Status codes of the chat provider.
// They come in the status field of a send_message response and in the
// error_code of a failed status callback.
const (
	StatusSuccess            = 0
	StatusInternalFailure    = 1
	StatusBadServiceID       = 2
	StatusBadData            = 3
	StatusBadMessageType     = 5
	StatusBadParameters      = 6
	StatusTimeout            = 7
	StatusUserBlocked        = 8
	StatusNotViberUser       = 9
	StatusNoSuitableDevice   = 10
	StatusAlreadySent        = 12
	StatusNotPermitted       = 13
	StatusInvalidTTL         = 20
	StatusInvalidPhoneNumber = 27
)

// Class is what a provider status code means for the message.
type Class int

// Classes of status codes.
const (
	// ClassAccepted: status 0, the provider took the message.
	ClassAccepted Class = iota + 1
	// ClassAlreadySent: status 12, the same seq was accepted before; an
	// idempotent retry, a success.
	ClassAlreadySent
	// ClassTransient: the provider could not take the message now; the
	// same message (same seq) may be sent again later.
	ClassTransient
	// ClassPermanent: the message is refused and no retry changes that.
	// Unknown codes are permanent.
	ClassPermanent
	// ClassFallback: permanent, and a trigger of the chat -> SMS fallback
	// (8 USER_BLOCKED, 9 NOT_VIBER_USER, 10 NO_SUITABLE_DEVICE).
	ClassFallback
)

// String returns the class name.
func (c Class) String() string {
	switch c {
	case ClassAccepted:
		return "accepted"
	case ClassAlreadySent:
		return "already-sent"
	case ClassTransient:
		return "transient"
	case ClassPermanent:
		return "permanent"
	case ClassFallback:
		return "fallback"
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// Success reports whether the message counts as accepted by the provider.
func (c Class) Success() bool { return c == ClassAccepted || c == ClassAlreadySent }

// Permanent reports whether the message failed for good (ClassFallback
// included).
func (c Class) Permanent() bool { return c == ClassPermanent || c == ClassFallback }

// LookupStatus returns the name and class of a provider status code. An
// unknown code is named by its number ("42") and is permanent.
func LookupStatus(code int) (name string, class Class) {
	switch code {
	case StatusSuccess:
		return "SUCCESS", ClassAccepted
	case StatusInternalFailure:
		return "INTERNAL_FAILURE", ClassTransient
	case StatusBadServiceID:
		return "BAD_SERVICE_ID", ClassPermanent
	case StatusBadData:
		return "BAD_DATA", ClassPermanent
	case StatusBadMessageType:
		return "BAD_MESSAGE_TYPE", ClassPermanent
	case StatusBadParameters:
		return "BAD_PARAMETERS", ClassPermanent
	case StatusTimeout:
		return "TIMEOUT", ClassTransient
	case StatusUserBlocked:
		return "USER_BLOCKED", ClassFallback
	case StatusNotViberUser:
		return "NOT_VIBER_USER", ClassFallback
	case StatusNoSuitableDevice:
		return "NO_SUITABLE_DEVICE", ClassFallback
	case StatusAlreadySent:
		return "ALREADY_SENT", ClassAlreadySent
	case StatusNotPermitted:
		return "NOT_PERMITTED", ClassPermanent
	case StatusInvalidTTL:
		return "INVALID_TTL", ClassPermanent
	case StatusInvalidPhoneNumber:
		return "INVALID_PHONE_NUMBER", ClassPermanent
	}
	return strconv.Itoa(code), ClassPermanent
}

// IsFallbackCode reports whether a chat failure with this code triggers the
// SMS fallback, whether it came in a send response or in a failed status
// callback: its reason (ReasonOf) falls back in delivery.ChatCodes.
func IsFallbackCode(code int) bool {
	return delivery.ChatCodes()[ReasonOf(code)].Fallback
}

// Reasons maps the failure codes of Herald's chat protocol to Herald's
// neutral failure reasons (delivery.ChatCodes). A code not in the table
// is a rejection (delivery.ReasonRejected).
func Reasons() map[int]delivery.ChatReason {
	return map[int]delivery.ChatReason{
		StatusInternalFailure:    delivery.ReasonTransient,
		StatusBadServiceID:       delivery.ReasonServiceRefused,
		StatusBadData:            delivery.ReasonRejected,
		StatusBadMessageType:     delivery.ReasonUnsupported,
		StatusBadParameters:      delivery.ReasonRejected,
		StatusTimeout:            delivery.ReasonTransient,
		StatusUserBlocked:        delivery.ReasonBlocked,
		StatusNotViberUser:       delivery.ReasonNotOnChannel,
		StatusNoSuitableDevice:   delivery.ReasonNoSuitableDevice,
		StatusNotPermitted:       delivery.ReasonNotPermitted,
		StatusInvalidTTL:         delivery.ReasonRejected,
		StatusInvalidPhoneNumber: delivery.ReasonInvalidNumber,
	}
}

// ReasonOf returns the neutral reason of a failure code (Reasons).
func ReasonOf(code int) delivery.ChatReason {
	if r, ok := Reasons()[code]; ok {
		return r
	}
	return delivery.ReasonRejected
}

// StatusError returns the *delivery.SendError of a failure code: made by
// delivery.ChatFailure from its neutral reason (ReasonOf), so that Code
// and Details are the reason's in delivery.ChatCodes ("8",
// "USER_BLOCKED") and a failed message's details read the same whether
// the send's answer or a later callback reported the failure. Provider
// keeps the protocol's own name and code ("BAD_PARAMETERS (6)") for the
// logs. Permanent unless the class is transient. It returns nil for the
// success codes 0 and 12.
func StatusError(code int) *delivery.SendError {
	name, class := LookupStatus(code)
	if class.Success() {
		return nil
	}
	se := delivery.ChatFailure(ReasonOf(code), name+" ("+strconv.Itoa(code)+")", nil)
	se.Permanent = class.Permanent()
	return se
}
