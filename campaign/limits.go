package campaign

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// retryHint completes a RateLimited error from the store with the API's
// error name, a message that tells what holds the company's capacity,
// and RetryAfterSeconds: the time the company's recent drain rate takes
// to free room for the request, when it is draining at all. Capacity held
// by Ready or Paused campaigns is named, since waiting does not free it.
// Other errors pass unchanged; when the store cannot say, the hint falls
// back to Limits.RetryAfter.
func (s *Service) retryHint(ctx context.Context, companyID messaging.ID, err error) error {
	var e *messaging.Error
	if !errors.As(err, &e) || e.Code != messaging.RateLimited || e.Capacity == nil {
		return err
	}
	key := capacityKey{companyID, e.Capacity.CurrentPending}
	use, ok := s.capacity.Get(key, time.Now())
	if !ok {
		var uerr error
		if use, uerr = s.store.CapacityUse(ctx, companyID); uerr != nil {
			s.log.WarnContext(ctx, "reading capacity use for a 429", "company", companyID, "err", uerr)
			return s.limits.RetryHint(err)
		}
		s.capacity.Put(key, use, time.Now())
	}
	c, msg := CapacityHint(*e.Capacity, use, time.Now(), s.limits.RetryAfter)
	return &messaging.Error{Code: messaging.RateLimited, Name: messaging.NameTooManyPending, Message: msg, Capacity: &c, Err: err}
}

// capacityKey keys the cache of capacity uses: a company at a pending
// count.
type capacityKey struct {
	company messaging.ID
	pending int
}

// maxRetryAfter bounds the wait a 429 suggests.
const maxRetryAfter = 24 * time.Hour

// CapacityHint works out when a company refused for want of capacity c
// can expect room, from its capacity use at now: it returns c completed
// (RetryAfterSeconds, DrainRate, HeldBy) and the 429's message saying why.
// fallback is the wait suggested when nothing drains.
func CapacityHint(c messaging.Capacity, use messaging.CapacityUse, now time.Time, fallback time.Duration) (messaging.Capacity, string) {
	c.AvailableCapacity = max(0, c.MaxAllowed-c.CurrentPending)
	c.HeldBy = use.HeldBy
	if span := now.Sub(use.Since).Seconds(); span > 0 && use.Drained > 0 {
		c.DrainRate = math.Round(float64(use.Drained)/span*10) / 10
	}
	idle := use.HeldBy[messaging.CampaignReady] + use.HeldBy[messaging.CampaignPaused]
	draining := max(0, c.CurrentPending-idle)
	need := c.RequestedCount - c.AvailableCapacity
	head := fmt.Sprintf("Pending message capacity exceeded: %d pending, %d requested, %d allowed", c.CurrentPending, c.RequestedCount, c.MaxAllowed)
	held := ""
	if idle > 0 {
		held = fmt.Sprintf("%d of the pending messages belong to Ready or Paused campaigns, which free nothing until they are started, resumed or cancelled", idle)
	}
	wait := func(n int) int {
		secs := math.Ceil(float64(n) / c.DrainRate)
		return int(min(max(secs, 1), maxRetryAfter.Seconds()))
	}
	var msg string
	switch {
	case c.RequestedCount > c.MaxAllowed:
		c.RetryAfterSeconds = int(fallback / time.Second)
		msg = fmt.Sprintf("%s: the request is larger than the whole capacity; split it", head)
	case c.DrainRate > 0 && need <= draining:
		c.RetryAfterSeconds = wait(need)
		msg = fmt.Sprintf("%s; at the current %.1f messages/s there is room in about %d seconds", head, c.DrainRate, c.RetryAfterSeconds)
		if held != "" {
			msg += "; " + held
		}
	case c.DrainRate > 0:
		c.RetryAfterSeconds = wait(draining)
		msg = fmt.Sprintf("%s; %s, and what is being sent (%.1f messages/s) frees only %d in about %d seconds", head, held, c.DrainRate, draining, c.RetryAfterSeconds)
	case draining == 0:
		c.RetryAfterSeconds = int(fallback / time.Second)
		msg = fmt.Sprintf("%s; nothing is being sent: %s", head, held)
	default:
		c.RetryAfterSeconds = int(fallback / time.Second)
		msg = fmt.Sprintf("%s; nothing was sent in the last %d seconds", head, int(now.Sub(use.Since).Seconds()))
		if held != "" {
			msg += "; " + held
		}
	}
	return c, msg
}
