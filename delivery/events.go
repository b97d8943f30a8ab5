package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/messaging"
)

// EventStore is what ChatEvents needs from storage: to read the message
// a callback names, to apply its status, and to insert a fallback SMS
// (outside any reservation: it replaces a message already admitted). A
// fallback SMS whose id exists already is a Conflict.
type EventStore interface {
	// MessageByID returns a message of any company, or NotFound.
	MessageByID(ctx context.Context, id messaging.ID) (messaging.Message, error)
	Updater
	campaign.Admitter
}

// SurveyAnswers records the answers to survey messages; survey.Service
// implements it (see its RecordAnswer).
type SurveyAnswers interface {
	// RecordAnswer records the answer to survey message m, and reports
	// whether it was stored (the first answer counts; a reply to a
	// message outside a survey campaign is not stored). An option index
	// outside the survey's options is a messaging.Invalid error.
	RecordAnswer(ctx context.Context, m messaging.Message, optionIndex int, at time.Time) (bool, error)
}

// NeedsFallback is the fallback rule: a chat message that failed for
// reason is sent again as SMS when ChatCodes marks the reason Fallback
// (the person blocked the service, has no account on the chat app, or
// their app cannot show the message) and the message carries fallback
// content (its template had smsFallbackEnabled, or its direct send an
// smsFallbackText). A fallback SMS never falls back again.
func NeedsFallback(m messaging.Message, reason ChatReason) bool {
	if m.Channel != messaging.ChannelChat || m.FallbackContent == "" || m.IsFallback() {
		return false
	}
	return ChatCodes()[reason].Fallback
}

// FailedDetails is the details of a chat message a status report failed
// for reason: "NAME (code)" with the reason's name and code in ChatCodes,
// the form a send refused for the same reason gets ("USER_BLOCKED (8)"),
// or the reason's name when it has no code (EXPIRED). An unknown reason
// is a rejection.
func FailedDetails(reason ChatReason) string {
	c, ok := ChatCodes()[reason]
	if !ok {
		c = ChatCodes()[ReasonRejected]
	}
	if c.Code == 0 {
		return c.Name
	}
	return fmt.Sprintf("%s (%d)", c.Name, c.Code)
}

// FallbackID is the id of the fallback SMS of chat message id: derived
// from it, so that however often the failure is reported (retries,
// repeated callbacks, a crash between the insert and the recording of
// the failure) the second insert collides with the first and one chat
// message never gets two fallback SMS. It differs from id in the last
// bit of its random part.
func FallbackID(id messaging.ID) messaging.ID {
	id[15] ^= 0x01
	return id
}

// FallbackSMS returns the fallback SMS of chat message m, due at now: an
// SMS message of the same campaign and recipient with the fallback
// content, linked to m. It expires when m would have (its own ExpiresAt,
// or its campaign's validity, which it shares): the fallback of an expired
// chat message is never sent.
func FallbackSMS(m messaging.Message, now time.Time) messaging.Message {
	fb := messaging.Message{
		ID: FallbackID(m.ID), CompanyID: m.CompanyID, CampaignID: m.CampaignID, Channel: messaging.ChannelSMS,
		Phone: m.Phone, ExternalUserID: m.ExternalUserID, Content: m.FallbackContent, FallbackFor: m.ID,
		Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now,
	}
	if m.ExpiresAt != nil {
		exp := *m.ExpiresAt
		fb.ExpiresAt = &exp
	}
	return fb
}

