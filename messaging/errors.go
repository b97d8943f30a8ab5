package messaging

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Code classifies an Error. The HTTP layer maps each code to one status in
// a single table.
type Code string

// Error codes.
const (
	Invalid      Code = "invalid"      // 400: the request breaks a rule
	NotFound     Code = "not_found"    // 404: unknown, or another company's
	Unauthorized Code = "unauthorized" // 401: missing, invalid or revoked key
	Conflict     Code = "conflict"     // 409: the state changed underneath
	Mismatch     Code = "mismatch"     // 422: an idempotency key reused for another request
	RateLimited  Code = "rate_limited" // 429: pending capacity exhausted
	Unavailable  Code = "unavailable"  // 503: company not set up, or storage unreachable
	Internal     Code = "internal"     // 500: never echoed to callers
)

// The `error` names of the API's error bodies (docs/api.md).
const (
	NameBadRequest               = "Bad Request"
	NameNotFound                 = "Not Found"
	NameUnauthorized             = "Unauthorized"
	NameServiceUnavailable       = "Service Unavailable"
	NameInternal                 = "Internal Server Error"
	NameConflict                 = "Conflict"
	NameTooManyPending           = "Too many pending messages"
	NameInvalidTemplateChannel   = "Invalid template channel type"
	NameNoValidPhoneNumbers      = "No valid phone numbers"
	NameTooManyRecipients        = "Too many recipients"
	NameCampaignNotActive        = "Campaign is not active"
	NameCannotAddToBulk          = "Cannot add messages to bulk campaign"
	NameNotSMSCampaign           = "Campaign is not an SMS campaign"
	NameNotChatCampaign          = "Campaign is not a Chat campaign"
	NameInvalidSMSSender         = "Invalid SMS Sender"
	NameInvalidChatService       = "Invalid Chat Service"
	NameFallbackUnsupportedChars = "SMS fallback text contains unsupported characters"
	NameFallbackSenderRequired   = "SMS fallback sender required"
	NameInvalidFallbackSender    = "Invalid SMS fallback sender"
	NameCampaignNotReady         = "Campaign is not ready"
)

// Capacity is the detail of a RateLimited error: the numbers of the API's
// 429 body.
type Capacity struct {
	CurrentPending    int
	RequestedCount    int
	MaxAllowed        int
	AvailableCapacity int
	RetryAfterSeconds int
	// DrainRate is how many of the company's pending messages left the
	// count per second lately (handed to a provider, or failed): what
	// RetryAfterSeconds was computed from. Zero: nothing is being sent.
	DrainRate float64
	// HeldBy is the pending count by the status of the campaigns holding
	// it; nil when not known.
	HeldBy map[CampaignStatus]int
}

// CapacityUse is what a company's pending count is made of, and how fast
// it drains.
type CapacityUse struct {
	// Drained is how many pending messages left the count (handed to a
	// provider, failed, cancelled) from Since until the store's now.
	Drained int
	Since   time.Time
	// HeldBy is the pending count by the status of the campaigns holding
	// it (reservations of Queuing campaigns included).
	HeldBy map[CampaignStatus]int
}

// Error is Herald's one error type. Name is the API's `error` string,
// Message the human sentence, Fields the per-field validation messages keyed
// by JSON field path (e.g. "typeSpecificConfig.items[0].imageUrl").
type Error struct {
	Code     Code
	Name     string
	Message  string
	Fields   map[string]string
	Capacity *Capacity
	// RetryAfter, on an Unavailable error, is how long a caller should
	// wait before trying again (the HTTP layer sends it as Retry-After);
	// zero when retrying will not help by itself (a company not set up).
	RetryAfter time.Duration
	Err        error // wrapped cause, never shown to callers
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Name)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if len(e.Fields) > 0 {
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(" (")
		for i, k := range keys {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s: %s", k, e.Fields[k])
		}
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an Error with the given code, spec name and message.
func Errorf(code Code, name, format string, args ...any) *Error {
	return &Error{Code: code, Name: name, Message: fmt.Sprintf(format, args...)}
}

// Invalidf returns a validation error on one field.
func Invalidf(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Code: Invalid, Name: NameBadRequest, Message: "Validation failed", Fields: map[string]string{field: msg}}
}

// NotFoundf returns a NotFound error.
func NotFoundf(format string, args ...any) *Error {
	return &Error{Code: NotFound, Name: NameNotFound, Message: fmt.Sprintf(format, args...)}
}

