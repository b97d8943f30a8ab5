package accounts

import (
	"context"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/messaging"
)

// RegisterSMSSender registers an SMS sender name for a company: 1 to 11
// letters, digits or spaces (an alphanumeric originator). It starts
// unapproved.
func (s *Service) RegisterSMSSender(ctx context.Context, companyID messaging.ID, senderID string) (messaging.SMSSender, error) {
	var fe messaging.FieldErrors
	switch {
	case senderID == "":
		fe.Add("senderId", "senderId is required")
	case len(senderID) > messaging.MaxSenderIDLen:
		fe.Add("senderId", "senderId must be at most %d characters", messaging.MaxSenderIDLen)
	case strings.TrimFunc(senderID, isSenderChar) != "":
		fe.Add("senderId", "senderId may hold only letters, digits and spaces")
	}
	if err := fe.Err(); err != nil {
		return messaging.SMSSender{}, err
	}
	if _, err := s.store.GetCompany(ctx, companyID); err != nil {
		return messaging.SMSSender{}, fmt.Errorf("register sender: %w", err)
	}
	sd := messaging.SMSSender{CompanyID: companyID, SenderID: senderID, CreatedAt: s.clock()}
	if err := s.store.CreateSMSSender(ctx, &sd); err != nil {
		return messaging.SMSSender{}, fmt.Errorf("register sender: %w", err)
	}
	return sd, nil
}

func isSenderChar(r rune) bool {
	return r == ' ' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
}

// ApproveSMSSender approves a sender so its company can send with it.
func (s *Service) ApproveSMSSender(ctx context.Context, id int64) error {
	if err := s.store.ApproveSMSSender(ctx, id); err != nil {
		return fmt.Errorf("approve sender: %w", err)
	}
	return nil
}

// ListSMSSenders lists the company's approved senders.
func (s *Service) ListSMSSenders(ctx context.Context, companyID messaging.ID) ([]messaging.SMSSender, error) {
	out, err := s.store.ListSMSSenders(ctx, companyID, true)
	if err != nil {
		return nil, fmt.Errorf("list senders: %w", err)
	}
	return out, nil
}

// CompanySMSSenders lists every sender of the company, approved or not:
// the operator's view. NotFound for an unknown company.
func (s *Service) CompanySMSSenders(ctx context.Context, companyID messaging.ID) ([]messaging.SMSSender, error) {
	if _, err := s.store.GetCompany(ctx, companyID); err != nil {
		return nil, fmt.Errorf("list senders: %w", err)
	}
	out, err := s.store.ListSMSSenders(ctx, companyID, false)
	if err != nil {
		return nil, fmt.Errorf("list senders: %w", err)
	}
	return out, nil
}
