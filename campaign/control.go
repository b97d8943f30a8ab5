package campaign

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/messaging"
)

// Pause stops sending a campaign in progress: nothing more of it is
// claimed, sends in flight finish and their receipts are applied, and
// messages added to a paused transactional campaign are refused. A paused
// campaign never completes by itself.
func (s *Service) Pause(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error) {
	return s.move(ctx, companyID, id, EventPause, s.store.TransitionCampaign)
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
// Messages in flight finish.
func (s *Service) Cancel(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error) {
	return s.move(ctx, companyID, id, EventCancel, s.store.CancelCampaign)
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
