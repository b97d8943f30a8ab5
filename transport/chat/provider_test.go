package chat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/chatsim"
)

// fieldOf is the field a validation error names.
func fieldOf(t *testing.T, err error) string {
	t.Helper()
	var me *messaging.Error
	require.ErrorAs(t, err, &me)
	require.Equal(t, messaging.Invalid, me.Code)
	require.Len(t, me.Fields, 1, "%v", err)
	for f := range me.Fields {
		return f
	}
	return ""
}

// The herald provider takes no credentials (the deployment's endpoint) or
// both of its fields; it reaches Viber only and carries the eight types.
func TestProviderDescription(t *testing.T) {
	p := chat.Provider()
	require.Equal(t, "herald", p.Name)
	for _, ok := range []string{"", "null", `{"token":"t","callbackSecret":"s"}`} {
		require.NoError(t, p.CheckCredentials(chatprovider.ChannelViber, json.RawMessage(ok)), ok)
	}
	require.Equal(t, "credentials.callbackSecret", fieldOf(t, p.CheckCredentials(chatprovider.ChannelViber, json.RawMessage(`{"token":"t"}`))))
	require.Equal(t, "credentials.token", fieldOf(t, p.CheckCredentials(chatprovider.ChannelViber, json.RawMessage(`{"callbackSecret":"s"}`))))
	require.Equal(t, "credentials", fieldOf(t, p.CheckCredentials(chatprovider.ChannelViber, json.RawMessage(`[1]`))))
	for typ := messaging.TypeSimpleText; typ <= messaging.TypeFile; typ++ {
		require.NoError(t, p.Carries(chatprovider.ChannelViber, typ, messaging.ChatConfig{}))
	}
	require.Equal(t, "channel", fieldOf(t, p.Carries(chatprovider.ChannelWhatsApp, messaging.TypeSimpleText, messaging.ChatConfig{})))
	require.Equal(t, "messageType", fieldOf(t, p.Carries(chatprovider.ChannelViber, 9, messaging.ChatConfig{})))

	_, err := p.New(context.Background(), chatprovider.Settings{ServiceID: 4, BaseURL: "http://127.0.0.1:1", Reporter: reporterFunc(nil)})
	require.Error(t, err, "an adapter of its own needs credentials")
	_, err = p.New(context.Background(), chatprovider.Settings{ServiceID: 4, BaseURL: "http://127.0.0.1:1",
		Credentials: json.RawMessage(`{"token":"t","callbackSecret":"s"}`)})
	require.Error(t, err, "and a Reporter")
}

// The adapter sends through the service's endpoint with its token and
// verifies its callbacks with its own secret.
func TestProviderAdapter(t *testing.T) {
	sim, url := startSim(t, chatsim.Config{Token: "own-token", Record: true})
	ev := &events{}
	a, err := chat.Provider().New(context.Background(), chatprovider.Settings{ServiceID: 4, BaseURL: url,
		Credentials: json.RawMessage(`{"token":"own-token","callbackSecret":"own-secret"}`), Reporter: reporterFunc(ev.handle)})
	require.NoError(t, err)
	defer a.Close()
	m := textTo("998901234567")
	res, err := a.SendChat(context.Background(), m)
	require.NoError(t, err)
	require.NotEmpty(t, res.ProviderID)
	require.Len(t, sim.Received(m.To), 1)

	body := `{"event":"status","tracking_data":"` + m.MessageID.String() + `","status":"seen","timestamp":1731234567890}`
	for sig, want := range map[string]int{chat.Sign("own-secret", []byte(body)): http.StatusOK, chat.Sign(secret, []byte(body)): http.StatusUnauthorized} {
		req := httptest.NewRequest(http.MethodPost, "/callbacks/chat/4", strings.NewReader(body))
		req.Header.Set(chat.SignatureHeader, sig)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		require.Equal(t, want, rec.Code)
	}
	require.Len(t, ev.of(m.MessageID), 1)
}

// ExampleProvider checks a chat service's credentials against the herald
// provider, as the admin API does before it stores them.
func ExampleProvider() {
	p := chat.Provider()
	fmt.Println(p.Name, p.Channels)
	fmt.Println(p.CheckCredentials("viber", json.RawMessage(`{"token":"t","callbackSecret":"s"}`)) == nil)
	var me *messaging.Error
	if errors.As(p.CheckCredentials("viber", json.RawMessage(`{"token":"t"}`)), &me) {
		fmt.Println(me.Fields)
	}
	// Output:
	// herald [viber]
	// true
	// map[credentials.callbackSecret:credentials.callbackSecret is required]
}
