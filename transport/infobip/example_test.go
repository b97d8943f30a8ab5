package infobip_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/infobip"
	"github.com/heraldhq/herald/transport/infobip/infobipsim"
)

// ExampleProvider shows what the chat router learns from Provider: the
// channel Infobip reaches, a message type it refuses in a detail, and the
// credentials a service needs.
func ExampleProvider() {
	p := infobip.Provider()
	fmt.Println(p.Name, p.Channels)

	video := messaging.ChatConfig{VideoURL: "https://cdn.example.com/v.mp4", Duration: 12}
	err := p.Carries(chatprovider.ChannelViber, messaging.TypeVideo, video)
	fmt.Println(err.(*messaging.Error).Fields)

	creds := json.RawMessage(`{"apiKey": "k", "callbackUsername": "herald"}`)
	err = p.CheckCredentials(chatprovider.ChannelViber, creds)
	fmt.Println(err.(*messaging.Error).Fields)
	// Output:
	// infobip [viber]
	// map[typeSpecificConfig.thumbnailUrl:Infobip needs a thumbnailUrl for a Viber video]
	// map[credentials.callbackPassword:credentials.callbackPassword is required]
}

// printReporter prints what the adapter reports; a real Reporter stores
// it.
type printReporter struct{ done chan struct{} }

func (printReporter) Receipt(context.Context, delivery.Receipt) error        { return nil }
func (printReporter) InboundSMS(context.Context, delivery.InboundPart) error { return nil }

func (p printReporter) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	for _, s := range ss {
		fmt.Println("status:", s.Status, s.Detail)
	}
	return make([]delivery.ChatEventOutcome, len(ss)), nil
}

func (p printReporter) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	fmt.Println("inbound:", in.Kind, in.Text, "option", in.OptionIndex)
	close(p.done)
	return delivery.ChatEventStored, nil
}

// ExampleNew sends a survey through the Infobip simulator on loopback
// and serves the reports it posts back: delivered, seen, then the
// person's answer (number ending 7, three options: option 7 mod 3 = 1).
func ExampleNew() {
	ctx := context.Background()
	sim, err := infobipsim.Start(ctx, "127.0.0.1:0", infobipsim.Config{
		Credentials: infobipsim.DemoCredentials(), Channel: chatprovider.ChannelViber,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Close()

	rep := printReporter{done: make(chan struct{})}
	a, err := infobip.New(ctx, chatprovider.Settings{
		ServiceID: 1, Channel: chatprovider.ChannelViber, Sender: "HeraldShop", BaseURL: sim.URL(),
		Credentials: infobipsim.DemoCredentials(), Reporter: rep,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	callbacks := httptest.NewServer(a) // the router mounts it at /callbacks/chat/{chatServiceId}
	defer callbacks.Close()
	sim.SetCallbackURL(callbacks.URL + "/callbacks/chat/1")

	_, err = a.SendChat(ctx, delivery.ChatSend{
		MessageID: messaging.NewIDGenerator(time.Now).New(), To: "385981234567", Type: messaging.TypeSurvey,
		Text: "Did your parcel arrive on time?",
		Config: messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "Yes", OptionValue: "yes"}, {OptionText: "No", OptionValue: "no"}, {OptionText: "Not sure", OptionValue: "unsure"},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	select {
	case <-rep.done:
	case <-time.After(10 * time.Second):
		fmt.Println("no answer")
	}
	// Output:
	// status: Delivered DELIVERED_TO_HANDSET
	// status: Seen SEEN
	// inbound: reply No option 1
}
