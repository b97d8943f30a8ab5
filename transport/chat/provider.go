package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// ProviderName is the name of Herald's own chat protocol among the
// providers of chat services.
const ProviderName = "herald"

// Credentials is the credentials object of a chat service of the herald
// provider.
type Credentials struct {
	// Token is sent in the X-Auth-Token header of every request.
	Token string `json:"token"`
	// CallbackSecret keys the signatures of the callbacks.
	CallbackSecret string `json:"callbackSecret"`
}

// Provider returns the description of Herald's own chat protocol as a
// chat provider, "herald": it reaches Viber and carries the eight message
// types. A service with its own endpoint has a baseUrl (the protocol has
// no public endpoint) and the credentials {"token", "callbackSecret"}; a
// service with neither goes through the deployment's endpoint
// (HERALD_CHAT_URL: see transport/chatroute), so no credentials at all
// are accepted too. Its adapters are a Client and a
// CallbackHandler over the service's settings, the wire format the
// package doc describes.
func Provider() chatprovider.Provider {
	return chatprovider.Provider{
		Name:             ProviderName,
		Channels:         []string{chatprovider.ChannelViber},
		Carries:          carries,
		CheckCredentials: checkCredentials,
		New:              newAdapter,
	}
}

// carries accepts the eight message types over Viber.
func carries(channel string, t messaging.MessageType, _ messaging.ChatConfig) error {
	if channel != chatprovider.ChannelViber {
		return messaging.Invalidf("channel", "the %s provider reaches %s only", ProviderName, chatprovider.ChannelViber)
	}
	if !t.Valid() {
		return messaging.Invalidf("messageType", "message type %d is not one of 1 to 8", int(t))
	}
	return nil
}

// parseCredentials reads the credentials object; an error names the
// missing field.
func parseCredentials(creds json.RawMessage) (Credentials, error) {
	var c Credentials
	if len(creds) == 0 {
		return c, messaging.Invalidf("credentials", "the %s provider needs credentials {token, callbackSecret}", ProviderName)
	}
	if err := json.Unmarshal(creds, &c); err != nil {
		return c, messaging.Invalidf("credentials", "credentials must be a JSON object")
	}
	switch {
	case c.Token == "":
		return c, messaging.Invalidf("credentials.token", "credentials.token is required")
	case c.CallbackSecret == "":
		return c, messaging.Invalidf("credentials.callbackSecret", "credentials.callbackSecret is required")
	}
	return c, nil
}

// checkCredentials implements Provider.CheckCredentials: none, or both
// fields.
func checkCredentials(_ string, creds json.RawMessage) error {
	if t := bytes.TrimSpace(creds); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	_, err := parseCredentials(creds)
	return err
}

// adapter is one chat service over Herald's protocol.
type adapter struct {
	*Client
	callbacks http.Handler
}

// newAdapter implements Provider.New.
func newAdapter(_ context.Context, s chatprovider.Settings) (chatprovider.Adapter, error) {
	creds, err := parseCredentials(s.Credentials)
	if err != nil {
		return nil, fmt.Errorf("chat service %d: %w", s.ServiceID, err)
	}
	if s.Reporter == nil {
		return nil, fmt.Errorf("chat service %d: Settings.Reporter is required", s.ServiceID)
	}
	c, err := New(Config{BaseURL: s.BaseURL, Token: creds.Token, HTTP: s.Client})
	if err != nil {
		return nil, fmt.Errorf("chat service %d: %w", s.ServiceID, err)
	}
	cb := CallbackHandler(CallbackConfig{Secret: creds.CallbackSecret, Reporter: s.Reporter, Logger: s.Logger, Now: s.Now,
		Replays: s.Replays, ReplayScope: "herald:" + strconv.FormatInt(s.ServiceID, 10) + ":"})
	return &adapter{Client: c, callbacks: cb}, nil
}

// ServeHTTP serves the service's callbacks (CallbackHandler).
func (a *adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.callbacks.ServeHTTP(w, r) }

// SendChat sends m as the service.
func (a *adapter) SendChat(ctx context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	return a.Client.SendChat(ctx, m)
}
