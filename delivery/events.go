package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/heraldhq/herald/internal/groupcommit"
	"github.com/heraldhq/herald/messaging"
)

// EventStore is what ChatEvents needs from storage.
type EventStore interface {
	// MessageByID returns a message of any company, or NotFound.
	MessageByID(ctx context.Context, id messaging.ID) (messaging.Message, error)
	// GetCampaign returns the company's campaign or NotFound.
	GetCampaign(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error)
	// ApplyUpdates is Store.ApplyUpdates.
	ApplyUpdates(ctx context.Context, updates []StatusUpdate) ([]bool, error)
	// AdmitMessages writes messages outside any reservation; it is
	// campaign.CampaignStore.AdmitMessages. A message whose id exists
	// already is a Conflict.
	AdmitMessages(ctx context.Context, companyID messaging.ID, msgs []*messaging.Message, maxPending int) error
	// RecordResults stores survey answers in one transaction, each unless
	// its message has one; it is survey.Store.RecordResults. ChatEvents
	// writes the answers of concurrent callbacks together with it (group
	// commit).
	RecordResults(ctx context.Context, rs []*messaging.SurveyResult) ([]bool, error)
}

// FallbackCodes are the chat provider codes after which a chat message
// with a fallback falls back to SMS: 8 (the user blocked the service), 9
// (the user is not a chat user), 10 (the user's app cannot take the
// message).
func FallbackCodes() []int { return []int{8, 9, 10} }

