package optout

import (
	"context"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Filter selects a company's opt-outs, latest first.
type Filter struct {
	Phone string // digits only; empty: any
	messaging.PageRequest
}

// Store is what the opt-out use cases need from storage. A change is
// written with an optout.changed event for the company's subscribed
// webhook endpoints, in the same transaction.
type Store interface {
	// AddOptOut records o unless the number is opted out of that scope
	// already, and reports whether it did.
	AddOptOut(ctx context.Context, o OptOut) (bool, error)
	// RemoveOptOut removes the number's opt-out of scope, at at, from
	// source, and reports whether there was one.
	RemoveOptOut(ctx context.Context, companyID messaging.ID, phone string, scope Scope, source Source, at time.Time) (bool, error)
	// ListOptOuts returns one page of the company's opt-outs matching f,
	// latest first, and how many match.
	ListOptOuts(ctx context.Context, companyID messaging.ID, f Filter) ([]OptOut, int, error)
	// Keywords returns the company's own keywords, and false when it set
	// none.
	Keywords(ctx context.Context, companyID messaging.ID) (Keywords, bool, error)
	// SetKeywords makes k the company's keywords.
	SetKeywords(ctx context.Context, companyID messaging.ID, k Keywords) error
	// OptedOut returns those of phones (digits only) opted out of a scope
	// covering channel ch.
	OptedOut(ctx context.Context, companyID messaging.ID, phones []string, ch messaging.Channel) (map[string]bool, error)
}
