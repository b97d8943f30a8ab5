package metawhatsapp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/metawhatsapp"
)

// printer is a delivery.Reporter that prints the chat reports.
type printer struct{}

func (printer) Receipt(context.Context, delivery.Receipt) error { return errors.New("no SMS here") }

func (printer) InboundSMS(context.Context, delivery.InboundPart) error {
	return errors.New("no SMS here")
}

func (printer) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	outs := make([]delivery.ChatEventOutcome, len(ss))
	for i, s := range ss {
		fmt.Println("status:", s.MessageID, s.Status)
		outs[i] = delivery.ChatEventStored
	}
	return outs, nil
}

func (printer) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	fmt.Println("inbound:", in.Kind, in.Phone, in.Text)
	return delivery.ChatEventStored, nil
}

// Example shows what the chat router reads from Provider (the name, the
// public endpoint, what WhatsApp carries, the credentials it needs), then
// builds one service's adapter and feeds it a signed status webhook.
func Example() {
	p := metawhatsapp.Provider()
	fmt.Println(p.Name, p.BaseURL, p.Channels)

	long := messaging.ChatConfig{ButtonText: "See every offer of the week", ButtonURL: "https://shop.example.com"}
	fmt.Println(p.Carries(chatprovider.ChannelWhatsApp, messaging.TypeButtonPlusText, long))
	fmt.Println(p.CheckCredentials(chatprovider.ChannelWhatsApp, json.RawMessage(`{"accessToken":"EAAJ...","appSecret":"s"}`)))

	adapter, err := p.New(context.Background(), chatprovider.Settings{
		ServiceID:   7,
		Channel:     chatprovider.ChannelWhatsApp,
		Sender:      "106540352242922", // the business phone number id
		Credentials: json.RawMessage(`{"accessToken":"EAAJ...","appSecret":"app-secret","verifyToken":"verify-me"}`),
		Client:      http.DefaultClient, // Herald passes the client that dials through the egress guard
		Reporter:    printer{},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer adapter.Close()

	body := `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{
	  "messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},
	  "statuses":[{"id":"wamid.A1","status":"delivered","timestamp":"1795000000","recipient_id":"998901234567",
	    "biz_opaque_callback_data":"0190f5a2-7c1e-7b3a-9d4e-5f6a7b8c9d0e"}]}}]}]}`
	r := httptest.NewRequest(http.MethodPost, "/callbacks/chat/7", strings.NewReader(body))
	r.Header.Set(metawhatsapp.SignatureHeader, metawhatsapp.Sign("app-secret", []byte(body)))
	w := httptest.NewRecorder()
	adapter.ServeHTTP(w, r)
	fmt.Println("answer:", w.Code)
	// Output:
	// meta-whatsapp https://graph.facebook.com/v23.0 [whatsapp]
	// Bad Request: Validation failed (typeSpecificConfig.buttonText: WhatsApp shows at most 20 characters in buttonText, got 27)
	// Bad Request: Validation failed (credentials.verifyToken: credentials.verifyToken is required)
	// status: 0190f5a2-7c1e-7b3a-9d4e-5f6a7b8c9d0e Delivered
	// answer: 200
}
