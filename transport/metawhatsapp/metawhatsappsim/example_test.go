package metawhatsappsim_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/metawhatsapp"
	"github.com/heraldhq/herald/transport/metawhatsapp/metawhatsappsim"
)

// events is a delivery.Reporter that hands the chat reports to a channel.
type events chan string

func (events) Receipt(context.Context, delivery.Receipt) error { return errors.New("no SMS here") }

func (events) InboundSMS(context.Context, delivery.InboundPart) error {
	return errors.New("no SMS here")
}

func (e events) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	outs := make([]delivery.ChatEventOutcome, len(ss))
	for i, s := range ss {
		e <- fmt.Sprint("status: ", s.Status)
		outs[i] = delivery.ChatEventStored
	}
	return outs, nil
}

func (e events) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	e <- fmt.Sprint("reply: option ", in.OptionIndex, " ", in.Text)
	return delivery.ChatEventStored, nil
}

// sinceNow says every person wrote a minute ago: the customer window is
// open.
type sinceNow struct{}

func (sinceNow) LastInbound(context.Context, int64, string) (time.Time, bool, error) {
	return time.Now().Add(-time.Minute), true, nil
}

// Example runs the meta-whatsapp adapter against the simulator: the
// webhook is verified, a survey is accepted, delivered, read, then
// answered (number ending 7, three options: option 7 mod 3 = 1).
func Example() {
	ctx := context.Background()
	sim, err := metawhatsappsim.Start(ctx, "127.0.0.1:0", metawhatsappsim.Config{Credentials: metawhatsappsim.DemoCredentials()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Close()

	reports := make(events, 8)
	adapter, err := metawhatsapp.Provider().New(ctx, chatprovider.Settings{
		ServiceID:   1,
		Channel:     chatprovider.ChannelWhatsApp,
		Sender:      "106540352242922",
		BaseURL:     sim.URL(), // the address and the Graph API version
		Credentials: metawhatsappsim.DemoCredentials(),
		Client:      &http.Client{Timeout: 5 * time.Second},
		Reporter:    reports,
		Contacts:    sinceNow{},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer adapter.Close()
	hook := httptest.NewServer(adapter) // Herald mounts it at /callbacks/chat/{chatServiceId}
	defer hook.Close()
	sim.SetCallbackURL(hook.URL + "/callbacks/chat/1")
	fmt.Println("verified:", sim.VerifyCallback(ctx) == nil)

	_, err = adapter.SendChat(ctx, delivery.ChatSend{
		MessageID: messaging.NewIDGenerator(nil).New(),
		To:        "998901234567",
		Type:      messaging.TypeSurvey,
		Text:      "How was your delivery?",
		Config: messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "Great", OptionValue: "5"}, {OptionText: "Fine", OptionValue: "3"}, {OptionText: "Bad", OptionValue: "1"},
		}},
	})
	fmt.Println("accepted:", err == nil)
	for range 3 {
		fmt.Println(<-reports)
	}
	// Output:
	// verified: true
	// accepted: true
	// status: Delivered
	// status: Seen
	// reply: option 1 Fine
}
