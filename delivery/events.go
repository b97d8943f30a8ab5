package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

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
	// Logger receives events that match no message. Default: discard.
	Logger *slog.Logger
	// Observer, when set, has every status a callback moved a chat message
	// to reported through its Messages (Delivered, Seen, Failed), as the
	// Dispatcher reports the moves it makes.
	Observer Observer
	// Subscriptions applies the unsubscribed and subscribed events (the
	// number opted out of the service's company's chat messages, or back
	// in) and reports whether it changed anything. Nil: they are ignored.
	Subscriptions func(ctx context.Context, ev ChatEvent) (bool, error)
}

// ChatEvents applies what the chat provider reports: its Handle is the
// ChatEventHandler of the callback endpoint, and its OnChatFailure the
// Dispatcher's hook for permanent send failures. Both are idempotent.
type ChatEvents struct {
	store   EventStore
	answers SurveyAnswers // nil: none
	now     func() time.Time
	log     *slog.Logger
	obs     Observer // nil: none
	subs    func(ctx context.Context, ev ChatEvent) (bool, error)
	// updates group the status updates of concurrent callbacks into one
	// ApplyUpdates each (group commit).
	updates *groupcommit.Committer[eventUpdate, groupcommit.Result]
	// group is the StatusUpdate slice of the group being written, reused:
	// the committer writes one group at a time.
	group []StatusUpdate
}

// eventUpdate is the status update of one callback and the context of its
// request.
type eventUpdate struct {
	ctx context.Context
	u   StatusUpdate
}

// Group commit of callback status updates: at most eventBatch per store
// call, and a store call at most eventWriteTimeout long.
const (
	eventBatch        = 512
	eventWriteTimeout = 30 * time.Second
)

// NewChatEvents returns a ChatEvents for cfg.
func NewChatEvents(cfg ChatEventsConfig) *ChatEvents {
	e := &ChatEvents{store: cfg.Store, answers: cfg.Answers, now: cfg.Now, log: cfg.Logger, obs: cfg.Observer, subs: cfg.Subscriptions}
	if e.now == nil {
		e.now = time.Now
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.updates = &groupcommit.Committer[eventUpdate, groupcommit.Result]{Max: eventBatch, Min: 1, Write: e.writeUpdates}
	return e
}

// writeUpdates writes one group of callback status updates in one
// ApplyUpdates (groupcommit.WriteOrSplit): when that fails, each update is written
// again on its own, so that an error reaches only the callbacks it
// concerns; the others are answered 200 as usual.
func (e *ChatEvents) writeUpdates(items []eventUpdate) ([]groupcommit.Result, error) {
	us := e.group[:0]
	for _, it := range items {
		us = append(us, it.u)
	}
	e.group = us
	defer clear(us)
	return groupcommit.WriteOrSplit(e.log, "chat callbacks", len(items), func(i int) context.Context { return items[i].ctx },
		func(ctx context.Context, from, to int) ([]bool, error) { return e.apply(ctx, us[from:to]) })
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
	if ev.Kind == ChatEventUnsubscribed || ev.Kind == ChatEventSubscribed {
		if e.subs == nil {
			return ChatEventIgnored, nil
		}
		ev.At = at
		changed, err := e.subs(ctx, ev)
		switch {
		case err != nil:
			return ChatEventError, err
		case changed:
			return ChatEventStored, nil
		}
		return ChatEventIgnored, nil
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
		err = r.Err
	}
	if err != nil {
		return ChatEventError, fmt.Errorf("chat event: %w", err)
	}
	if !r.OK {
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

// reply has a survey answer recorded (SurveyAnswers).
func (e *ChatEvents) reply(ctx context.Context, m messaging.Message, ev ChatEvent, at time.Time) (ChatEventOutcome, error) {
	if e.answers == nil {
		e.log.Info("chat reply ignored: no survey answers are recorded", "message", m.ID)
		return ChatEventIgnored, nil
	}
	stored, err := e.answers.RecordAnswer(ctx, m, ev.OptionIndex, at)
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
