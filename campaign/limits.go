package campaign

import (
	"errors"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Default limits.
const (
	DefaultMaxPending    = 50_000
	DefaultMaxRecipients = 200_000
	DefaultRetryAfter    = 60 * time.Second
)

// Limits bound what one company may ask for. The zero value means the
// defaults.
type Limits struct {
	// MaxPending is the pending capacity of a company: messages admitted
	// but not yet handed to a provider, plus those reserved by campaigns
	// still being prepared. Default 50,000.
	MaxPending int
	// MaxRecipients is the most recipients one request may carry.
	// Default 200,000.
	MaxRecipients int
	// RetryAfter is what a rate-limited caller is told to wait
	// (retryAfterSeconds and the Retry-After header). Default 60 s.
	RetryAfter time.Duration
}

// WithDefaults returns l with zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxPending <= 0 {
		l.MaxPending = DefaultMaxPending
	}
	if l.MaxRecipients <= 0 {
		l.MaxRecipients = DefaultMaxRecipients
	}
	if l.RetryAfter <= 0 {
		l.RetryAfter = DefaultRetryAfter
	}
	return l
}

// CheckRecipients rejects a request with more than MaxRecipients
// recipients. It is checked before capacity: an oversized request is a 400,
// never a 429.
func (l Limits) CheckRecipients(n int) error {
	l = l.WithDefaults()
	if n > l.MaxRecipients {
		return messaging.Errorf(messaging.Invalid, messaging.NameTooManyRecipients,
			"Too many recipients: %d given, at most %d per request", n, l.MaxRecipients)
	}
	return nil
}

// RetryHint completes a RateLimited error from a store with the API's
// error name, message and RetryAfterSeconds. Other errors pass unchanged.
func (l Limits) RetryHint(err error) error {
	var e *messaging.Error
	if !errors.As(err, &e) || e.Code != messaging.RateLimited || e.Capacity == nil {
		return err
	}
	l = l.WithDefaults()
	c := *e.Capacity
	c.RetryAfterSeconds = int(l.RetryAfter / time.Second)
	out := messaging.CapacityExceeded(c)
	out.Err = err
	return out
}
