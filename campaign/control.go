package campaign

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Pause stops sending a campaign in progress: nothing more of it is
// claimed, sends in flight finish and their receipts are applied, and
// messages added to a paused transactional campaign are refused. A paused
// campaign never completes by itself.
//
// Messages claimed and not submitted yet go back to Pending (OnHalted);
// only those already handed to a provider finish.
func (s *Service) Pause(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error) {
	c, err := s.move(ctx, companyID, id, EventPause, s.store.TransitionCampaign)
	if err == nil {
		s.notifyHalted(ctx, id, false)
	}
	return c, err
}

// Resume sends a paused campaign again.
func (s *Service) Resume(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error) {
	c, err := s.move(ctx, companyID, id, EventResume, s.store.TransitionCampaign)
	if err == nil {
		s.notifyQueued()
	}
	return c, err
}

// Cancel ends a Ready, InProgress or Paused campaign: it completes with
// CancelledAt, and its messages not handed to a provider yet end Failed
// with details DetailsCancelled, their pending capacity released at once.
// Messages claimed and not submitted yet fail CANCELLED too (OnHalted);
// those already handed to a provider finish.
func (s *Service) Cancel(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error) {
	c, err := s.move(ctx, companyID, id, EventCancel, s.store.CancelCampaign)
	if err == nil {
		s.notifyHalted(ctx, id, true)
	}
	return c, err
}

// move applies ev to the campaign through write (a compare-and-set from
// Sources(ev)); a campaign that moved meanwhile is a Conflict, or the
// error of ev from its new status.
func (s *Service) move(ctx context.Context, companyID, id messaging.ID, ev Event,
	write func(context.Context, messaging.CampaignTransition) error) (messaging.Campaign, error) {
	c, err := s.store.GetCampaign(ctx, companyID, id)
	if messaging.IsCode(err, messaging.NotFound) {
		return messaging.Campaign{}, messaging.CampaignNotFound(id)
	}
	if err != nil {
		return messaging.Campaign{}, fmt.Errorf("%s campaign: %w", ev, err)
	}
	to, err := Next(c.Status, ev)
	if err != nil {
		return messaging.Campaign{}, err
	}
	err = write(ctx, messaging.CampaignTransition{CompanyID: companyID, CampaignID: id, From: Sources(ev), To: to, At: s.clock()})
	if messaging.IsCode(err, messaging.Conflict) {
		c, gerr := s.store.GetCampaign(ctx, companyID, id)
		if gerr != nil {
			return messaging.Campaign{}, fmt.Errorf("%s campaign: %w", ev, gerr)
		}
		if _, err := Next(c.Status, ev); err != nil {
			return messaging.Campaign{}, err
		}
		return messaging.Campaign{}, messaging.Errorf(messaging.Conflict, messaging.NameConflict, "Campaign %s changed meanwhile; try again", id)
	}
	if err != nil {
		return messaging.Campaign{}, fmt.Errorf("%s campaign: %w", ev, err)
	}
	s.targets.Clear() // a transactional campaign cached as InProgress is no longer
	return s.GetCampaign(ctx, companyID, id)
}

// MaxScheduleAhead is how far ahead a campaign's start can be scheduled.
const MaxScheduleAhead = 90 * 24 * time.Hour

// ScheduleGrace is how far in the past a sendAt may lie and still start
// the campaign at once: the caller's clock may be a little behind.
const ScheduleGrace = time.Minute

// Schedule makes a Ready campaign start by itself at sendAt (replacing an
// earlier schedule): it stays Ready, with ScheduledAt, until then, and
// StartDue starts it. A sendAt in the past is Invalid on sendAt, unless
// within ScheduleGrace of now, which starts the campaign at once as Start
// does; so is one more than MaxScheduleAhead ahead. Cancel unschedules it.
func (s *Service) Schedule(ctx context.Context, companyID, id messaging.ID, sendAt time.Time) (messaging.Campaign, error) {
	now := s.clock()
	if sendAt.Before(now.Add(-ScheduleGrace)) {
		return messaging.Campaign{}, messaging.Invalidf("sendAt", "sendAt %s is in the past", sendAt.UTC().Format(time.RFC3339))
	}
	if !sendAt.After(now) {
		return s.Start(ctx, companyID, id)
	}
	if sendAt.Sub(now) > MaxScheduleAhead {
		return messaging.Campaign{}, messaging.Invalidf("sendAt", "sendAt must be within %d days from now", int(MaxScheduleAhead/(24*time.Hour)))
	}
	return s.move(ctx, companyID, id, EventSchedule, func(ctx context.Context, t messaging.CampaignTransition) error {
		return s.store.ScheduleCampaign(ctx, companyID, id, sendAt.UTC(), t.At)
	})
}

// dueBatch is how many scheduled campaigns one StartDue round reads.
const dueBatch = 100

// StartDue starts the Ready campaigns whose scheduled time has come, of
// every company, and returns how many it started. Each start is a
// compare-and-set on the schedule: with several processes sharing the
// store each campaign starts once, and a campaign rescheduled, started or
// cancelled meanwhile is left as it is. A process that was stopped at the
// scheduled time starts the campaign on its first round.
func (s *Service) StartDue(ctx context.Context) (int, error) {
	started := 0
	for {
		now := s.clock()
		due, err := s.store.DueCampaigns(ctx, now, dueBatch)
		if err != nil {
			return started, fmt.Errorf("start scheduled campaigns: %w", err)
		}
		moved := 0
		for _, c := range due {
			err := s.store.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.ID,
				From: []messaging.CampaignStatus{messaging.CampaignReady}, To: messaging.CampaignInProgress, At: now, Scheduled: true})
			switch {
			case err == nil:
				moved++
			case messaging.IsCode(err, messaging.Conflict), messaging.IsCode(err, messaging.NotFound):
				// another process started it, or it changed meanwhile
			default:
				return started, fmt.Errorf("start scheduled campaign %s: %w", c.ID, err)
			}
		}
		started += moved
		if moved > 0 {
			s.notifyQueued()
		}
		if len(due) < dueBatch || moved == 0 {
			return started, nil
		}
	}
}

// exportBatch is how many messages ExportMessages reads at a time.
const exportBatch = 1000

// ExportMessages reads every message of the company's campaign (fallback
// SMS included), in the order they were made, and hands them to each a
// batch at a time: memory stays the same whatever the campaign's size, and
// each batch costs the store the same. An unknown campaign is NotFound
// before each is called; an error of each stops the export and is
// returned. The batch is reused: each must not keep it.
func (s *Service) ExportMessages(ctx context.Context, companyID, id messaging.ID, each func([]messaging.Message) error) error {
	if _, err := s.GetCampaign(ctx, companyID, id); err != nil {
		return err
	}
	after := messaging.NilID
	for {
		batch, err := s.store.CampaignMessagesAfter(ctx, companyID, id, after, exportBatch)
		if err != nil {
			return fmt.Errorf("export campaign messages: %w", err)
		}
		if len(batch) > 0 {
			if err := each(batch); err != nil {
				return err
			}
			after = batch[len(batch)-1].ID
		}
		if len(batch) < exportBatch {
			return nil
		}
	}
}
