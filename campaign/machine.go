package campaign

import "github.com/heraldhq/herald/messaging"

// Event is something that happens to a campaign.
type Event string

// Campaign events of the API's state table (docs/api.md).
const (
	// EventCreateTransactional creates a transactional campaign, open at once.
	EventCreateTransactional Event = "create-transactional"
	// EventCreateBulk accepts a bulk (or direct) send; its messages are
	// inserted in the background.
	EventCreateBulk Event = "create-bulk"
	// EventPrepared: every message of a queuing campaign was inserted.
	EventPrepared Event = "prepared"
	// EventPreparationFailed: inserting the messages failed.
	EventPreparationFailed Event = "preparation-failed"
	// EventStart: the caller starts a Ready campaign, or the time it
	// scheduled it at came.
	EventStart Event = "start"
	// EventSchedule: the caller schedules a Ready campaign's start
	// (sendAt); it stays Ready until then.
	EventSchedule Event = "schedule"
	// EventAutoStart: a direct send's campaign starts as soon as it is
	// prepared, without waiting for the caller.
	EventAutoStart Event = "auto-start"
	// EventDrained: every message of a bulk campaign was handed to a
	// provider or failed.
	EventDrained Event = "drained"
	// EventPause: the caller pauses a campaign in progress: nothing more
	// is claimed; sends in flight finish.
	EventPause Event = "pause"
	// EventResume: the caller resumes a paused campaign.
	EventResume Event = "resume"
	// EventCancel: the caller cancels a campaign: it completes, and its
	// messages not handed to a provider yet fail (CANCELLED).
	EventCancel Event = "cancel"
)

// none is the state before a campaign exists.
const none messaging.CampaignStatus = ""

// Transition is one row of the campaign state table.
type Transition struct {
	From  messaging.CampaignStatus
	Event Event
	To    messaging.CampaignStatus
}

// Transitions returns the campaign state table: the moves of the API, plus
// the auto-start of direct sends. Draft has no moves.
func Transitions() []Transition {
	return []Transition{
		{none, EventCreateTransactional, messaging.CampaignInProgress},
		{none, EventCreateBulk, messaging.CampaignQueuing},
		{messaging.CampaignQueuing, EventPrepared, messaging.CampaignReady},
		{messaging.CampaignQueuing, EventAutoStart, messaging.CampaignInProgress},
		{messaging.CampaignQueuing, EventPreparationFailed, messaging.CampaignFailed},
		{messaging.CampaignReady, EventStart, messaging.CampaignInProgress},
		{messaging.CampaignReady, EventSchedule, messaging.CampaignReady},
		{messaging.CampaignInProgress, EventDrained, messaging.CampaignCompleted},
		{messaging.CampaignInProgress, EventPause, messaging.CampaignPaused},
		{messaging.CampaignPaused, EventResume, messaging.CampaignInProgress},
		{messaging.CampaignReady, EventCancel, messaging.CampaignCompleted},
		{messaging.CampaignInProgress, EventCancel, messaging.CampaignCompleted},
		{messaging.CampaignPaused, EventCancel, messaging.CampaignCompleted},
	}
}

// Next returns the status a campaign in from moves to on ev. A move the
// table does not have is an Invalid *messaging.Error with the API's name
// for it: "Campaign is not ready" for a start outside Ready, "Campaign is
// not active" for an event that needs InProgress.
func Next(from messaging.CampaignStatus, ev Event) (messaging.CampaignStatus, error) {
	for _, t := range Transitions() {
		if t.From == from && t.Event == ev {
			return t.To, nil
		}
	}
	switch ev {
	case EventStart, EventSchedule:
		return from, messaging.Errorf(messaging.Invalid, messaging.NameCampaignNotReady,
			"Campaign is %s; only a Ready campaign can be started", from)
	case EventDrained, EventPause:
		return from, messaging.Errorf(messaging.Invalid, messaging.NameCampaignNotActive,
			"Campaign is %s, not InProgress", from)
	case EventResume:
		return from, messaging.Errorf(messaging.Invalid, messaging.NameBadRequest,
			"Campaign is %s, not Paused", from)
	case EventCancel:
		return from, messaging.Errorf(messaging.Invalid, messaging.NameBadRequest,
			"Campaign is %s; only a Ready, InProgress or Paused campaign can be cancelled", from)
	}
	return from, messaging.Errorf(messaging.Conflict, messaging.NameConflict,
		"campaign in status %q cannot take event %q", from, ev)
}

// Sources returns every status from which ev is allowed, for
// compare-and-set updates in a store.
func Sources(ev Event) []messaging.CampaignStatus {
	var out []messaging.CampaignStatus
	for _, t := range Transitions() {
		if t.Event == ev && t.From != none {
			out = append(out, t.From)
		}
	}
	return out
}

// CanAddMessages tells whether a transactional add-message is allowed on c,
// with the API's error when not: the campaign must be of channel ch,
// transactional and InProgress.
func CanAddMessages(c messaging.Campaign, ch messaging.Channel) error {
	switch {
	case c.Channel != ch && ch == messaging.ChannelSMS:
		return messaging.Errorf(messaging.Invalid, messaging.NameNotSMSCampaign, "Campaign %s is a %s campaign", c.ID, c.Channel)
	case c.Channel != ch:
		return messaging.Errorf(messaging.Invalid, messaging.NameNotChatCampaign, "Campaign %s is a %s campaign", c.ID, c.Channel)
	case c.Mode != messaging.ModeTransactional:
		return messaging.Errorf(messaging.Invalid, messaging.NameCannotAddToBulk, "Campaign %s is a bulk campaign", c.ID)
	case c.Status != messaging.CampaignInProgress:
		return messaging.Errorf(messaging.Invalid, messaging.NameCampaignNotActive, "Campaign %s is %s, not InProgress", c.ID, c.Status)
	}
	return nil
}

// String returns the event name.
func (e Event) String() string { return string(e) }
