package chat_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatsim"
)

// Example wires the client and the callback endpoint to the chat provider
// simulator on loopback: a survey is accepted, then delivered, seen and
// answered (number ending 7, three options: option 7 mod 3 = 1).
func Example() {
	events := make(chan delivery.ChatEvent, 8)
	callbacks := httptest.NewServer(chat.CallbackHandler(chat.CallbackConfig{
		Secret: "callback-secret",
		Handler: func(_ context.Context, e delivery.ChatEvent) error {
			events <- e // a real handler stores the event, idempotently
			return nil
		},
	}))
	defer callbacks.Close()

	sim := chatsim.New(chatsim.Config{
		Token:          "provider-token",
		CallbackURL:    callbacks.URL + "/callbacks/chat",
		CallbackSecret: "callback-secret",
	})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Close()

	client, err := chat.New(chat.Config{BaseURL: sim.URL(), Token: "provider-token"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	res, err := client.SendChat(context.Background(), delivery.ChatMessage{
		MessageID: messaging.NewIDGenerator(nil).New(),
		ServiceID: "acme-brand",
		To:        "998901234567",
		Seq:       1731234567890123,
		TTL:       24 * time.Hour,
		Type:      messaging.TypeSurvey,
		Text:      "How was your delivery?",
		Config: messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "Great", OptionValue: "5"}, {OptionText: "Fine", OptionValue: "3"}, {OptionText: "Bad", OptionValue: "1"},
		}},
	})
	fmt.Println("accepted:", err == nil && res.Token != "")
	for range 3 {
		e := <-events
		if e.Kind == delivery.ChatEventReply {
			fmt.Println("reply:", e.OptionIndex, e.Text, e.OptionValue)
			continue
		}
		fmt.Println("status:", e.Status)
	}
	// Output:
	// accepted: true
	// status: delivered
	// status: seen
	// reply: 1 Fine 3
}
