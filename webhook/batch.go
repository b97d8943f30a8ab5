package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Limits of an endpoint's batches.
const (
	// MaxBatchEvents is the most events one request may carry.
	MaxBatchEvents = 1000
	// MaxBatchWait is the longest an endpoint may ask Herald to wait for
	// a batch to fill.
	MaxBatchWait = time.Minute
)

// EventCountHeader carries, on a request of an endpoint taking batches,
// how many events its body holds.
const EventCountHeader = "Herald-Event-Count"

// Batch is how an endpoint takes its events. The zero value sends one
// event a request, the body being the event.
//
// With MaxEvents set, one request carries up to MaxEvents events, the
// body being {"events": [event, ...]} in the order they happened for
// each subject. Herald sends what is due at once when it has MaxEvents
// events, or when the oldest has waited MaxWait. A batch that fails is
// sent again whole, with the same events and ids: a receiver skips the
// ids it has taken.
type Batch struct {
	MaxEvents int
	MaxWait   time.Duration
}

// Batched reports whether the endpoint takes several events a request.
func (b Batch) Batched() bool { return b.MaxEvents > 0 }

// BatchInput is the batch settings of a registration, as given: nil
// fields were absent.
type BatchInput struct {
	MaxEvents *int
	MaxWaitMs *int
}

// CheckBatch returns the batch settings in, or an Invalid error naming
// each field at fault ("batch.maxEvents", "batch.maxWaitMs"). A nil in
// is the zero Batch: one event a request.
func CheckBatch(in *BatchInput) (Batch, error) {
	if in == nil {
		return Batch{}, nil
	}
	var fe messaging.FieldErrors
	var b Batch
	switch {
	case in.MaxEvents == nil:
		fe.Add("batch.maxEvents", "batch.maxEvents is required: from 1 to %d", MaxBatchEvents)
	case *in.MaxEvents < 1 || *in.MaxEvents > MaxBatchEvents:
		fe.Add("batch.maxEvents", "batch.maxEvents must be from 1 to %d", MaxBatchEvents)
	default:
		b.MaxEvents = *in.MaxEvents
	}
	if in.MaxWaitMs != nil {
		if *in.MaxWaitMs < 0 || *in.MaxWaitMs > int(MaxBatchWait/time.Millisecond) {
			fe.Add("batch.maxWaitMs", "batch.maxWaitMs must be from 0 to %d", int(MaxBatchWait/time.Millisecond))
		} else {
			b.MaxWait = time.Duration(*in.MaxWaitMs) * time.Millisecond
		}
	}
	if err := fe.Err(); err != nil {
		return Batch{}, err
	}
	return b, nil
}

// ReceivedEvent is an event as a receiver reads it from a request's body.
type ReceivedEvent struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt string          `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

// ErrNotEvents means a body is neither an event nor a batch of events.
var ErrNotEvents = errors.New("webhook: the body is neither an event nor {\"events\": [...]}")

// ParseEvents returns the events of a request's body, which Verify has
// accepted: one event, or a batch ({"events": [...]}) in order. Every
// event has an id.
func ParseEvents(body []byte) ([]ReceivedEvent, error) {
	var v struct {
		ReceivedEvent
		Events *[]ReceivedEvent `json:"events"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotEvents, err)
	}
	out := []ReceivedEvent{v.ReceivedEvent}
	if v.Events != nil {
		out = *v.Events
	}
	for i, e := range out {
		if e.ID == "" {
			return nil, fmt.Errorf("%w: event %d has no id", ErrNotEvents, i)
		}
	}
	return out, nil
}