// NeedsFallback is the fallback rule: a chat message that failed with
// provider code code is sent again as SMS when the code is one of
// FallbackCodes and the message carries fallback content (its template
// had smsFallbackEnabled, or its direct send an smsFallbackText). A
// fallback SMS never falls back again.
func NeedsFallback(m messaging.Message, code int) bool {
	if m.Channel != messaging.ChannelChat || m.FallbackContent == "" || m.IsFallback() {
		return false
	}
	for _, c := range FallbackCodes() {
		if c == code {
			return true
		}
	}
	return false
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
// content, linked to m.
func FallbackSMS(m messaging.Message, now time.Time) messaging.Message {
	return messaging.Message{
		ID: FallbackID(m.ID), CompanyID: m.CompanyID, CampaignID: m.CampaignID, Channel: messaging.ChannelSMS,
		Phone: m.Phone, ExternalUserID: m.ExternalUserID, Content: m.FallbackContent, FallbackFor: m.ID,
		Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now,
	}
}

// ChatEventsConfig configures ChatEvents.
type ChatEventsConfig struct {
	// Store holds messages and survey results. Required.
	Store EventStore
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// IDs makes survey result ids. Default: a UUIDv7 generator on Now.
	IDs *messaging.IDGenerator
	// Logger receives events that match no message. Default: discard.
	Logger *slog.Logger
	// Observer, when set, has every status a callback moved a chat message
	// to reported through its Messages (Delivered, Seen, Failed), as the
	// Dispatcher reports the moves it makes.
	Observer Observer
}

// ChatEvents applies what the chat provider reports: its Handle is the
// ChatEventHandler of the callback endpoint, and its OnChatFailure the
// Dispatcher's hook for permanent send failures. Both are idempotent.
type ChatEvents struct {
	store EventStore
	now   func() time.Time
	ids   *messaging.IDGenerator
	log   *slog.Logger
	obs   Observer // nil: none
	// updates group the status updates of concurrent callbacks into one
	// ApplyUpdates each (group commit).
	updates *groupcommit.Committer[eventUpdate, eventResult]
	// group is the StatusUpdate slice of the group being written, reused:
	// the committer writes one group at a time.
	group []StatusUpdate
	// replies group the survey answers of concurrent callbacks into one
	// RecordResults each.
	replies *groupcommit.Committer[replyItem, replyResult]
}

// replyItem is the survey answer of one callback and the context of its
// request.
type replyItem struct {
	ctx context.Context
	r   *messaging.SurveyResult
}

// replyResult is what became of one answer: stored or not (its message had
// one), or the error that kept it from being written.
type replyResult struct {
	stored bool
	err    error
}

// eventUpdate is the status update of one callback and the context of its
// request.
type eventUpdate struct {
	ctx context.Context
	u   StatusUpdate
}

// eventResult is what became of one callback's status update: applied or
// not (a late or repeated event, an unknown message), or the error that
// kept it from being stored.
type eventResult struct {
	applied bool
	err     error
}

// Group commit of callback status updates: at most eventBatch per store
// call, and a store call at most eventWriteTimeout long.
const (
	eventBatch        = 512
	eventWriteTimeout = 30 * time.Second
)

// NewChatEvents returns a ChatEvents for cfg.
func NewChatEvents(cfg ChatEventsConfig) *ChatEvents {
	e := &ChatEvents{store: cfg.Store, now: cfg.Now, ids: cfg.IDs, log: cfg.Logger, obs: cfg.Observer}
	if e.now == nil {
		e.now = time.Now
	}
	if e.ids == nil {
		e.ids = messaging.NewIDGenerator(e.now)
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.updates = &groupcommit.Committer[eventUpdate, eventResult]{Max: eventBatch, Min: 1, Write: e.writeUpdates}
	e.replies = &groupcommit.Committer[replyItem, replyResult]{Max: eventBatch, Min: 1, Write: e.writeReplies}
	return e
}

// writeReplies writes one group of survey answers in one RecordResults,
// as writeUpdates writes status updates (groupWrite).
func (e *ChatEvents) writeReplies(items []replyItem) ([]replyResult, error) {
	rs := make([]*messaging.SurveyResult, len(items))
	for i, it := range items {
		rs[i] = it.r
	}
	stored, errs, err := groupWrite(e.log, "chat replies", len(items), func(i int) context.Context { return items[i].ctx },
		func(ctx context.Context, from, to int) ([]bool, error) {
			ctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
			defer cancel()
			stored, err := e.store.RecordResults(ctx, rs[from:to])
			if err != nil {
				return nil, fmt.Errorf("record survey answers: %w", err)
			}
			return stored, nil
		})
	if err != nil {
		return nil, err
	}
	res := make([]replyResult, len(items))
	for i := range res {
		res[i] = replyResult{stored: stored[i], err: errs[i]}
	}
	return res, nil
}

// writeUpdates writes one group of callback status updates in one
// ApplyUpdates (groupWrite): when that fails, each update is written
// again on its own, so that an error reaches only the callbacks it
// concerns; the others are answered 200 as usual.
func (e *ChatEvents) writeUpdates(items []eventUpdate) ([]eventResult, error) {
	us := e.group[:0]
	for _, it := range items {
		us = append(us, it.u)
	}
	e.group = us
	defer clear(us)
	applied, errs, err := groupWrite(e.log, "chat callbacks", len(items), func(i int) context.Context { return items[i].ctx },
		func(ctx context.Context, from, to int) ([]bool, error) { return e.apply(ctx, us[from:to]) })
	if err != nil {
		return nil, err
	}
	res := make([]eventResult, len(items))
	for i := range res {
		res[i] = eventResult{applied: applied[i], err: errs[i]}
	}
	return res, nil
}

// groupWrite writes the n items of a group with one call write(ctx, 0, n)
// whose context outlives any one caller's (a caller that went away must
// not fail the others' items). When that fails and the group holds more
// than one item, each is written again on its own, write(ctxOf(i), i,
// i+1), so that an error reaches only the items it concerns. It returns,
// for each item, what its write reported and that write's error; err is
// the error of a group of one.
func groupWrite(log *slog.Logger, what string, n int, ctxOf func(i int) context.Context,
	write func(ctx context.Context, from, to int) ([]bool, error)) (ok []bool, errs []error, err error) {
	ok, errs = make([]bool, n), make([]error, n)
	got, err := write(context.Background(), 0, n)
	if err == nil {
		copy(ok, got)
		return ok, errs, nil
	}
	if n == 1 {
		return nil, nil, err
	}
	log.Warn(what+": a group write failed; writing its items one by one", "items", n, "err", err)
	for i := range n {
		got, err := write(ctxOf(i), i, i+1)
		ok[i], errs[i] = err == nil && len(got) == 1 && got[0], err
	}
	return ok, errs, nil
}

// apply is one ApplyUpdates, bounded by eventWriteTimeout.
func (e *ChatEvents) apply(ctx context.Context, us []StatusUpdate) ([]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
	defer cancel()
	applied, err := e.store.ApplyUpdates(ctx, us)
	if err != nil {
		return nil, fmt.Errorf("chat events: %w", err)
	}
	return applied, nil
}

// Handle stores one provider callback:
//   - delivered and seen move the message forward only (Sent -> Delivered
//     -> Seen), at the provider's time; a late or repeated one changes
//     nothing. One that overtakes the send's own result (the message is
//     still Sending: the provider called back before the dispatcher
//     recorded its answer) is applied all the same, and its time becomes
//     the message's sentAt too; the send result recorded after it is no
//     forward move and changes nothing (Store.ApplyUpdates);
//   - expired fails the message (details EXPIRED), failed fails it with
//     its code, and with code 8, 9 or 10 first inserts its fallback SMS
//     (NeedsFallback), once however often the failure is reported. A
//     fallback written after its bulk campaign completed is sent all the
//     same: the dispatcher claims the fallback SMS of Completed campaigns
//     (Store.ClaimDue);
//   - a reply to a Survey message records the answer (the first counts).
//
// Events of unknown messages are logged and dropped: the provider is
// answered 200 so it stops sending them. Status updates of concurrent
// callbacks are written together, in one store transaction (group
// commit); Handle returns once its own is written, and returns an error
// only when its own update could not be written (a failed group is
// written again update by update). delivered, seen and expired need no
// read of the message first: the store applies only forward moves of
// messages it has.
func (e *ChatEvents) Handle(ctx context.Context, ev ChatEvent) error {
	_, err := e.HandleEvent(ctx, ev)
	return err
}

// ChatEventOutcome is what HandleEvent did with a callback.
type ChatEventOutcome string

// Outcomes of HandleEvent.
const (
	// ChatEventStored: the callback moved its message or recorded its
	// answer.
	ChatEventStored ChatEventOutcome = "stored"
	// ChatEventIgnored: it changed nothing: an unknown message, a message
	// of another channel, a late or repeated event, a second answer, or
	// an unknown status.
	ChatEventIgnored ChatEventOutcome = "ignored"
	// ChatEventRefused: it is not valid (an answer outside the survey's
	// options); its error is a messaging.Invalid error.
	ChatEventRefused ChatEventOutcome = "refused"
	// ChatEventError: it could not be stored; send it again.
	ChatEventError ChatEventOutcome = "error"
)

// HandleEvent is Handle, and also says what became of the callback.
// Callbacks move chat messages only: one naming an SMS (a fallback SMS
// included) changes nothing.
func (e *ChatEvents) HandleEvent(ctx context.Context, ev ChatEvent) (ChatEventOutcome, error) {
	at := ev.At
	if at.IsZero() {
		at = e.now()
	}
	u := StatusUpdate{MessageID: ev.MessageID, At: at, Channel: messaging.ChannelChat}
	switch {
	case ev.Kind == ChatEventReply:
		m, ok, err := e.message(ctx, ev)
		if !ok {
			return outcomeOf(err), err
		}
		return e.reply(ctx, m, ev, at)
	case ev.Status == "delivered":
		u.Status = messaging.StatusDelivered
	case ev.Status == "seen":
		u.Status = messaging.StatusSeen
	case ev.Status == "expired":
		u.Status, u.Details = messaging.StatusFailed, "EXPIRED"
	case ev.Status == "failed":
		u.Status, u.Details = messaging.StatusFailed, fmt.Sprintf("FAILED (%d)", ev.ErrorCode)
		m, ok, err := e.message(ctx, ev)
		if !ok {
			return outcomeOf(err), err
		}
		if m.Status.Final() {
			return ChatEventIgnored, nil // a late failure changes nothing
		}
		if err := e.fallback(ctx, m, ev.ErrorCode); err != nil {
			return ChatEventError, err
		}
	default:
		e.log.Warn("chat callback with an unknown status", "message", ev.MessageID, "status", ev.Status)
		return ChatEventIgnored, nil
	}
	r, err := e.updates.Do(ctx, eventUpdate{ctx: ctx, u: u}, nil)
	if err == nil {
		err = r.err
	}
	if err != nil {
		return ChatEventError, fmt.Errorf("chat event: %w", err)
	}
	if !r.applied {
		e.log.Debug("chat callback changed nothing: unknown chat message, or not a forward move", "message", ev.MessageID, "status", ev.Status)
		return ChatEventIgnored, nil
	}
	if e.obs != nil {
		e.obs.Messages(messaging.ChannelChat, u.Status, 1)
	}
	return ChatEventStored, nil
}

// outcomeOf is the outcome of a callback that ended with err before it
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

// message reads the chat message of ev; ok is false when there is none
// (logged, nil error: an unknown id, or the id of an SMS) or the read
// failed (err).
func (e *ChatEvents) message(ctx context.Context, ev ChatEvent) (messaging.Message, bool, error) {
	m, err := e.store.MessageByID(ctx, ev.MessageID)
	if messaging.IsCode(err, messaging.NotFound) {
		e.log.Warn("chat callback for an unknown message", "message", ev.MessageID, "kind", ev.Kind, "status", ev.Status)
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("chat event: %w", err)
	}
	if m.Channel != messaging.ChannelChat {
		e.log.Warn("chat callback for a message of another channel", "message", ev.MessageID, "channel", m.Channel,
			"kind", ev.Kind, "status", ev.Status)
		return m, false, nil
	}
	return m, true, nil
}

// OnChatFailure is the Dispatcher's Config.OnChatFailure: it inserts the
// fallback SMS when the rule asks for one, and lets the dispatcher record
// the chat message Failed.
func (e *ChatEvents) OnChatFailure(ctx context.Context, m messaging.Message, serr *SendError) (bool, error) {
	var code int
	if _, err := fmt.Sscanf(serr.Code, "%d", &code); err != nil {
		return false, nil
	}
	return false, e.fallback(ctx, m, code)
}

func (e *ChatEvents) fallback(ctx context.Context, m messaging.Message, code int) error {
	if !NeedsFallback(m, code) {
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

// reply records a survey answer. An option index outside the survey's
// options is refused (a messaging.Invalid error) and nothing is recorded:
// the summary counts only answers it can place.
func (e *ChatEvents) reply(ctx context.Context, m messaging.Message, ev ChatEvent, at time.Time) (ChatEventOutcome, error) {
	c, err := e.store.GetCampaign(ctx, m.CompanyID, m.CampaignID)
	if err != nil {
		return ChatEventError, fmt.Errorf("chat reply: %w", err)
	}
	if c.MessageType != messaging.TypeSurvey || ev.OptionIndex < 0 {
		e.log.Info("chat reply that is not a survey answer", "message", m.ID)
		return ChatEventIgnored, nil
	}
	// The options are the message's own, or, for messages of a bulk
	// campaign (which keep none), the campaign's.
	cfg := m.Config
	if cfg == nil {
		cfg = c.Config
	}
	n := 0
	if cfg != nil {
		n = len(cfg.Options)
	}
	if ev.OptionIndex >= n {
		e.log.Warn("survey answer outside the options refused", "message", m.ID, "option_index", ev.OptionIndex, "options", n)
		return ChatEventRefused, messaging.Invalidf("survey.option_index",
			"option_index %d is outside the survey's %d options", ev.OptionIndex, n)
	}
	r := messaging.SurveyResult{
		ID: e.ids.New(), CompanyID: m.CompanyID, CampaignID: m.CampaignID, MessageID: m.ID,
		Phone: m.Phone, ExternalUserID: m.ExternalUserID, OptionIndex: ev.OptionIndex, OptionText: cfg.Options[ev.OptionIndex].OptionText,
		TrackingData: m.ID.String(), RespondedAt: at,
	}
	res, err := e.replies.Do(ctx, replyItem{ctx: ctx, r: &r}, nil)
	if err == nil {
		err = res.err
	}
	if err != nil {
		return ChatEventError, fmt.Errorf("chat reply: %w", err)
	}
	if !res.stored {
		return ChatEventIgnored, nil // the message had its answer
	}
	return ChatEventStored, nil
}
