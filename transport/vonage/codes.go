package vonage

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/delivery"
)

// ErrorCode is one of the Messages API's error codes: its title and the
// neutral reason Herald gives it.
type ErrorCode struct {
	Code   int
	Title  string
	Reason delivery.ChatReason
}

// ThrottledCode is the code of a send refused for the account's rate: a
// rate limit like HTTP 429.
const ThrottledCode = 1000

// AlreadySentCode is the code of a message the provider says it sent
// before: a success at send time, nothing to report in a callback.
const AlreadySentCode = 1320

// ErrorCodes is the table of the Messages API's error codes (sent in the
// error answers of a send, as the fragment of the problem's type, and in
// the error object of rejected or undeliverable status webhooks) and the
// reason each maps to. A code not in the table is a rejection.
func ErrorCodes() []ErrorCode {
	return []ErrorCode{
		{ThrottledCode, "Throttled", delivery.ReasonTransient},
		{1010, "Missing params", delivery.ReasonRejected},
		{1020, "Invalid params", delivery.ReasonRejected},
		{1021, "Invalid tag", delivery.ReasonRejected},
		{1022, "Invalid template", delivery.ReasonRejected},
		{1030, "Internal error", delivery.ReasonTransient},
		{1040, "Invalid message", delivery.ReasonInvalidNumber},
		{1050, "Number barred", delivery.ReasonBlocked},
		{1060, "Partner account barred", delivery.ReasonServiceRefused},
		{1070, "Partner quota exceeded", delivery.ReasonServiceRefused},
		{1080, "Account not enabled for REST", delivery.ReasonServiceRefused},
		{1090, "Message too long", delivery.ReasonRejected},
		{1100, "Communication failed", delivery.ReasonTransient},
		{1120, "Illegal sender address", delivery.ReasonServiceRefused},
		{1130, "Invalid TTL", delivery.ReasonRejected},
		{1140, "Facility not allowed", delivery.ReasonServiceRefused},
		{1150, "Invalid message class", delivery.ReasonRejected},
		{1160, "Non white-listed destination", delivery.ReasonNotPermitted},
		{1170, "Invalid or missing MSISDN", delivery.ReasonInvalidNumber},
		{1180, "Absent subscriber temporary", delivery.ReasonTransient},
		{1190, "Absent subscriber permanent", delivery.ReasonInvalidNumber},
		{1200, "Portability error", delivery.ReasonInvalidNumber},
		{1210, "Anti-spam rejection", delivery.ReasonRejected},
		{1220, "Handset busy", delivery.ReasonTransient},
		{1230, "Network error", delivery.ReasonTransient},
		{1240, "Illegal number (opted out)", delivery.ReasonBlocked},
		{1241, "Too many send requests", delivery.ReasonTransient},
		{1250, "Unroutable", delivery.ReasonRejected},
		{1260, "Destination unreachable", delivery.ReasonNotOnChannel},
		{1270, "Subscriber age restriction", delivery.ReasonNotPermitted},
		{1280, "Number blocked by carrier", delivery.ReasonRejected},
		{1290, "Pre-paid insufficient funds", delivery.ReasonRejected},
		{1300, "Not part of the provider network", delivery.ReasonNotOnChannel},
		{1310, "Not suitable device", delivery.ReasonNoSuitableDevice},
		{AlreadySentCode, "Message already sent", ""},
		{1330, "Unknown", delivery.ReasonRejected},
		{1331, "Provider error", delivery.ReasonTransient},
		{1340, "Outside of the allowed window", delivery.ReasonNotPermitted},
		{1360, "TTL was activated", delivery.ReasonExpired},
		{1380, "Invalid resource", delivery.ReasonRejected},
		{1381, "Resource size is too large", delivery.ReasonRejected},
		{1382, "Resource type is invalid", delivery.ReasonRejected},
	}
}

// codeTable is ErrorCodes by code.
type codeTable map[int]ErrorCode

func newCodeTable() codeTable {
	t := make(codeTable)
	for _, c := range ErrorCodes() {
		t[c.Code] = c
	}
	return t
}

// reason returns the reason of code and a word for logs ("1300 Not part
// of the provider network"); an unknown code is a rejection.
func (t codeTable) reason(code int) (delivery.ChatReason, string) {
	c, ok := t[code]
	if !ok {
		return delivery.ReasonRejected, strconv.Itoa(code)
	}
	return c.Reason, strconv.Itoa(code) + " " + c.Title
}

// Problem is the provider's error body (RFC 7807): in the answer of a
// refused send, and as the error object of a status webhook, whose title
// is the numeric code.
type Problem struct {
	Type     string          `json:"type"`
	Title    json.RawMessage `json:"title,omitempty"`
	Detail   string          `json:"detail,omitempty"`
	Instance string          `json:"instance,omitempty"`
	// InvalidParameters lists the fields a validation error found wrong.
	InvalidParameters []InvalidParameter `json:"invalid_parameters,omitempty"`
}

// InvalidParameter is one field a validation error found wrong.
type InvalidParameter struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Code returns the problem's numeric code: the fragment of its type
// (".../api-errors/messages#1300") or its title when that is a number;
// 0 when neither is.
func (p Problem) Code() int {
	if i := strings.LastIndexByte(p.Type, '#'); i >= 0 {
		if n, err := strconv.Atoi(p.Type[i+1:]); err == nil {
			return n
		}
	}
	var n int
	if json.Unmarshal(p.Title, &n) == nil {
		return n
	}
	var s string
	if json.Unmarshal(p.Title, &s) == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			return n
		}
	}
	return 0
}

// Word is the problem's own name for logs: the fragment of its type, or
// its title.
func (p Problem) Word() string {
	if i := strings.LastIndexByte(p.Type, '#'); i >= 0 && i+1 < len(p.Type) {
		return p.Type[i+1:]
	}
	var s string
	if json.Unmarshal(p.Title, &s) == nil {
		return s
	}
	return string(p.Title)
}
