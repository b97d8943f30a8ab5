package campaign

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// DefaultStaleAfter is how old a Queuing campaign must be before
// RecoverPreparations fails it when no other age is given: far longer than
// any preparation takes (200,000 recipients are written in about a second),
// so a preparation still running in another process sharing the database
// is not mistaken for an abandoned one.
const DefaultStaleAfter = 10 * time.Minute

// recoverBatch is how many stale campaigns RecoverPreparations reads at a
// time.
const recoverBatch = 100

// ReasonPreparationInterrupted is the FailureReason of a campaign whose
// preparation was cut short by a stop of the process preparing it.
const ReasonPreparationInterrupted = "Preparation interrupted: Herald stopped before the messages were written; send the campaign again"

// RecoverPreparations fails the campaigns left Queuing by a process that
// stopped while it prepared them. Their recipients lived only in that
// process's memory (the 202 answers before the messages are written), so
// the preparation cannot be finished; failing the campaign removes the
// messages written so far, releases its reservation of pending capacity
// and tells the caller, through FailureReason, to send it again.
//
// Campaigns this Service is preparing are left alone, and so are those
// created less than staleAfter ago (zero: DefaultStaleAfter), which
// another process may still be preparing. A server calls it on start and
// then periodically. It returns how many campaigns it failed.
func (s *Service) RecoverPreparations(ctx context.Context, staleAfter time.Duration) (int, error) {
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	cutoff := s.clock().Add(-staleAfter)
	failed := 0
	for {
		stale, err := s.store.QueuingCampaigns(ctx, cutoff, recoverBatch)
		if err != nil {
			return failed, fmt.Errorf("recover preparations: %w", err)
		}
		moved := 0
		for _, c := range stale {
			if s.isPreparing(c.ID) {
				continue
			}
			to, err := Next(c.Status, EventPreparationFailed)
			if err != nil {
				return failed, fmt.Errorf("recover preparation of campaign %s: %w", c.ID, err)
			}
			err = s.store.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.ID, From: Sources(EventPreparationFailed), To: to, At: s.clock(), Reason: ReasonPreparationInterrupted})
			if messaging.IsCode(err, messaging.Conflict) || messaging.IsCode(err, messaging.NotFound) {
				continue // finished or failed meanwhile
			}
			if err != nil {
				return failed, fmt.Errorf("recover preparation of campaign %s: %w", c.ID, err)
			}
			s.log.Warn("failed a campaign whose preparation was interrupted", "campaign", c.ID, "company", c.CompanyID, "planned", c.Planned)
			failed++
			moved++
		}
		if len(stale) < recoverBatch || moved == 0 {
			return failed, nil
		}
	}
}

func (s *Service) markPreparing(id messaging.ID, on bool) {
	s.preparingMu.Lock()
	defer s.preparingMu.Unlock()
	if on {
		s.preparing[id] = struct{}{}
	} else {
		delete(s.preparing, id)
	}
}

func (s *Service) isPreparing(id messaging.ID) bool {
	s.preparingMu.Lock()
	defer s.preparingMu.Unlock()
	_, ok := s.preparing[id]
	return ok
}
