package server

import (
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// statusOf is the one table from error codes to HTTP statuses. A code it
// does not know is a 500.
func statusOf(c messaging.Code) int {
	switch c {
	case messaging.Invalid:
		return http.StatusBadRequest
	case messaging.NotFound:
		return http.StatusNotFound
	case messaging.Unauthorized:
		return http.StatusUnauthorized
	case messaging.Conflict:
		return http.StatusConflict
	case messaging.Mismatch:
		return http.StatusUnprocessableEntity
	case messaging.RateLimited:
		return http.StatusTooManyRequests
	case messaging.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Names of errors the edge raises itself, beside those of package
// messaging.
const (
	nameMethodNotAllowed = "Method Not Allowed"
	nameTooLarge         = "Request Entity Too Large"
	nameRequestTimeout   = "Request Timeout"
	nameAdminDisabled    = "Admin API Disabled"
	internalMessage      = "An unexpected error occurred"
)

// errorBody is the JSON body of every error but 429.
type errorBody struct {
	Error            string            `json:"error"`
	Message          string            `json:"message"`
	ValidationErrors map[string]string `json:"validationErrors,omitempty"`
}

// rateLimitBody is the JSON body of a 429.
type rateLimitBody struct {
	Error             string `json:"error"`
	Message           string `json:"message"`
	CurrentPending    int    `json:"currentPending"`
	RequestedCount    int    `json:"requestedCount"`
	MaxAllowed        int    `json:"maxAllowed"`
	AvailableCapacity int    `json:"availableCapacity"`
	RetryAfterSeconds int    `json:"retryAfterSeconds"`
	// DrainRatePerSecond and HeldBy say where the wait comes from: how
	// many pending messages left per second lately, and which campaigns
	// (by status) hold the pending ones.
	DrainRatePerSecond float64                          `json:"drainRatePerSecond"`
	HeldBy             map[messaging.CampaignStatus]int `json:"heldBy"`
}

// httpError is an error of the edge itself that needs a status the code
// table does not give (405, 408, 413, 503 of the body budget).
type httpError struct {
	status  int
	name    string
	message string
	// retryAfter, when set, is sent as Retry-After.
	retryAfter time.Duration
	// cause is what the error stands for, for handlers mounted with
	// Config.Extra, which cannot know this type: a body that timed out is
	// os.ErrDeadlineExceeded.
	cause error
}

func (e *httpError) Error() string { return e.name + ": " + e.message }

// Unwrap returns the cause.
func (e *httpError) Unwrap() error { return e.cause }

// badRequest returns a 400 "Bad Request" with a message and no field.
func badRequest(format string, args ...any) error {
	return messaging.Errorf(messaging.Invalid, messaging.NameBadRequest, format, args...)
}

// invalidField returns a 400 "Bad Request" on one field; the message is
// the field's message.
func invalidField(field, msg string) error {
	return &messaging.Error{Code: messaging.Invalid, Name: messaging.NameBadRequest, Message: msg,
		Fields: map[string]string{field: msg}}
}

// fieldsMessage is the sentence of a validation error: the field messages
// themselves when there are few, sorted by field.
func fieldsMessage(fields map[string]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 1 {
		return fields[keys[0]]
	}
	const most = 5
	var b strings.Builder
	b.WriteString("Validation failed: ")
	for i, k := range keys {
		if i == most {
			b.WriteString("; and ")
			b.WriteString(strconv.Itoa(len(keys) - most))
			b.WriteString(" more")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fields[k])
	}
	return b.String()
}

// retryAfterSeconds is the Retry-After of a wait d: whole seconds,
// rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int {
	n := int((d + time.Second - 1) / time.Second)
	return max(n, 1)
}

// writeError answers err. A *messaging.Error is answered with the status of
// its code, its name, message and fields; an *httpError with its own
// status; anything else, and every Internal error, is logged with the
// request id and answered with a fixed 500. An error that tells how long
// to wait (messaging.Error.RetryAfter, a store restarting) is a 503 with
// Retry-After, whatever its code, and its cause is logged.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	if errors.As(err, &he) {
		if he.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(he.retryAfter)))
		}
		s.writeJSON(w, he.status, errorBody{Error: he.name, Message: he.message})
		return
	}
	var e *messaging.Error
	if errors.As(err, &e) && e.RetryAfter > 0 && e.Code != messaging.RateLimited {
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "unavailable",
			slog.String("requestId", requestID(r.Context())), slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.String("err", err.Error()))
		name := e.Name
		if e.Code != messaging.Unavailable || name == "" {
			name = messaging.NameServiceUnavailable
		}
		msg := e.Message
		if e.Code != messaging.Unavailable || msg == "" {
			msg = "The service is unavailable; retry later"
		}
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(e.RetryAfter)))
		s.writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: name, Message: msg})
		return
	}
	if !errors.As(err, &e) || statusOf(e.Code) == http.StatusInternalServerError {
		s.log.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("requestId", requestID(r.Context())), slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.String("err", err.Error()))
		s.writeJSON(w, http.StatusInternalServerError, errorBody{Error: messaging.NameInternal, Message: internalMessage})
		return
	}
	status := statusOf(e.Code)
	name := e.Name
	if name == "" {
		name = http.StatusText(status)
	}
	msg := e.Message
	if len(e.Fields) > 0 && (msg == "" || msg == "Validation failed") {
		msg = fieldsMessage(e.Fields)
	}
	if status == http.StatusTooManyRequests {
		var c messaging.Capacity
		if e.Capacity != nil {
			c = *e.Capacity
		}
		if c.RetryAfterSeconds <= 0 {
			c.RetryAfterSeconds = 1
		}
		w.Header().Set("Retry-After", strconv.Itoa(c.RetryAfterSeconds))
		s.writeJSON(w, status, rateLimitBody{Error: name, Message: msg, CurrentPending: c.CurrentPending,
			RequestedCount: c.RequestedCount, MaxAllowed: c.MaxAllowed, AvailableCapacity: c.AvailableCapacity,
			RetryAfterSeconds: c.RetryAfterSeconds, DrainRatePerSecond: c.DrainRate, HeldBy: heldBy(c.HeldBy)})
		return
	}
	if status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `ApiKey header="X-API-Key"`)
	}
	s.writeJSON(w, status, errorBody{Error: name, Message: msg, ValidationErrors: e.Fields})
}

// heldBy is the heldBy object of a 429: never null.
func heldBy(m map[messaging.CampaignStatus]int) map[messaging.CampaignStatus]int {
	if m == nil {
		return map[messaging.CampaignStatus]int{}
	}
	return m
}
