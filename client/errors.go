package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/client/internal/rest"
)

// Error is an answer of the API that is not a success: every method of
// Client (and of package admin) returns a *Error for those, so that
//
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest { ... }
//
// tells them from transport errors, which are returned wrapped, with the
// method and path of the request.
type Error struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Name is the API's name of the error (its "error" field): the HTTP
	// phrase ("Bad Request", "Not Found") or a specific name such as
	// "Invalid SMS Sender" or "Too many pending messages".
	Name string
	// Message is the sentence the API wrote for a person.
	Message string
	// ValidationErrors maps the JSON path of each faulty field
	// ("recipients[3].phoneNumber") to what is wrong with it; nil unless
	// the request failed validation.
	ValidationErrors map[string]string
	// RetryAfter is how long the API asked to wait before trying again
	// (its Retry-After header, or retryAfterSeconds); 0 when it did not
	// say.
	RetryAfter time.Duration
	// Capacity describes the company's pending capacity on a 429 "Too
	// many pending messages"; nil otherwise.
	Capacity *Capacity
	// RequestID is the answer's X-Request-Id, the key to the server's log.
	RequestID string
	// Method and Path are the request's (the path without its query).
	Method, Path string
}

// Capacity is the pending capacity of a company as a 429 tells it.
type Capacity struct {
	// CurrentPending is the company's pending messages; RequestedCount
	// what the request asked for; MaxAllowed the capacity; and
	// AvailableCapacity what is left of it.
	CurrentPending    int `json:"currentPending"`
	RequestedCount    int `json:"requestedCount"`
	MaxAllowed        int `json:"maxAllowed"`
	AvailableCapacity int `json:"availableCapacity"`
	// DrainRatePerSecond is how many of the company's pending messages
	// left the count per second lately; 0 when nothing is being sent.
	DrainRatePerSecond float64 `json:"drainRatePerSecond"`
	// HeldBy splits the pending messages by the status of the campaigns
	// holding them ("InProgress", "Ready", ...). Those of Ready and Paused
	// campaigns are not freed by waiting.
	HeldBy map[string]int `json:"heldBy"`
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("herald: ")
	if e.Method != "" {
		b.WriteString(e.Method + " " + e.Path + ": ")
	}
	fmt.Fprintf(&b, "%d", e.StatusCode)
	if e.Name != "" {
		b.WriteString(" " + e.Name)
	}
	if e.Message != "" && e.Message != e.Name {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// ErrorFromAnswer decodes a failed answer of a Herald API (status, headers
// and body) to the request method path, as the methods of Client and of
// package admin return it; for code that calls the API by other means. A
// body that is not the API's JSON error (a proxy's page, say) gives the
// HTTP phrase as Name and the start of the body as Message.
func ErrorFromAnswer(method, path string, status int, header http.Header, body []byte) *Error {
	return newError(&rest.Failure{Method: method, Path: path, Status: status, Header: header, Body: body,
		RetryAfter: rest.RetryAfter(header, body, time.Now())})
}

// asError is the Config.NewError of the Callers of this module.
func asError(f *rest.Failure) error { return newError(f) }

// newError decodes a failed answer (see ErrorFromAnswer).
func newError(f *rest.Failure) *Error {
	e := &Error{StatusCode: f.Status, RetryAfter: f.RetryAfter, RequestID: f.Header.Get("X-Request-Id"), Method: f.Method, Path: f.Path}
	var body struct {
		Error            string            `json:"error"`
		Message          string            `json:"message"`
		ValidationErrors map[string]string `json:"validationErrors"`
		*Capacity                          // set when the body has its fields: a 429
	}
	if err := json.Unmarshal(f.Body, &body); err == nil && body.Error != "" {
		e.Name, e.Message, e.ValidationErrors, e.Capacity = body.Error, body.Message, body.ValidationErrors, body.Capacity
		return e
	}
	e.Name = http.StatusText(f.Status)
	e.Message = snippet(f.Body)
	return e
}

// snippet is the start of a body that is not JSON, for a message.
func snippet(b []byte) string {
	const most = 200
	s := strings.TrimSpace(string(b))
	if len(s) <= most {
		return strings.ToValidUTF8(s, "?")
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "?") + "..."
}

// statusOf returns the status of err's *Error, 0 when it has none.
func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// IsNotFound tells whether err is a 404: an unknown route, or a resource
// that does not exist or belongs to another company.
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsRateLimited tells whether err is a 429: the company's pending capacity
// is used up (see Error.Capacity and Error.RetryAfter).
func IsRateLimited(err error) bool { return statusOf(err) == http.StatusTooManyRequests }

// IsBadRequest tells whether err is a 400: the request breaks a rule
// (see Error.Name and Error.ValidationErrors).
func IsBadRequest(err error) bool { return statusOf(err) == http.StatusBadRequest }

// IsUnauthorized tells whether err is a 401: the API key (or the admin
// token) is missing, unknown or revoked.
func IsUnauthorized(err error) bool { return statusOf(err) == http.StatusUnauthorized }

// IsConflict tells whether err is a 409: the resource changed meanwhile,
// a request with the same Idempotency-Key is still running, or (admin) a
// connector a route still names.
func IsConflict(err error) bool { return statusOf(err) == http.StatusConflict }

// IsUnavailable tells whether err is a 503: the company is not activated
// (no RetryAfter), or the server cannot answer now (RetryAfter says when
// to try again).
func IsUnavailable(err error) bool { return statusOf(err) == http.StatusServiceUnavailable }
