package infobip

import (
	"strings"

	"github.com/heraldhq/herald/delivery"
)

// Infobip's status groups (status.groupId and status.groupName).
const (
	GroupPending       = 1
	GroupUndeliverable = 2
	GroupDelivered     = 3
	GroupExpired       = 4
	GroupRejected      = 5
	// GroupAccepted has no number in the reference; it is known by its
	// name only.
	GroupAccepted = 0
)

// StatusDuplicateMessageID is the status of a message whose id Infobip
// took before (REJECTED_DUPLICATE_MESSAGE_ID): an idempotent retry.
const StatusDuplicateMessageID = 23

// StatusCode is one of Infobip's status ids and the neutral reason a
// message that ends with it failed for.
type StatusCode struct {
	ID     int
	Name   string
	Reason delivery.ChatReason
}

// StatusCodes is the table of the failed statuses Herald tells apart, by
// status id. A status of the UNDELIVERABLE, EXPIRED or REJECTED group
// that is not in it fails for its group's reason (GroupReason).
func StatusCodes() []StatusCode {
	return []StatusCode{
		{4, "UNDELIVERABLE_REJECTED_OPERATOR", delivery.ReasonRejected},
		{6, "REJECTED_NETWORK", delivery.ReasonNotPermitted},
		{8, "REJECTED_PREFIX_MISSING", delivery.ReasonInvalidNumber},
		{9, "UNDELIVERABLE_NOT_DELIVERED", delivery.ReasonNotOnChannel},
		{10, "REJECTED_DND", delivery.ReasonNotPermitted},
		{11, "REJECTED_SOURCE", delivery.ReasonServiceRefused},
		{12, "REJECTED_NOT_ENOUGH_CREDITS", delivery.ReasonServiceRefused},
		{13, "REJECTED_SENDER", delivery.ReasonServiceRefused},
		{14, "REJECTED_DESTINATION", delivery.ReasonInvalidNumber},
		{15, "EXPIRED_EXPIRED", delivery.ReasonExpired},
		{16, "REJECTED_NOT_REACHABLE", delivery.ReasonNotOnChannel},
		{18, "REJECTED_DESTINATION_NOT_REGISTERED", delivery.ReasonNotOnChannel},
		{19, "REJECTED_ROUTE_NOT_AVAILABLE", delivery.ReasonServiceRefused},
		{20, "REJECTED_FLOODING_FILTER", delivery.ReasonNotPermitted},
		{21, "REJECTED_SYSTEM_ERROR", delivery.ReasonTransient},
		{25, "REJECTED_MESSAGE_TOO_LONG", delivery.ReasonRejected},
		{29, "EXPIRED_DLR_UNKNOWN", delivery.ReasonExpired},
		{51, "MISSING_TO", delivery.ReasonInvalidNumber},
	}
}

// ErrorWord is a word of an Infobip error name and the reason an error
// so named means. Infobip passes on the chat network's refusals as error
// names; these words are Viber's own names for the refusals that fall
// back to SMS.
type ErrorWord struct {
	Word   string
	Reason delivery.ChatReason
}

// ErrorWords is the table of error name words, in the order they are
// tried: an error name holding the word (in any case) fails its message
// for the word's reason, before the status id is looked at.
func ErrorWords() []ErrorWord {
	return []ErrorWord{
		{"BLOCKED", delivery.ReasonBlocked},
		{"NOT_VIBER_USER", delivery.ReasonNotOnChannel},
		{"UNKNOWN_SUBSCRIBER", delivery.ReasonNotOnChannel},
		{"NO_SUITABLE_DEVICE", delivery.ReasonNoSuitableDevice},
	}
}

// GroupReason is the reason of a failed status that neither its error
// name nor its id tells more about: UNDELIVERABLE is a person Viber could
// not reach (SMS fallback), EXPIRED an expired message, and REJECTED a
// message Infobip refused.
func GroupReason(group int) delivery.ChatReason {
	switch group {
	case GroupUndeliverable:
		return delivery.ReasonNotOnChannel
	case GroupExpired:
		return delivery.ReasonExpired
	}
	return delivery.ReasonRejected
}

// Status is Infobip's status object.
type Status struct {
	GroupID     int    `json:"groupId"`
	GroupName   string `json:"groupName"`
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Action      string `json:"action,omitempty"`
}

// Error is Infobip's error object of a report.
type Error struct {
	GroupID     int    `json:"groupId"`
	GroupName   string `json:"groupName"`
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Permanent   bool   `json:"permanent"`
}

// group returns the status's group number, from its name when the
// number is missing.
func (s Status) group() int {
	if s.GroupID != 0 {
		return s.GroupID
	}
	switch strings.ToUpper(s.GroupName) {
	case "PENDING":
		return GroupPending
	case "UNDELIVERABLE":
		return GroupUndeliverable
	case "DELIVERED":
		return GroupDelivered
	case "EXPIRED":
		return GroupExpired
	case "REJECTED":
		return GroupRejected
	}
	return GroupAccepted
}

// Accepted reports whether the status says Infobip took the message
// (the PENDING, ACCEPTED and DELIVERED groups).
func (s Status) Accepted() bool {
	switch s.group() {
	case GroupPending, GroupDelivered:
		return true
	case GroupAccepted:
		return strings.EqualFold(s.GroupName, "ACCEPTED") || s.GroupName == ""
	}
	return false
}

// FailureReason is the neutral reason of a failed status with its
// error (nil when none): the error name's words first (ErrorWords), then
// the status id (StatusCodes), then the status group (GroupReason).
func FailureReason(s Status, e *Error) delivery.ChatReason {
	if e != nil && e.ID != 0 {
		name := strings.ToUpper(e.Name)
		for _, w := range ErrorWords() {
			if strings.Contains(name, w.Word) {
				return w.Reason
			}
		}
	}
	for _, c := range StatusCodes() {
		if c.ID == s.ID {
			return c.Reason
		}
	}
	return GroupReason(s.group())
}

// detail is the provider's words for a status, for logs.
func detail(s Status, e *Error) string {
	d := s.Name
	if d == "" {
		d = s.GroupName
	}
	if e != nil && e.ID != 0 && e.Name != "" {
		d += "/" + e.Name
	}
	return d
}
