package campaign

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/messaging"
)

// SMSSenderFinder is implemented by stores that can find an SMS sender by
// its id alone, whatever its company. The Store port finds senders per
// company only; ApproveSender uses this when the store offers it.
type SMSSenderFinder interface {
	// SMSSenderByID returns the sender or NotFound.
	SMSSenderByID(ctx context.Context, id int64) (messaging.SMSSender, error)
}

// GetSMSSender returns one of the company's SMS senders, approved or not.
func (s *Service) GetSMSSender(ctx context.Context, companyID messaging.ID, id int64) (messaging.SMSSender, error) {
	sd, err := s.store.GetSMSSender(ctx, companyID, id)
	if err != nil {
		return messaging.SMSSender{}, fmt.Errorf("get sender: %w", err)
	}
	return sd, nil
}

// ApproveSender approves the SMS sender id and returns it. When the store
// implements SMSSenderFinder the sender is read back whole; otherwise only
// its ID and Approved are known and the other fields are zero.
func (s *Service) ApproveSender(ctx context.Context, id int64) (messaging.SMSSender, error) {
	if err := s.ApproveSMSSender(ctx, id); err != nil {
		return messaging.SMSSender{}, err
	}
	if f, ok := s.store.(SMSSenderFinder); ok {
		sd, err := f.SMSSenderByID(ctx, id)
		if err != nil {
			return messaging.SMSSender{}, fmt.Errorf("read approved sender: %w", err)
		}
		return sd, nil
	}
	return messaging.SMSSender{ID: id, Approved: true}, nil
}

// ApproveCompanySender approves an SMS sender of the company and returns
// it: a sender of another company is NotFound and stays unapproved.
func (s *Service) ApproveCompanySender(ctx context.Context, companyID messaging.ID, id int64) (messaging.SMSSender, error) {
	sd, err := s.GetSMSSender(ctx, companyID, id)
	if err != nil {
		return messaging.SMSSender{}, err
	}
	if err := s.ApproveSMSSender(ctx, id); err != nil {
		return messaging.SMSSender{}, err
	}
	sd.Approved = true
	return sd, nil
}
