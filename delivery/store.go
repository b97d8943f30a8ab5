package delivery

import (
	"context"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Store is what the dispatcher needs from storage.
type Store interface {
	// ClaimDue atomically moves up to limit Pending messages of the given
	// channel that are due (DueAt <= now) and belong to InProgress
	// campaigns to Sending, with Attempts incremented and LeaseUntil set to
	// leaseUntil, and returns them oldest first. Concurrent claimers, in
	// one process or several sharing a database, never get the same
	// message.
	ClaimDue(ctx context.Context, channel messaging.Channel, now, leaseUntil time.Time, limit int) ([]messaging.Message, error)
	// ApplyUpdates applies status changes in one transaction. An update
	// whose move is not allowed by MessageStatus.CanAdvance (a late or
	// repeated report) is skipped; the result tells, update by update,
	// whether it was applied. Campaign counters and company pending counts
	// follow every applied change exactly.
	ApplyUpdates(ctx context.Context, updates []StatusUpdate) ([]bool, error)
	// RecoverExpired moves Sending messages whose lease ended before now
	// back to Pending, due at now, and returns how many it moved.
	RecoverExpired(ctx context.Context, now time.Time) (int, error)
	// CompleteDrained moves InProgress bulk campaigns none of whose
	// messages (fallback SMS included) is Pending or Sending to Completed
	// and returns how many it moved.
	CompleteDrained(ctx context.Context, now time.Time) (int, error)
}

// StatusUpdate is one message status change.
//
// At is when it happened: it sets SentAt on Sent, DeliveredAt on Delivered
// (and on Seen when Delivered was skipped), SeenAt on Seen. ProviderMessageID,
// Details and SMSErrorCode are stored when not empty. DueAt is used when
// the message goes back to Pending (a retry).
type StatusUpdate struct {
	MessageID         messaging.ID
	Status            messaging.MessageStatus
	At                time.Time
	ProviderMessageID string
	Details           string
	SMSErrorCode      string
	DueAt             time.Time
}
