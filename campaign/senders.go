package campaign

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/messaging"
)

// approvedSender returns the company's approved sender id, or the error
// named name (the API's names differ by endpoint).
func (s *Service) approvedSender(ctx context.Context, companyID messaging.ID, id int64, name string) (messaging.SMSSender, error) {
	sd, err := s.store.GetSMSSender(ctx, companyID, id)
	if messaging.IsCode(err, messaging.NotFound) || (err == nil && !sd.Approved) {
		return messaging.SMSSender{}, messaging.Errorf(messaging.Invalid, name, "SMS sender %d is unknown or not approved", id)
	}
	if err != nil {
		return messaging.SMSSender{}, fmt.Errorf("look up sender: %w", err)
	}
	return sd, nil
}

// chatService returns the company's chat service id, or the error named
// name.
func (s *Service) chatService(ctx context.Context, companyID messaging.ID, id int64, name string) (messaging.ChatService, error) {
	cs, err := s.store.GetChatService(ctx, companyID, id)
	if messaging.IsCode(err, messaging.NotFound) {
		return messaging.ChatService{}, messaging.Errorf(messaging.Invalid, name, "Chat service %d is unknown", id)
	}
	if err != nil {
		return messaging.ChatService{}, fmt.Errorf("look up chat service: %w", err)
	}
	return cs, nil
}