// ChatEventsConfig configures ChatEvents.
type ChatEventsConfig struct {
	// Store holds messages. Required.
	Store EventStore
	// Answers records survey answers. Nil: replies are logged and
	// ignored.
	Answers SurveyAnswers
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives reports that match no message. Default: discard.
	Logger *slog.Logger
	// Observer, when set, has every status a report moved a chat message
	// to reported through its Messages (Delivered, Seen, Failed), as the
	// Dispatcher reports the moves it makes.
	Observer Observer
	// Subscriptions applies InboundUnsubscribed and InboundSubscribed
	// (the number opted out of the service's company's chat messages, or
	// back in) and reports whether it changed anything. Nil: they are
	// ignored.
	Subscriptions func(ctx context.Context, in ChatInbound) (bool, error)
	// Contacts records when people write to a service (texts and
	// replies of a known service). Nil: not recorded.
	Contacts ChatContactRecorder
	// Tracer opens a span for each status event of a chat message whose
	// send Sends kept, in the send's trace. Nil: no span.
	Tracer trace.TracerProvider
	// Sends is the Dispatcher's Config.Sends: the span contexts of
	// traced chat sends. Nil: status events open no span.
	Sends *Traces
}

// ChatEvents applies what chat providers report: its ChatStatuses and
// ChatInbound are those of the Reporter, and its OnChatFailure the
// Dispatcher's hook for permanent send failures. All are idempotent.
type ChatEvents struct {
	store    EventStore
	answers  SurveyAnswers // nil: none
	now      func() time.Time
	log      *slog.Logger
	obs      Observer // nil: none
	subs     func(ctx context.Context, in ChatInbound) (bool, error)
	contacts ChatContactRecorder // nil: none
	tracer   trace.Tracer        // nil: no span
	sends    *Traces
	// updates group the status updates of concurrent reports into one
	// ApplyUpdates each (group commit); the statuses of one report are
	// always written together.
	updates *groupcommit.Committer[statusBatch, batchResult]
}

// statusBatch is the status updates of one report and the context of its
// request; for ChatStatusesOnce also the replay keys of its reports,
// keyOf[i] the index in keys of the key of us[i].
type statusBatch struct {
	ctx   context.Context
	us    []StatusUpdate
	keys  []ReplayKey
	keyOf []int
}

// batchResult is what became of a statusBatch: whether each update was
// applied and each key recorded before, or the error that kept it from
// being written.
type batchResult struct {
	applied []bool
	seen    []bool
	err     error
}

// Group commit of status updates: at most eventBatch reports per store
// call, and a store call at most eventWriteTimeout long.
const (
	eventBatch        = 512
	eventWriteTimeout = 30 * time.Second
)

