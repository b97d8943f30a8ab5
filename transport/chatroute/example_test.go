package chatroute_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/chatroute"
	"github.com/heraldhq/herald/transport/chatsim"
)

// services is a fixed list of chat services (a store in herald serve).
type services []messaging.ChatService

func (s services) ChatServices(context.Context) ([]messaging.ChatService, error) { return s, nil }

// Example routes a message of a herald service without an endpoint of its
// own through the deployment's endpoint (a simulator on loopback), and
// shows that a callback for an unknown service is answered 404.
func Example() {
	sim := chatsim.New(chatsim.Config{Token: "provider-token"})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Close()

	r, err := chatroute.New(context.Background(), chatroute.Config{
		Source:    services{{ID: 1, CompanyID: messaging.NewIDGenerator(nil).New(), ProviderServiceID: "acme-brand"}},
		Providers: []chatprovider.Provider{chat.Provider()},
		Static:    &chatroute.Static{BaseURL: sim.URL(), Token: "provider-token", CallbackSecret: "callback-secret"},
		Reporter:  delivery.Reports{}, // herald.Herald.Reporter() in a server
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	res, err := r.SendChat(context.Background(), delivery.ChatSend{MessageID: messaging.NewIDGenerator(nil).New(), ServiceID: 1,
		Sender: "acme-brand", To: "998901234567", Ref: 1, Type: messaging.TypeSimpleText, Text: "Your table is ready"})
	fmt.Println("accepted:", err == nil && res.ProviderID != "")

	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("POST", "/callbacks/chat/99", strings.NewReader("{}")))
	fmt.Println("unknown service:", rec.Code)
	// Output:
	// accepted: true
	// unknown service: 404
}
