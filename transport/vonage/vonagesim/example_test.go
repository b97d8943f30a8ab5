package vonagesim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/vonage/vonagesim"
)

// ExampleStart starts a Viber simulator and shows that it refuses a
// request without the application's token, as Vonage does.
func ExampleStart() {
	sim, err := vonagesim.Start(context.Background(), "127.0.0.1:0", vonagesim.Config{
		Credentials: vonagesim.DemoCredentials(),
		Channel:     chatprovider.ChannelViber,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sim.Close()
	body := `{"message_type":"text","channel":"viber_service","to":"447700900001","from":"Herald","text":"hi"}`
	resp, err := http.Post(sim.URL()+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	// Output:
	// 401 application/problem+json
}