// NewChatEvents returns a ChatEvents for cfg.
func NewChatEvents(cfg ChatEventsConfig) *ChatEvents {
	e := &ChatEvents{store: cfg.Store, answers: cfg.Answers, now: cfg.Now, log: cfg.Logger, obs: cfg.Observer, subs: cfg.Subscriptions,
		contacts: cfg.Contacts, sends: cfg.Sends}
	if cfg.Tracer != nil {
		e.tracer = cfg.Tracer.Tracer(tracerName)
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.updates = &groupcommit.Committer[statusBatch, batchResult]{Max: eventBatch, Min: 1, Write: e.writeBatches}
	return e
}

// writeBatches writes the updates of a group of reports in one store
// call: ApplyUpdates, or ApplyUpdatesOnce when a report carries replay
// keys. When that fails, each report's updates are written again on
// their own, so that an error reaches only the reports it concerns.
func (e *ChatEvents) writeBatches(items []statusBatch) ([]batchResult, error) {
	out, err := e.apply(context.Background(), items)
	if err == nil {
		return out, nil
	}
	if len(items) == 1 {
		return nil, err
	}
	e.log.Warn("chat reports: a group write failed; writing its reports one by one", "reports", len(items), "err", err)
	out = make([]batchResult, len(items))
	for i := range items {
		r, err := e.apply(items[i].ctx, items[i:i+1])
		if err != nil {
			out[i].err = err
			continue
		}
		out[i] = r[0]
	}
	return out, nil
}

// apply writes the updates and keys of items in one store call, bounded
// by eventWriteTimeout, and splits the results by item.
func (e *ChatEvents) apply(ctx context.Context, items []statusBatch) ([]batchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
	defer cancel()
	n, nk, once := 0, 0, false
	for _, it := range items {
		n += len(it.us)
		nk += len(it.keys)
		once = once || it.keys != nil
	}
	us := make([]StatusUpdate, 0, n)
	var keys []ReplayKey
	var keyOf []int
	if once {
		keys, keyOf = make([]ReplayKey, 0, nk), make([]int, 0, n)
	}
	for _, it := range items {
		if once {
			for j := range it.us {
				k := -1
				if it.keys != nil && it.keyOf[j] >= 0 {
					k = len(keys) + it.keyOf[j]
				}
				keyOf = append(keyOf, k)
			}
			keys = append(keys, it.keys...)
		}
		us = append(us, it.us...)
	}
	var seen, applied []bool
	var err error
	if once {
		ou, ok := e.store.(OnceUpdater)
		if !ok {
			return nil, errors.New("chat reports: the store cannot record replay keys with updates")
		}
		seen, applied, err = ou.ApplyUpdatesOnce(ctx, keys, us, keyOf)
	} else {
		applied, err = e.store.ApplyUpdates(ctx, us)
	}
	if err != nil {
		return nil, fmt.Errorf("chat reports: %w", err)
	}
	if len(applied) != len(us) || len(seen) != len(keys) {
		return nil, fmt.Errorf("chat reports: the store answered %d results for %d updates and %d for %d keys",
			len(applied), len(us), len(seen), len(keys))
	}
	out := make([]batchResult, len(items))
	for i, it := range items {
		out[i].applied, applied = applied[:len(it.us)], applied[len(it.us):]
		if once {
			out[i].seen, seen = seen[:len(it.keys)], seen[len(it.keys):]
		}
	}
	return out, nil
}

// ChatEventOutcome is what became of one report.
type ChatEventOutcome string

// Outcomes of reports.
const (
	// ChatEventStored: the report moved its message, recorded its answer
	// or its opt-out, or the person's contact.
	ChatEventStored ChatEventOutcome = "stored"
	// ChatEventIgnored: it changed nothing: an unknown message, a message
	// of another channel, a late or repeated status, a second answer, or
	// an unknown status.
	ChatEventIgnored ChatEventOutcome = "ignored"
	// ChatEventRefused: it is not valid (an answer outside the survey's
	// options); its error is a messaging.Invalid error.
	ChatEventRefused ChatEventOutcome = "refused"
	// ChatEventError: it could not be stored; send it again.
	ChatEventError ChatEventOutcome = "error"
)

// ChatStatuses stores the status reports of one callback, in one store
// write (possibly shared with other callbacks' reports), and says what
// became of each:
//   - Delivered and Seen move the message forward only (Sent ->
//     Delivered -> Seen), at the provider's time; a late or repeated one
//     changes nothing. One that overtakes the send's own result (the
//     message is still Sending) is applied all the same, and its time
//     becomes the message's sentAt too (Store.ApplyUpdates);
//   - Failed fails the message with details FailedDetails(Reason)
//     (EXPIRED for ReasonExpired, else "NAME (code)"); when the reason
//     falls back (NeedsFallback) the fallback SMS is inserted first,
//     once however often the failure is reported. A fallback written
//     after its bulk campaign completed is sent all the same: the
//     dispatcher claims the fallback SMS of Completed campaigns
//     (Store.ClaimDue).
//
// Reports of unknown messages, of SMS, of a company other than their
// CompanyID, or with another status change nothing: they are ignored.
// An error means none is known to be stored: the provider is to send
// them again.
func (e *ChatEvents) ChatStatuses(ctx context.Context, ss []ChatStatus) ([]ChatEventOutcome, error) {
	spans := e.startStatuses(ctx, ss)
	out, err := e.chatStatuses(ctx, ss)
	endStatuses(spans, out, err)
	return out, err
}

// chatStatuses is ChatStatuses without its spans.
func (e *ChatEvents) chatStatuses(ctx context.Context, ss []ChatStatus) ([]ChatEventOutcome, error) {
	out := make([]ChatEventOutcome, len(ss))
	us := make([]StatusUpdate, 0, len(ss))
	idx := make([]int, 0, len(ss))
	for i, s := range ss {
		out[i] = ChatEventIgnored
		u, ok := e.updateOf(ctx, s)
		if !ok {
			continue
		}
		if needsFallback(s) {
			m, ok, err := e.message(ctx, s.MessageID, string(s.Status))
			if err != nil {
				return nil, err
			}
			if !ok || m.Status.Final() || (!s.CompanyID.IsZero() && m.CompanyID != s.CompanyID) {
				continue // unknown, another company's, or a late failure: it changes nothing
			}
			if err := e.fallback(ctx, m, s.Reason); err != nil {
				return nil, err
			}
		}
		us = append(us, u)
		idx = append(idx, i)
	}
	if len(us) == 0 {
		return out, nil
	}
	r, err := e.updates.Do(ctx, statusBatch{ctx: ctx, us: us}, nil)
	if err == nil {
		err = r.err
	}
	if err != nil {
		return nil, fmt.Errorf("chat statuses: %w", err)
	}
	e.outcomes(ctx, us, idx, r.applied, out)
	return out, nil
}

// ChatStatusesOnce is ChatStatuses that records the replay key of each
// report, keys[keyOf[i]] that of ss[i] (keys[i] when keyOf is nil;
// reports may share a key), in the store write of the statuses
// (OnceUpdater.ApplyUpdatesOnce): a report whose key was recorded before
// is not applied, and seen says so; an error records no key and stores
// no report. ok is false, and nothing is done, when guard (the replay
// guard the caller records keys in) is not the store of ChatEvents, that
// store cannot record keys with updates, or a report is a failure that
// may need a fallback SMS: the caller then records the keys in its guard
// and calls ChatStatuses.
func (e *ChatEvents) ChatStatusesOnce(ctx context.Context, guard any, keys []ReplayKey, ss []ChatStatus,
	keyOf []int) (seen []bool, out []ChatEventOutcome, ok bool, err error) {
	ou, isOnce := e.store.(OnceUpdater)
	if g, isGuard := guard.(OnceUpdater); !isOnce || !isGuard || g != ou {
		return nil, nil, false, nil
	}
	if keyOf == nil {
		if len(keys) != len(ss) {
			return nil, nil, false, fmt.Errorf("chat statuses: %d keys for %d statuses", len(keys), len(ss))
		}
		keyOf = make([]int, len(ss))
		for i := range keyOf {
			keyOf[i] = i
		}
	}
	if len(keyOf) != len(ss) {
		return nil, nil, false, fmt.Errorf("chat statuses: %d key indexes for %d statuses", len(keyOf), len(ss))
	}
	for _, k := range keyOf {
		if k < 0 || k >= len(keys) {
			return nil, nil, false, fmt.Errorf("chat statuses: key index %d of %d keys", k, len(keys))
		}
	}
	for _, s := range ss {
		if needsFallback(s) {
			return nil, nil, false, nil
		}
	}
	spans := e.startStatuses(ctx, ss)
	seen, out, err = e.chatStatusesOnce(ctx, keys, ss, keyOf)
	endStatuses(spans, out, err)
	return seen, out, true, err
}

// chatStatusesOnce is ChatStatusesOnce without its checks and spans.
func (e *ChatEvents) chatStatusesOnce(ctx context.Context, keys []ReplayKey, ss []ChatStatus,
	keyOf []int) ([]bool, []ChatEventOutcome, error) {
	out := make([]ChatEventOutcome, len(ss))
	us := make([]StatusUpdate, 0, len(ss))
	idx := make([]int, 0, len(ss))
	ko := make([]int, 0, len(ss)) // the key of each of us
	for i, s := range ss {
		out[i] = ChatEventIgnored
		if u, ok := e.updateOf(ctx, s); ok {
			us = append(us, u)
			idx = append(idx, i)
			ko = append(ko, keyOf[i])
		}
	}
	r, err := e.updates.Do(ctx, statusBatch{ctx: ctx, us: us, keys: keys, keyOf: ko}, nil)
	if err == nil {
		err = r.err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("chat statuses: %w", err)
	}
	e.outcomes(ctx, us, idx, r.applied, out)
	return r.seen, out, nil
}

// needsFallback reports whether s is a failure whose reason falls back:
// its fallback SMS is inserted before its update is written.
func needsFallback(s ChatStatus) bool {
	return s.Status == messaging.StatusFailed && ChatCodes()[s.Reason].Fallback
}

// updateOf returns the status update of report s, and false (logged) when
// it has none: no message id, or a status that is not reported.
func (e *ChatEvents) updateOf(ctx context.Context, s ChatStatus) (StatusUpdate, bool) {
	if s.MessageID.IsZero() {
		e.log.WarnContext(ctx, "chat status without a message id", "provider_id", s.ProviderID, "status", s.Status)
		return StatusUpdate{}, false
	}
	at := s.At
	if at.IsZero() {
		at = e.now()
	}
	u := StatusUpdate{MessageID: s.MessageID, At: at, Channel: messaging.ChannelChat, CompanyID: s.CompanyID}
	switch s.Status {
	case messaging.StatusDelivered, messaging.StatusSeen:
		u.Status = s.Status
	case messaging.StatusFailed:
		u.Status, u.Details = messaging.StatusFailed, FailedDetails(s.Reason)
	default:
		e.log.WarnContext(ctx, "chat status report with a status that is not reported", "message", s.MessageID, "status", s.Status)
		return StatusUpdate{}, false
	}
	return u, true
}

// outcomes marks stored the reports whose updates were applied (us[k] is
// that of report idx[k]) and tells the observer.
func (e *ChatEvents) outcomes(ctx context.Context, us []StatusUpdate, idx []int, applied []bool, out []ChatEventOutcome) {
	for k, ok := range applied {
		if !ok {
			e.log.DebugContext(ctx, "chat status changed nothing: unknown chat message, or not a forward move, or taken before",
				"message", us[k].MessageID, "status", us[k].Status)
			continue
		}
		out[idx[k]] = ChatEventStored
		if e.obs != nil {
			e.obs.Messages(messaging.ChannelChat, us[k].Status, 1)
		}
	}
}

// ChatInbound stores what a person sent to a chat service:
//   - a text or a reply of a known service records the person's last
//     contact with it (Config.Contacts);
//   - a reply to a Survey message records the answer (the first counts;
//     an option outside the survey's is refused);
//   - InboundUnsubscribed and InboundSubscribed go to
//     Config.Subscriptions.
//
// A reply naming an unknown message, or an SMS, is logged and ignored.
func (e *ChatEvents) ChatInbound(ctx context.Context, in ChatInbound) (ChatEventOutcome, error) {
	ctx, span := e.startInbound(ctx, in)
	outcome, err := e.chatInbound(ctx, in)
	endInbound(span, outcome, err)
	return outcome, err
}

// chatInbound is ChatInbound without its span.
func (e *ChatEvents) chatInbound(ctx context.Context, in ChatInbound) (ChatEventOutcome, error) {
	if in.At.IsZero() {
		in.At = e.now()
	}
	recorded := false
	if (in.Kind == InboundText || in.Kind == InboundReply) && e.contacts != nil && in.ServiceID != 0 && in.Phone != "" {
		if err := e.contacts.RecordInbound(ctx, in.ServiceID, in.Phone, in.At); err != nil {
			return ChatEventError, fmt.Errorf("chat inbound: record the contact: %w", err)
		}
		recorded = true
	}
	outcome := ChatEventIgnored
	var err error
	switch in.Kind {
	case InboundUnsubscribed, InboundSubscribed:
		if e.subs == nil {
			return ChatEventIgnored, nil
		}
		changed, err := e.subs(ctx, in)
		switch {
		case err != nil:
			return ChatEventError, err
		case changed:
			return ChatEventStored, nil
		}
		return ChatEventIgnored, nil
	case InboundReply:
		if in.MessageID.IsZero() {
			break
		}
		m, ok, merr := e.message(ctx, in.MessageID, in.Kind)
		if !ok {
			outcome, err = outcomeOf(merr), merr
			break
		}
		outcome, err = e.reply(ctx, m, in.OptionIndex, in.At)
	case InboundText:
	default:
		e.log.WarnContext(ctx, "chat inbound of an unknown kind", "kind", in.Kind)
	}
	if outcome == ChatEventIgnored && recorded {
		outcome = ChatEventStored
	}
	return outcome, err
}

// outcomeOf is the outcome of a report that ended with err before it
// was written: ignored when err is nil (nothing to store).
func outcomeOf(err error) ChatEventOutcome {
	switch {
	case err == nil:
		return ChatEventIgnored
	case messaging.IsCode(err, messaging.Invalid):
		return ChatEventRefused
	}
	return ChatEventError
}

// message reads chat message id; ok is false when there is none (logged,
// nil error: an unknown id, or the id of an SMS) or the read failed
// (err).
func (e *ChatEvents) message(ctx context.Context, id messaging.ID, what string) (messaging.Message, bool, error) {
	m, err := e.store.MessageByID(ctx, id)
	if messaging.IsCode(err, messaging.NotFound) {
		e.log.WarnContext(ctx, "chat report for an unknown message", "message", id, "report", what)
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("chat report: %w", err)
	}
	if m.Channel != messaging.ChannelChat {
		e.log.WarnContext(ctx, "chat report for a message of another channel", "message", id, "channel", m.Channel, "report", what)
		return m, false, nil
	}
	return m, true, nil
}

// OnChatFailure is the Dispatcher's Config.OnChatFailure: it inserts the
// fallback SMS when the rule asks for one (NeedsFallback with the
// failure's Reason), and lets the dispatcher record the chat message
// Failed.
func (e *ChatEvents) OnChatFailure(ctx context.Context, m messaging.Message, serr *SendError) (bool, error) {
	return false, e.fallback(ctx, m, serr.Reason)
}

func (e *ChatEvents) fallback(ctx context.Context, m messaging.Message, reason ChatReason) error {
	if !NeedsFallback(m, reason) {
		return nil
	}
	fb := FallbackSMS(m, e.now())
	// The fallback replaces a message already admitted: it is not held to
	// the pending capacity again.
	err := e.store.AdmitMessages(ctx, m.CompanyID, []*messaging.Message{&fb}, math.MaxInt32)
	if messaging.IsCode(err, messaging.Conflict) {
		return nil // inserted before
	}
	if err != nil {
		return fmt.Errorf("insert the fallback SMS of %s: %w", m.ID, err)
	}
	return nil
}

// reply has a survey answer recorded (SurveyAnswers).
func (e *ChatEvents) reply(ctx context.Context, m messaging.Message, optionIndex int, at time.Time) (ChatEventOutcome, error) {
	if e.answers == nil {
		e.log.InfoContext(ctx, "chat reply ignored: no survey answers are recorded", "message", m.ID)
		return ChatEventIgnored, nil
	}
	stored, err := e.answers.RecordAnswer(ctx, m, optionIndex, at)
	switch {
	case messaging.IsCode(err, messaging.Invalid):
		return ChatEventRefused, err
	case err != nil:
		return ChatEventError, fmt.Errorf("chat reply: %w", err)
	case !stored:
		return ChatEventIgnored, nil // the message had its answer, or is no survey's
	}
	return ChatEventStored, nil
}
