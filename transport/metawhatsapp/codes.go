package metawhatsapp

import (
	"strconv"
	"strings"

	"github.com/heraldhq/herald/delivery"
)

// Code is what one of Meta's error codes means to Herald.
type Code struct {
	Title  string              // Meta's title of the code
	Reason delivery.ChatReason // Herald's neutral reason
	// RateLimit: the code is a throughput or pair limit; the failure
	// wraps delivery.ErrRateLimited.
	RateLimit bool
}

// Codes is the one table of Meta's error codes Herald knows, from Meta's
// "WhatsApp error codes" page. A code it does not hold is judged by the
// HTTP status of the answer (see reasonFor).
func Codes() map[int]Code {
	return map[int]Code{
		// Authorization and integrity: every message of the service
		// would fail alike.
		0:      {"AuthException", delivery.ReasonServiceRefused, false},
		3:      {"API Method", delivery.ReasonServiceRefused, false},
		10:     {"Permission Denied", delivery.ReasonServiceRefused, false},
		33:     {"Business phone number deleted", delivery.ReasonServiceRefused, false},
		190:    {"Access token has expired", delivery.ReasonServiceRefused, false},
		368:    {"Blocked for a policy violation", delivery.ReasonServiceRefused, false},
		131005: {"Access denied", delivery.ReasonServiceRefused, false},
		131031: {"Account has been locked", delivery.ReasonServiceRefused, false},
		131042: {"Business eligibility payment issue", delivery.ReasonServiceRefused, false},
		131045: {"Incorrect certificate", delivery.ReasonServiceRefused, false},
		133010: {"Phone number not registered", delivery.ReasonServiceRefused, false},
		// Throttling.
		4:      {"API Too Many Calls", delivery.ReasonTransient, true},
		80007:  {"Rate limit issues", delivery.ReasonTransient, true},
		130429: {"Rate limit hit", delivery.ReasonTransient, true},
		131048: {"Spam rate limit hit", delivery.ReasonTransient, true},
		131056: {"Pair rate limit hit", delivery.ReasonTransient, true},
		// Meta's side, for now.
		1:      {"API Unknown", delivery.ReasonTransient, false},
		2:      {"API Service", delivery.ReasonTransient, false},
		131000: {"Something went wrong", delivery.ReasonTransient, false},
		131016: {"Service unavailable", delivery.ReasonTransient, false},
		131057: {"Account in maintenance mode", delivery.ReasonTransient, false},
		133004: {"Server temporarily unavailable", delivery.ReasonTransient, false},
		// The person.
		131026: {"Message undeliverable", delivery.ReasonNotOnChannel, false},
		131050: {"Person stopped the marketing messages", delivery.ReasonBlocked, false},
		// Policy: not to this person now.
		131047: {"Re-engagement message", delivery.ReasonNotPermitted, false},
		131030: {"Number not in the test allow list", delivery.ReasonNotPermitted, false},
		131049: {"Meta chose not to deliver", delivery.ReasonNotPermitted, false},
		130472: {"Number held out by an experiment", delivery.ReasonNotPermitted, false},
		130497: {"Business restricted in the person's country", delivery.ReasonNotPermitted, false},
		// The message.
		131051: {"Unsupported message type", delivery.ReasonUnsupported, false},
		100:    {"Invalid parameter", delivery.ReasonRejected, false},
		131008: {"Required parameter is missing", delivery.ReasonRejected, false},
		131009: {"Parameter value is not valid", delivery.ReasonRejected, false},
		131021: {"Recipient cannot be sender", delivery.ReasonRejected, false},
		131052: {"Media download error", delivery.ReasonRejected, false},
		131053: {"Media upload error", delivery.ReasonRejected, false},
		132000: {"Template parameter count mismatch", delivery.ReasonRejected, false},
		132001: {"Template does not exist", delivery.ReasonRejected, false},
		132005: {"Template text too long once filled", delivery.ReasonRejected, false},
		132007: {"Template format characters refused", delivery.ReasonRejected, false},
		132012: {"Template parameter format mismatch", delivery.ReasonRejected, false},
		132015: {"Template is paused", delivery.ReasonRejected, false},
		132016: {"Template is disabled", delivery.ReasonRejected, false},
		135000: {"Generic user error", delivery.ReasonRejected, false},
	}
}

// reasonFor maps one error of Meta to Herald's reason. httpStatus is the
// answer's status (0 for a status webhook); details are the error's
// details. 131026 speaks of a number not on WhatsApp or of an app too
// old: the second, named by the details, is ReasonNoSuitableDevice. An
// unknown code is judged by the HTTP status: 429 and 5xx transient, 401
// and 403 the service refused, others rejected.
func reasonFor(code, httpStatus int, details string) (reason delivery.ChatReason, rateLimit bool) {
	if c, ok := Codes()[code]; ok {
		if code == 131026 && mentionsAppVersion(details) {
			return delivery.ReasonNoSuitableDevice, false
		}
		return c.Reason, c.RateLimit
	}
	if code >= 200 && code <= 299 { // API Permission
		return delivery.ReasonServiceRefused, false
	}
	switch {
	case httpStatus == 429:
		return delivery.ReasonTransient, true
	case httpStatus >= 500, httpStatus == 408:
		return delivery.ReasonTransient, false
	case httpStatus == 401, httpStatus == 403:
		return delivery.ReasonServiceRefused, false
	}
	return delivery.ReasonRejected, false
}

func mentionsAppVersion(details string) bool {
	d := strings.ToLower(details)
	return strings.Contains(d, "version") || strings.Contains(d, "update")
}

// detail is the provider's own word for a failure, for logs: its code
// and title.
func detail(code int, title string) string {
	if title == "" {
		if c, ok := Codes()[code]; ok {
			title = c.Title
		}
	}
	s := strconv.Itoa(code)
	if title != "" {
		s += " " + title
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
