package delivery

import (
	"context"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Store is what the dispatcher needs from storage. It reads campaigns,
// their senders and chat services for routes (CampaignReader), and
// declares its Features; a store that wraps another forwards both.
type Store interface {
	CampaignReader
	// Features describes the store (see Features).
	Features() Features
	// ClaimDue atomically moves up to c.Limit Pending messages of channel
	// c.Channel that are due (DueAt <= c.Now) and belong to InProgress
	// campaigns (or are fallback SMS of Completed ones: a failed chat
	// callback may come after its campaign completed) to Sending, with
	// Attempts incremented, LeaseUntil set to c.LeaseUntil and the claim
	// held by c.Owner, and returns them oldest first. It takes the
	// messages of transactional campaigns (direct sends included) before
	// those of bulk ones, then the oldest first, and no more of a company
	// than c.Quotas allows, nor of a campaign than c.CampaignQuotas does.
	// Concurrent claimers, in one process or several sharing a database,
	// never get the same message.
	ClaimDue(ctx context.Context, c Claim) ([]messaging.Message, error)
	Updater
	// Heartbeat records that the claimer named owner was alive at at.
	// RecoverClaims takes back the claims of an owner whose last heartbeat
	// is too old.
	Heartbeat(ctx context.Context, owner string, at time.Time) error
	// ForgetClaimer removes owner's heartbeat: a process that stops
	// cleanly holds no claims any more.
	ForgetClaimer(ctx context.Context, owner string) error
	// RecoverClaims moves back to Pending the Sending messages whose
	// claim ended (see Recovery), and returns how many it moved. They keep
	// their due time, so that they are claimed again before the messages
	// due after them: a crash does not send its messages to the back of a
	// large campaign. Those of a cancelled campaign fail with details
	// campaign.DetailsCancelled instead, as its other waiting messages
	// did when it was cancelled: nothing would ever send them, and they
	// would hold their company's pending capacity. Counters follow the
	// moves exactly.
	RecoverClaims(ctx context.Context, r Recovery) (int, error)
	// CompleteDrained moves InProgress bulk campaigns none of whose
	// messages (fallback SMS included) is Pending or Sending to Completed
	// and returns those it moved. The dispatcher calls it every
	// Config.CompleteInterval, so it should cost little when no campaign
	// is drained.
	CompleteDrained(ctx context.Context, now time.Time) ([]Completed, error)
	// HaltedCampaigns returns those of the campaigns ids that are Paused or
	// were cancelled (CancelledAt set), each with true when cancelled: the
	// dispatcher withdraws their messages it claimed and has not handed to
	// a provider yet. Unknown ids are left out.
	HaltedCampaigns(ctx context.Context, ids []messaging.ID) (map[messaging.ID]bool, error)
	// Backlog returns, by channel, how many messages of InProgress
	// campaigns are not handed to a provider yet (Pending or Sending): the
	// queue the dispatcher works through. Fallback SMS count as SMS.
	// Channels with none may be left out.
	Backlog(ctx context.Context) (map[messaging.Channel]int, error)

	// ApplyReceipts stores SMSC delivery receipts, one per SMS part, in one
	// transaction, and returns what became of each, in order.
	//
	// A receipt whose state is not final (ReceiptStatus gives no status) is
	// ReceiptIgnored. A final receipt of a part recorded by ApplyUpdates is
	// applied to the part once (ReceiptApplied or ReceiptPartial); a second
	// final receipt of the same part is ReceiptDuplicate and changes
	// nothing. A final receipt of a part not recorded yet is kept
	// (ReceiptQueued) and applied when ApplyUpdates records the part; a
	// second one for that part is ReceiptDuplicate.
	//
	// Applying a part's receipt to its message: a failed part fails the
	// message (Failed, Details from ReceiptStatus, SMSErrorCode the
	// receipt's Err, At the receipt's At); the message is Delivered (At the
	// receipt's At) once every one of its parts is. The move is subject to
	// CanAdvance like any update, and counters follow it exactly.
	// ReceiptApplied says the receipt decided its message's status (whether
	// or not the message could still move), ReceiptPartial that the message
	// waits for receipts of its other parts.
	ApplyReceipts(ctx context.Context, receipts []Receipt, now time.Time) ([]ReceiptOutcome, error)
	// ApplyBatch is ApplyUpdates and then ApplyReceipts in one
	// transaction: the receipt of a part that one of the updates records
	// applies to its message at once. The result says, item by item, what
	// the batch did to the messages.
	ApplyBatch(ctx context.Context, updates []StatusUpdate, receipts []Receipt, now time.Time) (BatchResult, error)
	// ChatSeqs returns the chat sequence number of each message, in the
	// order of ids, assigning one to every message that has none yet from a
	// counter kept in the store: every message gets a different number,
	// across processes sharing the store, and keeps it for good. An unknown
	// id gets 0.
	ChatSeqs(ctx context.Context, ids []messaging.ID) ([]int64, error)
	// ExpireReceipts marks unconfirmed the SMS messages still Sent one of
	// whose parts, recorded before sentBefore, has no final receipt: they
	// stay Sent, their Details set to details, and are counted in
	// StatusCounts.Unconfirmed (a part of Sent) instead of as waiting; a
	// receipt that comes later still settles them, and they leave the
	// count. Each part is looked at once: a call looks at the parts
	// recorded from the sentBefore of the previous call on. It returns how
	// many messages it marked.
	ExpireReceipts(ctx context.Context, sentBefore, now time.Time, details string) (int, error)
	// ExpireMessages fails, with details messaging.DetailsExpired, up to
	// limit Pending messages whose validity ran out by now: their own
	// ExpiresAt, or the start plus ValidFor of their bulk or direct
	// campaign in progress or paused. Like any move to Failed it counts
	// them, releases their capacity and writes their events. It returns
	// how many it failed: fewer than limit when none is left.
	ExpireMessages(ctx context.Context, now time.Time, limit int) (int, error)
	// PurgeReceipts forgets up to limit of the SMS parts recorded, and the
	// receipts kept, before the given time, oldest first, and returns how
	// many it removed: fewer than limit when none older is left. A receipt
	// of a forgotten part that arrives later is kept and purged in turn.
	PurgeReceipts(ctx context.Context, before time.Time, limit int) (int, error)
}

// Updater applies status updates: the part of Store that ChatEvents uses
// too.
type Updater interface {
	// ApplyUpdates applies status changes in one transaction. An update
	// whose move is not allowed by MessageStatus.CanAdvance (a late or
	// repeated report), or whose Channel or CompanyID is set and is not
	// its message's, is skipped; the result tells, update by update,
	// whether it was applied. Campaign counters and company pending counts
	// follow every applied change exactly. Times are recorded as
	// StatusUpdate.Times says; a message that goes Delivered or Seen with
	// no send recorded (a callback that overtook the send's own result)
	// gets that time as its sentAt too.
	//
	// An applied update to Sent that carries PartIDs records the parts of
	// the SMS (see ApplyReceipts) in the same transaction, and then applies
	// the receipts that arrived for those parts before they were recorded:
	// the message may end the call Delivered or Failed. The parts of an
	// update that is not applied are not recorded.
	//
	// A message of a cancelled campaign never goes back to Pending: nothing
	// would send it again, and it would hold its company's pending
	// capacity. An update that would move one there (a retry, a
	// withdrawal, a send window's wait) fails it with details
	// campaign.DetailsCancelled instead, as the cancel failed the
	// campaign's other waiting messages, and is reported not applied. This
	// holds whatever the order of the cancel and the update, across
	// processes.
	ApplyUpdates(ctx context.Context, updates []StatusUpdate) ([]bool, error)
}

// ReplayKey is the replay key of a provider callback, or of one event of
// a batched callback, and until when it is kept.
type ReplayKey struct {
	Key   string
	Until time.Time
}

// OnceUpdater is an Updater that also records the replay keys of the
// callbacks its updates come from (the stores' callback replay guard), in
// the same transaction: a callback's events are then taken once, and a
// failed write neither applies them nor remembers them.
type OnceUpdater interface {
	Updater
	// ApplyUpdatesOnce records keys, as the replay guard's Seen does, and
	// applies updates (as ApplyUpdates), in one transaction. keyOf[i] is
	// the index in keys of the key of updates[i]; a key may have no
	// update. seen tells, key by key, whether it was recorded before (a
	// key given twice is for its second); an update whose key was
	// recorded before is not applied. applied tells, update by update,
	// whether it was applied. An error records no key and applies no
	// update.
	ApplyUpdatesOnce(ctx context.Context, keys []ReplayKey, updates []StatusUpdate, keyOf []int) (seen, applied []bool, err error)
}

// Claim is one claim of due messages (Store.ClaimDue).
type Claim struct {
	// Channel is the channel of the messages claimed.
	Channel messaging.Channel
	// Owner names the claiming process (Config.Instance), whose
	// heartbeats keep the claim; "" holds it until LeaseUntil only.
	Owner string
	// Now is the time of the claim: messages due at Now or earlier are
	// claimed.
	Now time.Time
	// LeaseUntil ends the claim whatever the heartbeats: a message claimed
	// longer than that is taken back. The dispatcher gives each of its
	// claims a different LeaseUntil (to the microsecond), so that Owner
	// and LeaseUntil name the claim (see Recovery.Unknown).
	LeaseUntil time.Time
	// Limit is the most messages claimed.
	Limit int
	// Quotas caps, for each company it lists, how many of its messages
	// the claim may take (0: none); the companies it does not list are
	// not capped. The dispatcher sets it from the companies' rates.
	Quotas map[messaging.ID]int
	// CampaignQuotas caps, for each campaign it lists, how many of its
	// messages the claim may take (0: none), on top of Quotas. The
	// dispatcher sets it from the room its connectors have
	// (ConnectorPicker).
	CampaignQuotas map[messaging.ID]int
}

// Recovery says which claims Store.RecoverClaims takes back: those whose
// LeaseUntil is before Now, those of an owner other than Self whose last
// heartbeat is before StaleBefore or who never sent one, every claim of
// Owner, and the claims listed in Unknown.
type Recovery struct {
	// Now is the time of the recovery.
	Now time.Time
	// StaleBefore is the oldest heartbeat that keeps an owner's claims;
	// zero: heartbeats are not looked at.
	StaleBefore time.Time
	// Owner, when not empty, loses all its claims whatever its heartbeat:
	// a restarted process takes back those of its previous run, which
	// died holding them.
	Owner string
	// Self, when not empty, names the caller: its own claims are not taken
	// back for a stale heartbeat (it is alive: its heartbeat is late only
	// because the store could not be written, and its sends in flight
	// will be recorded).
	Self string
	// Unknown lists claims whose outcome their claimer does not know:
	// ClaimDue returned an error, which may have come after the claim was
	// stored (the connection to the database dropped during the commit).
	// The claimer never got their messages, so nothing sends them: those
	// still Sending go back to Pending, whatever their lease and their
	// owner's heartbeat.
	Unknown []ClaimRef
}

// ClaimRef names one claim by its owner and lease (Claim.Owner and
// Claim.LeaseUntil): the messages it moved to Sending and that are still
// Sending hold both.
type ClaimRef struct {
	// Owner is the claim's Claim.Owner.
	Owner string
	// LeaseUntil is the claim's Claim.LeaseUntil.
	LeaseUntil time.Time
}

// Features describes what a Store does beyond its methods' contracts, for
// the Dispatcher to adapt to.
type Features struct {
	// WriteConcurrency is how many write transactions are worth running
	// at once: 1 for a store that takes them one at a time (SQLite, the
	// memory store), more for one whose transactions run side by side (a
	// Postgres pool). The Dispatcher writes that many batches of send
	// results at once by default; batches written at once hold different
	// messages (a result and the receipts of its parts go to the same
	// writer).
	WriteConcurrency int
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
	// PartIDs are, on an update to Sent of an SMS, the provider ids of its
	// parts in part order (SMSResult.PartIDs): receipts name them.
	PartIDs []string
	// Channel, when set, restricts the update to a message of that
	// channel: a chat callback naming an SMS changes nothing.
	Channel messaging.Channel
	// CompanyID, when set, restricts the update to a message of that
	// company: a callback through one company's chat service changes
	// nothing of another company's messages.
	CompanyID messaging.ID
	// Route, on an update to Sent of an SMS, names the connector it went
	// through (SMSResult.Connector).
	Route string
}

// MessageState is the part of a stored message that a status update
// reads and changes. A store fills it from the message, calls
// StatusUpdate.Apply, and writes back what Apply changed: a nil time or
// an empty string that was nil or empty before is left as it is stored.
type MessageState struct {
	Status  messaging.MessageStatus
	Channel messaging.Channel
	// CompanyID is read only: an update naming another company is not
	// applied.
	CompanyID messaging.ID
	UpdatedAt time.Time
	// SentAt is read (a delivery is never earlier than the send) and may
	// be set; the other times are only set.
	SentAt, DeliveredAt, SeenAt *time.Time
	// DueAt is set when the message goes back to Pending (a retry).
	DueAt             *time.Time
	ProviderMessageID string
	Details           string
	SMSErrorCode      string
	Route             string
}

// Apply applies u, at now, to the message whose state is st, and reports
// whether it did: the move must be allowed by MessageStatus.CanAdvance
// (a late or repeated report is not), and the message must be of
// u.Channel and of u.CompanyID when they are set. Both stores apply
// every status change through it, so that the rule is written once.
//
// The times: UpdatedAt, when Herald recorded the change, is now or u.At,
// whichever is later: a provider's time (an SMSC's done date has minute
// precision) never sets it back. The time of the status itself (SentAt
// on Sent, DeliveredAt on Delivered, SeenAt on Seen, and DeliveredAt too
// when Seen skipped Delivered) is u.At, but a delivery or a view is never
// earlier than the send. A delivery or view of a message not recorded
// sent (a callback that overtook the send's own result) sets SentAt to
// its time: the message was sent by then, and the late result is no
// forward move. ProviderMessageID, Details and SMSErrorCode are set when
// u carries them.
func (u StatusUpdate) Apply(st *MessageState, now time.Time) bool {
	if !st.Status.CanAdvance(u.Status) || (u.Channel != "" && u.Channel != st.Channel) ||
		(!u.CompanyID.IsZero() && u.CompanyID != st.CompanyID) {
		return false
	}
	old := st.Status
	st.Status = u.Status
	st.UpdatedAt = u.At
	if now.After(st.UpdatedAt) {
		st.UpdatedAt = now
	}
	at := u.At
	switch u.Status {
	case messaging.StatusSent:
		st.SentAt = &at
	case messaging.StatusDelivered, messaging.StatusSeen:
		if st.SentAt == nil {
			sent := at
			st.SentAt = &sent
		} else if at.Before(*st.SentAt) {
			at = *st.SentAt
		}
		if u.Status == messaging.StatusDelivered || old != messaging.StatusDelivered {
			st.DeliveredAt = &at
		}
		if u.Status == messaging.StatusSeen {
			st.SeenAt = &at
		}
	case messaging.StatusPending:
		due := u.DueAt
		st.DueAt = &due
	}
	if u.ProviderMessageID != "" {
		st.ProviderMessageID = u.ProviderMessageID
	}
	if u.Details != "" {
		st.Details = u.Details
	}
	if u.SMSErrorCode != "" {
		st.SMSErrorCode = u.SMSErrorCode
	}
	if u.Route != "" {
		st.Route = u.Route
	}
	return true
}

// BatchResult is what ApplyBatch did, item by item: every status a
// message moved to in the batch is named once, by the update or the
// receipt that moved it.
type BatchResult struct {
	// Applied tells, for each update, whether it moved its message to its
	// Status (as ApplyUpdates).
	Applied []bool
	// Then is, for each update recording an SMS Sent, the status that the
	// receipts kept for its parts (ReceiptQueued earlier) moved its
	// message to in the same batch; "" when none did.
	Then []messaging.MessageStatus
	// Outcomes is what became of each receipt (as ApplyReceipts).
	Outcomes []ReceiptOutcome
	// Moved is, for each receipt, the status it moved its message to; ""
	// when it moved none: not final, kept, partial, a duplicate, or its
	// message already had its final status (a second failed part).
	Moved []messaging.MessageStatus
	// DeliveredAfter is, for each update that moved its message to
	// Delivered in the batch (by its own Status, or by the receipts of
	// Then), how long after its Sent the message was delivered: its
	// DeliveredAt minus its SentAt, as the batch left them
	// (MessageState.DeliveredAfter); 0 for the other updates. It may be
	// nil when no update moved a message to Delivered.
	DeliveredAfter []time.Duration
	// MovedAfter is, for each receipt whose Moved is Delivered, how long
	// after its Sent its message was delivered, as DeliveredAfter; 0 for
	// the other receipts. It may be nil when no receipt moved a message
	// to Delivered.
	MovedAfter []time.Duration
}

// DeliveredAfter returns how long after its Sent a message whose state st
// is was delivered: DeliveredAt minus SentAt, 0 when either is not set.
// Apply never sets a DeliveredAt earlier than the SentAt.
func (st *MessageState) DeliveredAfter() time.Duration {
	if st.SentAt == nil || st.DeliveredAt == nil {
		return 0
	}
	return max(st.DeliveredAt.Sub(*st.SentAt), 0)
}

// ReceiptOutcome is what ApplyReceipts did with one receipt.
type ReceiptOutcome int

// Receipt outcomes.
const (
	// ReceiptIgnored: the state is not final (ACCEPTD, ENROUTE); nothing
	// was stored.
	ReceiptIgnored ReceiptOutcome = iota
	// ReceiptApplied: the receipt decided its message's status.
	ReceiptApplied
	// ReceiptPartial: the part was recorded delivered; the message waits
	// for its other parts.
	ReceiptPartial
	// ReceiptQueued: the part is not recorded yet; the receipt is kept
	// until it is.
	ReceiptQueued
	// ReceiptDuplicate: the part already had its final receipt.
	ReceiptDuplicate
)

// String names the outcome, for logs and metrics labels.
func (o ReceiptOutcome) String() string {
	switch o {
	case ReceiptIgnored:
		return "ignored"
	case ReceiptApplied:
		return "applied"
	case ReceiptPartial:
		return "partial"
	case ReceiptQueued:
		return "queued"
	case ReceiptDuplicate:
		return "duplicate"
	}
	return "unknown"
}

// Receipt states of SMPP delivery receipts (the "stat:" field).
const (
	StateDelivered     = "DELIVRD"
	StateUndeliverable = "UNDELIV"
	StateExpired       = "EXPIRED"
	StateRejected      = "REJECTD"
	StateDeleted       = "DELETED"
	StateUnknown       = "UNKNOWN"
	StateAccepted      = "ACCEPTD"
	StateEnroute       = "ENROUTE"
)

// ReceiptStatus maps a receipt state to what it makes of its part:
// Delivered for DELIVRD; Failed with the message details UNDELIVERED,
// EXPIRED, REJECTED, DELETED or UNKNOWN for UNDELIV, EXPIRED, REJECTD,
// DELETED and UNKNOWN; and "" for the states that are not final (ACCEPTD,
// ENROUTE) or not known, which change nothing.
func ReceiptStatus(state string) (status messaging.MessageStatus, details string) {
	switch state {
	case StateDelivered:
		return messaging.StatusDelivered, ""
	case StateUndeliverable:
		return messaging.StatusFailed, "UNDELIVERED"
	case StateExpired:
		return messaging.StatusFailed, "EXPIRED"
	case StateRejected:
		return messaging.StatusFailed, "REJECTED"
	case StateDeleted:
		return messaging.StatusFailed, "DELETED"
	case StateUnknown:
		return messaging.StatusFailed, "UNKNOWN"
	}
	return "", ""
}

// PartReceipt is the final receipt recorded for one part of an SMS.
type PartReceipt struct {
	State string
	Err   string
	At    time.Time
}

// PartsUpdate decides the status of an SMS of partCount parts from the
// final receipts of its parts recorded so far (delivered ones in any order,
// at most one per part) and the receipt just recorded, last. A failed part
// fails the message; the message is Delivered, at the latest receipt's
// time, once partCount parts are delivered. It returns false while the
// message waits for other parts.
func PartsUpdate(id messaging.ID, partCount int, recorded []PartReceipt, last PartReceipt) (StatusUpdate, bool) {
	status, details := ReceiptStatus(last.State)
	switch status {
	case messaging.StatusFailed:
		return StatusUpdate{MessageID: id, Status: messaging.StatusFailed, At: last.At, Details: details, SMSErrorCode: last.Err}, true
	case messaging.StatusDelivered:
		delivered, at := 1, last.At
		for _, p := range recorded {
			if s, _ := ReceiptStatus(p.State); s == messaging.StatusDelivered {
				delivered++
				if p.At.After(at) {
					at = p.At
				}
			}
		}
		if delivered >= partCount {
			return StatusUpdate{MessageID: id, Status: messaging.StatusDelivered, At: at}, true
		}
	}
	return StatusUpdate{}, false
}

// Completed names a campaign that Store.CompleteDrained completed.
type Completed struct {
	ID, CompanyID messaging.ID
	Name          string
}
