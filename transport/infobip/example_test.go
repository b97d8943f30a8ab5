package infobip_test

import (
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/infobip"
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
