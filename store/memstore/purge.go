package memstore

import (
	"bytes"
	"cmp"
	"context"
	"slices"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// PurgeFinished implements campaign.CampaignStore.
func (s *Store) PurgeFinished(ctx context.Context, p campaign.Purge) (campaign.Purged, error) {
	if err := s.lock(ctx, "purge finished campaign"); err != nil {
		return campaign.Purged{}, err
	}
	defer s.mu.Unlock()
	cr := s.purgeNext(p)
	if cr == nil {
		return campaign.Purged{}, nil
	}
	cr.purge = purging
	out := campaign.Purged{Campaign: cr.c.ID}
	// Messages still being sent (a fallback SMS inserted after the
	// campaign completed) are left.
	var gone, kept []messaging.ID
	for _, id := range cr.messages {
		if m := s.messages[id]; len(gone) < p.Limit && !m.Status.Unsent() {
			gone = append(gone, id)
		} else {
			kept = append(kept, id)
		}
	}
	s.deleteMessages(cr, gone)
	cr.messages, out.Messages = kept, len(gone)

	rs := s.resultsByCampaign[cr.c.ID]
	n := min(p.Limit, len(rs))
	for _, r := range rs[:n] {
		delete(s.results, r.MessageID)
		delete(s.resultIDs, r.ID)
	}
	if n == len(rs) {
		delete(s.resultsByCampaign, cr.c.ID)
	} else {
		s.resultsByCampaign[cr.c.ID] = slices.Clone(rs[n:])
	}
	out.Results = n
	if out.Messages < p.Limit && out.Results < p.Limit {
		cr.purge, out.Done = purged, true
	}
	return out, nil
}

// purgeNext is the campaign PurgeFinished works on: the one being purged,
// else the one that finished first before p.FinishedBefore; nil when none.
func (s *Store) purgeNext(p campaign.Purge) *campaignRow {
	var next *campaignRow
	for _, cr := range s.campaigns {
		switch {
		case cr.purge == purging:
			return cr
		case cr.purge != notPurged:
		default:
			at, ok := campaign.FinishedAt(cr.c)
			if !ok || !at.Before(p.FinishedBefore) {
				continue
			}
			if next == nil {
				next = cr
				continue
			}
			nextAt, _ := campaign.FinishedAt(next.c)
			if cmp.Or(at.Compare(nextAt), bytes.Compare(cr.c.ID[:], next.c.ID[:])) < 0 {
				next = cr
			}
		}
	}
	return next
}