// CapacityExceeded returns the RateLimited error of an admission that
// would pass a company's pending capacity: pending messages now, requested
// by the admission, allowed in all. AvailableCapacity is derived; a
// RetryAfterSeconds of c, when set, is named in the message.
func CapacityExceeded(c Capacity) *Error {
	c.AvailableCapacity = max(0, c.MaxAllowed-c.CurrentPending)
	msg := fmt.Sprintf("Pending message capacity exceeded: %d pending, %d requested, %d allowed",
		c.CurrentPending, c.RequestedCount, c.MaxAllowed)
	if c.RetryAfterSeconds > 0 {
		msg += fmt.Sprintf("; retry after %d seconds", c.RetryAfterSeconds)
	}
	return &Error{Code: RateLimited, Name: NameTooManyPending, Message: msg, Capacity: &c}
}

// TemplateNotFound returns the NotFound error of a template that does not
// exist or belongs to another company: the two are not told apart.
func TemplateNotFound(id ID) *Error {
	return NotFoundf("Template %s not found or access denied", id)
}

// The NotFound errors of the other resources, one wording each, used by
// every store: another company's resource is reported as not found, the
// same as one that does not exist.

// CompanyNotFound is the NotFound error of a company.
func CompanyNotFound(id ID) *Error { return NotFoundf("Company %s not found", id) }

// CampaignNotFound is the NotFound error of a campaign.
func CampaignNotFound(id ID) *Error { return NotFoundf("Campaign %s not found", id) }

// MessageNotFound is the NotFound error of a message.
func MessageNotFound(id ID) *Error { return NotFoundf("Message %s not found", id) }

// SMSSenderNotFound is the NotFound error of an SMS sender.
func SMSSenderNotFound(id int64) *Error { return NotFoundf("SMS sender %d not found", id) }

// ChatServiceNotFound is the NotFound error of a chat service.
func ChatServiceNotFound(id int64) *Error { return NotFoundf("Chat service %d not found", id) }

// APIKeyNotFound is the NotFound error of an API key no company has.
func APIKeyNotFound() *Error { return NotFoundf("No company has this API key") }

// DefaultStoreRetryAfter is the RetryAfter of StoreUnavailable.
const DefaultStoreRetryAfter = 5 * time.Second

// NameSecretKeyMissing is the API's error string when the server has no
// key to encrypt a secret it was asked to store.
const NameSecretKeyMissing = "Secret key not configured"

// SecretKeyMissing returns the Unavailable error of a store asked to keep
// a secret (an SMPP password, a webhook signing secret) without a key to
// encrypt it: nothing was stored, and a retry fails the same way until the
// operator sets one. It carries no RetryAfter.
func SecretKeyMissing() *Error {
	return &Error{Code: Unavailable, Name: NameSecretKeyMissing,
		Message: "This server stores no new secret until its operator sets a secret key (HERALD_SECRET_KEY); nothing was changed"}
}

// StoreUnavailable returns the Unavailable error of a store that cannot be
// reached or is not accepting work yet (a database restarting, a lost
// connection): the request changed nothing and may be sent again after
// RetryAfter. cause is kept for logs.
func StoreUnavailable(cause error) *Error {
	return &Error{Code: Unavailable, Name: NameServiceUnavailable,
		Message: "The database is unavailable; retry later", RetryAfter: DefaultStoreRetryAfter, Err: cause}
}

// ErrorCode returns the code of err: the Code of the first *Error in its
// chain, or Internal.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return Internal
}

// IsCode reports whether err carries code.
func IsCode(err error, code Code) bool { return err != nil && ErrorCode(err) == code }

// FieldErrors collects validation messages field by field. The zero value
// is ready to use.
type FieldErrors map[string]string

// Add records msg for field unless the field already has a message (the
// first problem found on a field is the one reported).
func (f *FieldErrors) Add(field, format string, args ...any) {
	if *f == nil {
		*f = FieldErrors{}
	}
	if _, ok := (*f)[field]; !ok {
		(*f)[field] = fmt.Sprintf(format, args...)
	}
}

// Merge adds every entry of other, prefixing its keys with prefix.
func (f *FieldErrors) Merge(prefix string, other FieldErrors) {
	for k, v := range other {
		f.Add(prefix+k, "%s", v)
	}
}

// Err returns nil when no field failed, else an Invalid *Error carrying the
// fields.
func (f FieldErrors) Err() error {
	if len(f) == 0 {
		return nil
	}
	return &Error{Code: Invalid, Name: NameBadRequest, Message: "Validation failed", Fields: map[string]string(f)}
}
