package infobip_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/infobip"
	"github.com/heraldhq/herald/transport/infobip/infobipsim"
)

// TestAgainstSimulator sends through the adapter to the simulator over
// HTTP and takes the simulator's reports back through the adapter's
// endpoint.
func TestAgainstSimulator(t *testing.T) {
	ctx := context.Background()
	sim, err := infobipsim.Start(ctx, "127.0.0.1:0", infobipsim.Config{
		Credentials: infobipsim.DemoCredentials(), Channel: chatprovider.ChannelViber,
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, sim.Close()) }()

	rep := newReporter()
	a, err := infobip.New(ctx, chatprovider.Settings{
		ServiceID: 42, Channel: chatprovider.ChannelViber, Sender: "HeraldShop", BaseURL: sim.URL(),
		Credentials: infobipsim.DemoCredentials(), Client: &http.Client{Timeout: 5 * time.Second}, Reporter: rep,
	})
	require.NoError(t, err)
	defer a.Close()
	endpoint := httptest.NewServer(a)
	defer endpoint.Close()
	sim.SetCallbackURL(endpoint.URL + "/callbacks/chat/42")

	gen := messaging.NewIDGenerator(time.Now)
	send := func(to string, typ messaging.MessageType, text string, c messaging.ChatConfig) messaging.ID {
		m := delivery.ChatSend{MessageID: gen.New(), ServiceID: 42, Sender: "HeraldShop", To: to, Type: typ, Text: text,
			Config: c, TTL: time.Hour}
		acc, err := a.SendChat(ctx, m)
		require.NoError(t, err, to)
		require.Equal(t, m.MessageID.String(), acc.ProviderID)
		require.False(t, acc.AlreadySent)
		// A retry of the same message is taken as sent once.
		acc, err = a.SendChat(ctx, m)
		require.NoError(t, err)
		require.True(t, acc.AlreadySent)
		return m.MessageID
	}
	delivered := send("385981234567", messaging.TypeSimpleText, "Hello", messaging.ChatConfig{})
	blocked := send("385981230008", messaging.TypeSimpleText, "Hello", messaging.ChatConfig{})
	notViber := send("385981230009", messaging.TypeImageOnly, "", messaging.ChatConfig{ImageURL: "https://cdn.example.com/a.png"})
	noDevice := send("385981230010", messaging.TypeFile, "", messaging.ChatConfig{
		FileURL: "https://cdn.example.com/i.pdf", FileName: "invoice", FileType: "pdf"})
	survey := send("385981234577", messaging.TypeSurvey, "Happy?", messaging.ChatConfig{Options: []messaging.SurveyOption{
		{OptionText: "Yes", OptionValue: "y"}, {OptionText: "No", OptionValue: "n"}, {OptionText: "Maybe", OptionValue: "m"}}})

	// delivered and seen for 2 messages, failed for 3, one reply.
	deadline := time.After(10 * time.Second)
	for n := 0; n < 8; n++ {
		select {
		case <-rep.seen:
		case <-deadline:
			statuses, inbound := rep.calls()
			t.Fatalf("%d of 8 reports arrived: %+v %+v", n, statuses, inbound)
		}
	}
	statuses, inbound := rep.calls()
	got := map[messaging.ID][]delivery.ChatStatus{}
	for _, call := range statuses {
		for _, s := range call {
			got[s.MessageID] = append(got[s.MessageID], s)
		}
	}
	statusesOf := func(id messaging.ID) []messaging.MessageStatus {
		var out []messaging.MessageStatus
		for _, s := range got[id] {
			out = append(out, s.Status)
		}
		return out
	}
	require.Equal(t, []messaging.MessageStatus{messaging.StatusDelivered, messaging.StatusSeen}, statusesOf(delivered))
	require.Equal(t, []messaging.MessageStatus{messaging.StatusDelivered, messaging.StatusSeen}, statusesOf(survey))
	for id, reason := range map[messaging.ID]delivery.ChatReason{
		blocked: delivery.ReasonBlocked, notViber: delivery.ReasonNotOnChannel, noDevice: delivery.ReasonNoSuitableDevice,
	} {
		require.Len(t, got[id], 1)
		require.Equal(t, messaging.StatusFailed, got[id][0].Status)
		require.Equal(t, reason, got[id][0].Reason)
		code := delivery.ChatCodes()[reason]
		require.True(t, code.Fallback, "a %s failure falls back to SMS", reason)
	}
	require.Len(t, inbound, 1)
	require.Equal(t, delivery.InboundReply, inbound[0].Kind)
	require.Equal(t, survey, inbound[0].MessageID)
	require.Equal(t, 7%3, inbound[0].OptionIndex)
	require.Equal(t, "No", inbound[0].Text)
	require.Equal(t, "385981234577", inbound[0].Phone)
}

func TestSimulatorRateLimit(t *testing.T) {
	ctx := context.Background()
	sim, err := infobipsim.Start(ctx, "127.0.0.1:0", infobipsim.Config{Credentials: infobipsim.DemoCredentials(), RatePerSecond: 2})
	require.NoError(t, err)
	defer sim.Close()
	a, err := infobip.New(ctx, chatprovider.Settings{
		ServiceID: 42, Sender: "HeraldShop", BaseURL: sim.URL(), Credentials: infobipsim.DemoCredentials(), Reporter: newReporter(),
	})
	require.NoError(t, err)
	defer a.Close()
	gen := messaging.NewIDGenerator(time.Now)
	var limited *delivery.SendError
	for i := 0; i < 10 && limited == nil; i++ {
		_, err := a.SendChat(ctx, delivery.ChatSend{MessageID: gen.New(), To: "385981234567", Type: messaging.TypeSimpleText, Text: "hi"})
		if err != nil {
			limited = sendErr(t, err)
		}
	}
	require.NotNil(t, limited, "past 2 requests in a second the simulator refuses")
	require.Equal(t, delivery.ReasonTransient, limited.Reason)
	require.Equal(t, time.Second, limited.RetryAfter)
}
