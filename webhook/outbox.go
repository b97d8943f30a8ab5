package webhook

import (
	"context"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// DeliveryState is where a delivery stands.
type DeliveryState int

// The delivery states.
const (
	// Waiting: not taken by the endpoint yet; sent (again) at NextAt.
	Waiting DeliveryState = iota
	// Delivered: the endpoint answered 2xx.
	Delivered
	// GaveUp: no attempt succeeded within the retry period, or the
	// endpoint answered 410 Gone.
	GaveUp
)

// Delivery is one event on its way to one endpoint: the store writes one
// for each endpoint subscribed to the event's type when it writes the
// event.
//
// For an endpoint taking batches, a store may keep the events of one write
// as one delivery, up to the endpoint's batch size: it reads them as
// deliveries in a row with the same ID and outcome, and they are sent in
// one request and recorded by one Attempt.
type Delivery struct {
	ID         messaging.ID
	EndpointID messaging.ID
	Event      Event
	State      DeliveryState
	Attempts   int
	// NextAt is when the next attempt is due, while Waiting.
	NextAt time.Time
	// The last attempt: when, the HTTP status (0 when there was no
	// answer), the error when there was none, and how long it took.
	LastAt      *time.Time
	LastStatus  int
	LastError   string
	LastLatency time.Duration
}

// Outbox is what sending events needs from storage: the deliveries that
// wait, and the outcome of their attempts.
type Outbox interface {
	// WaitingDeliveries returns about limit deliveries of the endpoint
	// that wait, with their events, in the order they were written. The
	// deliveries sharing an ID come whole and in a row.
	WaitingDeliveries(ctx context.Context, endpointID messaging.ID, limit int) ([]Delivery, error)
	// LeaseWebhooks gives owner, until until, the enabled endpoints whose
	// lease is free at now or already owner's, and returns them: one
	// process sends to an endpoint at a time, which keeps each subject's
	// events in order across processes.
	LeaseWebhooks(ctx context.Context, owner string, now, until time.Time) ([]Endpoint, error)
	// RecordAttempts stores the outcomes of attempts, each on its
	// delivery (one more attempt), in one transaction. One attempt
	// records every event of a delivery sharing its ID.
	RecordAttempts(ctx context.Context, attempts []Attempt) error
	// DisableWebhook stops the endpoint: it is no longer leased, and
	// reads show it disabled at at, for reason.
	DisableWebhook(ctx context.Context, id messaging.ID, at time.Time, reason string) error
}

// Attempt is the outcome of one attempt to deliver, as recorded.
type Attempt struct {
	DeliveryID messaging.ID
	At         time.Time
	// Status is the endpoint's HTTP status, 0 when it gave none; Error
	// says what went wrong when it did not answer 2xx.
	Status  int
	Error   string
	Latency time.Duration
	// State is where the delivery stands after the attempt: Delivered,
	// Waiting (tried again at NextAt) or GaveUp.
	State  DeliveryState
	NextAt time.Time
}

// Purger removes old events: the part of the outbox the sender's
// background purge needs.
type Purger interface {
	// PurgeEvents removes up to limit of the events written before
	// before, oldest first, with their deliveries, and returns how many
	// it removed.
	PurgeEvents(ctx context.Context, before time.Time, limit int) (int, error)
}
