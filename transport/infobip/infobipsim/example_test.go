package infobipsim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/transport/infobip/infobipsim"
)

// ExampleStart serves the simulator on loopback and sends it one Viber
// text message with the demo API key.
func ExampleStart() {
	sim, err := infobipsim.Start(context.Background(), "127.0.0.1:0", infobipsim.Config{
		Credentials: infobipsim.DemoCredentials(),
		Channel:     "viber",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Close()

	body := `{"messages":[{"sender":"HeraldShop","destinations":[{"to":"385981234567","messageId":"m-1"}],
		"content":{"type":"TEXT","text":"Hello"}}]}`
	req, _ := http.NewRequest(http.MethodPost, sim.URL()+"/viber/2/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "App demo-infobip-api-key")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}
