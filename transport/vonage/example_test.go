package vonage_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/vonage"
	"github.com/heraldhq/herald/transport/vonage/vonagesim"
)

// reporter prints what the adapter reports; a real one stores it.
type reporter struct {
	delivery.Reporter
	done chan struct{}
}

func (r reporter) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	for _, s := range ss {
		fmt.Println("status:", s.Status)
	}
	return make([]delivery.ChatEventOutcome, len(ss)), nil
}

func (r reporter) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	fmt.Println("reply: option", in.OptionIndex, in.Text)
	close(r.done)
	return delivery.ChatEventStored, nil
}

// contactsNow says every person wrote a minute ago (inside WhatsApp's
// customer window).
type contactsNow struct{}

func (contactsNow) LastInbound(context.Context, int64, string) (time.Time, bool, error) {
	return time.Now().Add(-time.Minute), true, nil
}

// ExampleProvider builds a WhatsApp service's adapter from the provider
// description, against the simulator, and sends a survey: it is
// delivered, read and answered (the number ends in 2, three options:
// option 2 mod 3 = 2).
func ExampleProvider() {
	p := vonage.Provider()
	fmt.Println(p.Name, p.BaseURL, p.Channels)
	fmt.Println("carousel on viber:", p.Carries(chatprovider.ChannelViber, messaging.TypeCarousel, messaging.ChatConfig{}) == nil)

	creds := vonagesim.DemoCredentials()
	sim, err := vonagesim.Start(context.Background(), "127.0.0.1:0", vonagesim.Config{Credentials: creds, Channel: chatprovider.ChannelWhatsApp})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Close()

	rep := reporter{done: make(chan struct{})}
	adapter, err := p.New(context.Background(), chatprovider.Settings{
		ServiceID:   7,
		Channel:     chatprovider.ChannelWhatsApp,
		Sender:      "447700900001",
		BaseURL:     sim.URL(),
		Credentials: creds,
		Reporter:    rep,
		Contacts:    contactsNow{},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The router mounts the adapter at /callbacks/chat/{chatServiceId};
	// the Vonage application's webhooks point there.
	webhooks := httptest.NewServer(adapter)
	defer webhooks.Close()
	sim.SetCallbackURL(webhooks.URL + "/callbacks/chat/7")
	defer adapter.Close()

	_, err = adapter.SendChat(context.Background(), delivery.ChatSend{
		MessageID: messaging.NewIDGenerator(nil).New(),
		Sender:    "447700900001",
		To:        "447700900002",
		Type:      messaging.TypeSurvey,
		Text:      "How was your delivery?",
		Config: messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "Great", OptionValue: "5"}, {OptionText: "Fine", OptionValue: "3"}, {OptionText: "Bad", OptionValue: "1"},
		}},
	})
	fmt.Println("accepted:", err == nil)
	<-rep.done
	// Output:
	// vonage https://api.nexmo.com [viber whatsapp]
	// carousel on viber: false
	// accepted: true
	// status: Delivered
	// status: Seen
	// reply: option 2 Bad
}
