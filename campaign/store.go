package campaign

import (
	"context"
	"time"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
)

// Store is what the campaign use cases need from storage. Every method
// that takes a companyID only sees that company's rows: another company's
// resource is reported as NotFound. Errors are *messaging.Error where the
// caller can act on them (NotFound, Invalid on a field, Conflict,
// RateLimited); anything else is wrapped and treated as Internal.
type Store interface {
	accounts.Lookup
	TemplateStore
	CampaignStore
}

// TemplateStore holds templates. Names are unique per company across SMS
// and chat templates: a duplicate is an Invalid error on field "name".
type TemplateStore interface {
	CreateTemplate(ctx context.Context, t *messaging.Template) error
	GetTemplate(ctx context.Context, companyID, id messaging.ID) (messaging.Template, error)
	// ListTemplates returns one page, newest first, and the total count.
	ListTemplates(ctx context.Context, companyID messaging.ID, page messaging.PageRequest) ([]messaging.Template, int, error)
	// UpdateTemplate replaces every field of the stored template t.ID of
	// company t.CompanyID but ID, CompanyID, Channel and CreatedAt.
	UpdateTemplate(ctx context.Context, t *messaging.Template) error
	DeleteTemplate(ctx context.Context, companyID, id messaging.ID) error
}

// Reader reads one campaign: the part of the campaign store that the
// dispatcher (for routes) and the survey reports read too.
type Reader interface {
	// GetCampaign returns the company's campaign or NotFound.
	GetCampaign(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error)
}

// Admitter writes messages outside any reservation: the transactional
// adds of this package, and the fallback SMS that the chat events of
// package delivery insert.
type Admitter interface {
	// AdmitMessages writes msgs atomically with the capacity check of
	// CreateCampaign: the company's pending count grows by len(msgs), or
	// nothing is written and a RateLimited error is returned when it
	// would pass maxPending. A message whose id exists already is a
	// Conflict (nothing is written). A fallback SMS of a cancelled
	// campaign (a chat failure reported after the cancel) is written
	// Failed with details DetailsCancelled: it is never sent.
	AdmitMessages(ctx context.Context, companyID messaging.ID, msgs []*messaging.Message, maxPending int) error
}

