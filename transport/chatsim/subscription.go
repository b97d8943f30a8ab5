package chatsim

import (
	"encoding/json"
	"errors"
	"time"
)

// subscriptionEvent is an unsubscribed or subscribed callback: the person
// blocked the company's chat service, or allowed it again.
type subscriptionEvent struct {
	Event       string `json:"event"`
	ServiceID   string `json:"service_id"`
	PhoneNumber string `json:"phone_number"`
	Timestamp   int64  `json:"timestamp"`
}

// SendSubscription posts, signed, the callback of a person blocking the
// chat service serviceID (unsubscribed) or allowing it again
// (subscribed), and reports whether Herald answered 200. It needs a
// CallbackURL.
func (s *Server) SendSubscription(serviceID, phone string, subscribed bool) error {
	if s.cfg.CallbackURL == "" {
		return errors.New("chatsim: no CallbackURL")
	}
	ev := subscriptionEvent{Event: "unsubscribed", ServiceID: serviceID, PhoneNumber: phone, Timestamp: time.Now().UnixMilli()}
	if subscribed {
		ev.Event = "subscribed"
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	p := s.cb.newPoster()
	defer p.close()
	if !p.post(body) {
		return errors.New("chatsim: the subscription callback was not answered 200")
	}
	return nil
}
