package accounts

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/messaging"
)

// GetSMSSender returns one of the company's SMS senders, approved or not.
func (s *Service) GetSMSSender(ctx context.Context, companyID messaging.ID, id int64) (messaging.SMSSender, error) {
	sd, err := s.store.GetSMSSender(ctx, companyID, id)
	if err != nil {
		return messaging.SMSSender{}, fmt.Errorf("get sender: %w", err)
	}
	return sd, nil
}

// ApproveSender approves the SMS sender id, of any company, and returns it.
func (s *Service) ApproveSender(ctx context.Context, id int64) (messaging.SMSSender, error) {
	if err := s.ApproveSMSSender(ctx, id); err != nil {
		return messaging.SMSSender{}, err
	}
	sd, err := s.store.SMSSenderByID(ctx, id)
	if err != nil {
		return messaging.SMSSender{}, fmt.Errorf("read approved sender: %w", err)
	}
	return sd, nil
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