// CampaignStore holds campaigns and their messages, and keeps the
// company's pending count: the number of messages admitted but not yet
// handed to a provider (Pending or Sending), plus capacity reserved by
// campaigns still Queuing for messages not inserted yet.
type CampaignStore interface {
	// CreateCampaign inserts c and reserves c.Planned messages of the
	// company's pending capacity, atomically: when pending + c.Planned
	// would pass maxPending nothing is written and a RateLimited error
	// with Capacity (all but RetryAfterSeconds) is returned. c.Counts and
	// c.FallbackCounts are ignored (a new campaign has no messages).
	CreateCampaign(ctx context.Context, c *messaging.Campaign, maxPending int) error
	Reader
	// ListCampaigns returns one page of the company's visible campaigns,
	// newest first, and the total count.
	ListCampaigns(ctx context.Context, companyID messaging.ID, f messaging.CampaignFilter) ([]messaging.Campaign, int, error)
	// TransitionCampaign moves a campaign (t.CampaignID of t.CompanyID)
	// from one of the statuses in t.From to t.To, at t.At, as one
	// compare-and-set. It sets StartedAt when To is InProgress and
	// CompletedAt when To is Completed, and FailureReason (t.Reason) when
	// To is Failed. It returns NotFound, or Conflict when the campaign is
	// in none of From. Moving a Queuing campaign to Failed deletes the
	// messages inserted for it and releases its reservation; leaving
	// Queuing releases whatever part of Planned was not inserted.
	TransitionCampaign(ctx context.Context, t messaging.CampaignTransition) error
	// CancelCampaign moves the campaign from one of t.From to Completed at
	// t.At with CancelledAt set, like TransitionCampaign, and in the same
	// transaction ends its Pending messages (fallback SMS included) Failed
	// with details DetailsCancelled, releasing their pending capacity.
	// Messages already claimed are left to finish.
	CancelCampaign(ctx context.Context, t messaging.CampaignTransition) error
	// ScheduleCampaign sets when the Ready campaign id starts by itself
	// (ScheduledAt = at), replacing an earlier schedule, at now; NotFound,
	// or Conflict when the campaign is not Ready.
	ScheduleCampaign(ctx context.Context, companyID, id messaging.ID, at, now time.Time) error
	// DueCampaigns returns up to limit Ready campaigns of any company
	// scheduled at or before now, earliest first.
	DueCampaigns(ctx context.Context, now time.Time, limit int) ([]messaging.Campaign, error)

	// InsertMessages writes messages of campaigns created with a
	// reservation (their Planned covers them): it counts them in their
	// campaigns' Counts and does not change the pending count. It is
	// meant for large batches and is all or nothing.
	InsertMessages(ctx context.Context, msgs []*messaging.Message) error
	Admitter
	// ListMessages returns one page of the company's messages matching f,
	// newest first, and the total count.
	ListMessages(ctx context.Context, companyID messaging.ID, f messaging.MessageFilter) ([]messaging.Message, int, error)
	// CampaignMessagesAfter returns up to limit messages of the company's
	// campaign (fallback SMS included) whose id comes after after (zero:
	// from the first), in id order: the order they were made in. Reading
	// a campaign page after page this way costs the same for every page.
	CampaignMessagesAfter(ctx context.Context, companyID, campaignID, after messaging.ID, limit int) ([]messaging.Message, error)
	// SummarizeMessages counts the messages created at or after since
	// (fallback SMS and direct sends included), of companyID, or of every
	// company when it is zero: one tally per company, channel and status,
	// the Failed ones per reason (their details) too, in no set order.
	// Ids are UUIDv7: a store may skip ids made more than a minute before
	// since.
	SummarizeMessages(ctx context.Context, companyID messaging.ID, since time.Time) ([]messaging.MessageTally, error)
	// GetMessage returns the company's message or NotFound.
	GetMessage(ctx context.Context, companyID, id messaging.ID) (messaging.Message, error)
	// CountWaiting returns how many Pending messages of the campaign are
	// due after now (held back for a send window, or a retry's backoff).
	CountWaiting(ctx context.Context, campaignID messaging.ID, now time.Time) (int, error)
	// PendingCount returns the company's pending count.
	PendingCount(ctx context.Context, companyID messaging.ID) (int, error)
	// CapacityUse returns what the company's pending count is made of, by
	// campaign status, and how many of its messages left it lately (over
	// the last 10 to 20 seconds, by the store's clock); NotFound for an
	// unknown company.
	CapacityUse(ctx context.Context, companyID messaging.ID) (messaging.CapacityUse, error)
	// QueuingCampaigns returns up to limit campaigns of any company that
	// are still Queuing and were created before createdBefore, oldest
	// first (CreatedAt ascending, then ID ascending).
	QueuingCampaigns(ctx context.Context, createdBefore time.Time, limit int) ([]messaging.Campaign, error)
	// ReconcilePending recomputes every company's pending count from the
	// campaigns' counters and reservations (after a crash), and returns how
	// many companies had a different count.
	ReconcilePending(ctx context.Context) (int, error)
	// PurgeFinished removes, for retention, up to p.Limit messages and up
	// to p.Limit survey results of one finished campaign: Completed before
	// p.FinishedBefore, or Failed (its last update) before it; the one a
	// previous call left half purged first, else the oldest. The
	// campaign's row and counters stay, and GetCampaign still answers it;
	// once its messages and results are gone it is marked purged (Purged.
	// Done) and never looked at again. Messages still Pending or Sending
	// (a fallback SMS inserted after the campaign completed) are left, and
	// a store may leave a message created more than a minute after the
	// campaign finished. Zero Purged when no campaign is to be purged.
	PurgeFinished(ctx context.Context, p Purge) (Purged, error)
}

// FinishedAt tells when c finished, for retention: its CompletedAt when
// it is Completed, its last update when it Failed; ok is false while it
// has not finished.
func FinishedAt(c messaging.Campaign) (at time.Time, ok bool) {
	switch {
	case c.Status == messaging.CampaignCompleted && c.CompletedAt != nil:
		return *c.CompletedAt, true
	case c.Status == messaging.CampaignCompleted, c.Status == messaging.CampaignFailed:
		return c.UpdatedAt, true
	}
	return time.Time{}, false
}

// Purge says what CampaignStore.PurgeFinished removes.
type Purge struct {
	// FinishedBefore: campaigns finished before it are purged.
	FinishedBefore time.Time
	// Limit bounds the messages, and the survey results, one call removes.
	Limit int
	// Now is when the purge runs: the time a campaign is marked purged.
	Now time.Time
}

// Purged is what one PurgeFinished call did.
type Purged struct {
	// Campaign is the campaign it purged from; zero when none was due.
	Campaign messaging.ID
	// Messages and Results are how many rows it removed.
	Messages, Results int
	// Done: the campaign has no messages or results left and is marked
	// purged.
	Done bool
}

// OptOutReader tells which numbers asked a company to stop sending to
// them.
type OptOutReader interface {
	// OptedOut returns those of phones (digits only) opted out of the
	// company's messages of channel ch.
	OptedOut(ctx context.Context, companyID messaging.ID, phones []string, ch messaging.Channel) (map[string]bool, error)
}
