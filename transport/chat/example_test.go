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

// printer is a Reporter that hands the chat reports it takes on as text;
// a real one stores them, idempotently (herald.Herald.Reporter).
type printer struct {
	delivery.Reporter
	lines chan string
}

func (p printer) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	for _, s := range ss {
		p.lines <- fmt.Sprint("status: ", s.Status)
	}
	return make([]delivery.ChatEventOutcome, len(ss)), nil
}

func (p printer) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	p.lines <- fmt.Sprint(in.Kind, ": ", in.OptionIndex, " ", in.Text)
	return delivery.ChatEventStored, nil
}

// Example wires the client and the callback endpoint to the chat provider
// simulator on loopback: a survey is accepted, then delivered, seen and
// answered (number ending 7, three options: option 7 mod 3 = 1).
func Example() {
	reports := printer{lines: make(chan string, 8)}
	callbacks := httptest.NewServer(chat.CallbackHandler(chat.CallbackConfig{Secret: "callback-secret", Reporter: reports}))
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

	res, err := client.SendChat(context.Background(), delivery.ChatSend{
		MessageID: messaging.NewIDGenerator(nil).New(),
		Sender:    "acme-brand",
		To:        "998901234567",
		Ref:       1731234567890123,
		TTL:       24 * time.Hour,
		Type:      messaging.TypeSurvey,
		Text:      "How was your delivery?",
		Config: messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "Great", OptionValue: "5"}, {OptionText: "Fine", OptionValue: "3"}, {OptionText: "Bad", OptionValue: "1"},
		}},
	})
	fmt.Println("accepted:", err == nil && res.ProviderID != "")
	for range 3 {
		fmt.Println(<-reports.lines)
	}
	// Output:
	// accepted: true
	// status: Delivered
	// status: Seen
	// reply: 1 Fine
}
