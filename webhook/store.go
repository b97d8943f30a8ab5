package webhook

import (
	"context"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Store is what the endpoint use cases need from storage. Every method
// that takes a companyID only sees that company's endpoints: another
// company's is reported as NotFound.
type Store interface {
	// CreateWebhook inserts e, unless the company has max endpoints
	// already: then it stores nothing and returns an Invalid error.
	CreateWebhook(ctx context.Context, e *Endpoint, max int) error
	// ListWebhooks returns the company's endpoints, oldest first.
	ListWebhooks(ctx context.Context, companyID messaging.ID) ([]Endpoint, error)
	// GetWebhook returns one of the company's endpoints, or NotFound.
	GetWebhook(ctx context.Context, companyID, id messaging.ID) (Endpoint, error)
	// DeleteWebhook removes the endpoint, or returns NotFound.
	DeleteWebhook(ctx context.Context, companyID, id messaging.ID) error
	// RotateWebhookSecret makes secret the endpoint's secret and its
	// current one the previous secret, signing until previousUntil; it
	// returns the endpoint as stored, or NotFound.
	RotateWebhookSecret(ctx context.Context, companyID, id messaging.ID, secret string, previousUntil time.Time) (Endpoint, error)
	// ListDeliveries returns one page of the endpoint's deliveries, the
	// latest event first, and how many it has; NotFound when the company
	// has no such endpoint.
	ListDeliveries(ctx context.Context, companyID, endpointID messaging.ID, page messaging.PageRequest) ([]Delivery, int, error)
	// Redeliver makes the endpoint's delivery of the event wait again,
	// due at now, its attempts kept; NotFound when the company has no
	// such endpoint or the endpoint no delivery of the event.
	Redeliver(ctx context.Context, companyID, endpointID, eventID messaging.ID, now time.Time) error
}
