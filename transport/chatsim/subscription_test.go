package chatsim_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatsim"
)

// The simulator's subscription callbacks reach Herald's callback endpoint
// over HTTP, signed, as unsubscribed and subscribed events of the service.
func TestSendSubscription(t *testing.T) {
	var mu sync.Mutex
	var got []delivery.ChatInbound
	h := chat.CallbackHandler(chat.CallbackConfig{Secret: "cb-secret", Reporter: inboundFunc(func(in delivery.ChatInbound) {
		mu.Lock()
		got = append(got, in)
		mu.Unlock()
	})})
	srv := httptest.NewServer(h)
	defer srv.Close()
	sim := chatsim.New(chatsim.Config{CallbackURL: srv.URL + "/callbacks/chat", CallbackSecret: "cb-secret"})
	defer sim.Close()

	require.NoError(t, sim.SendSubscription("acme-1", "998901234567", false))
	require.NoError(t, sim.SendSubscription("acme-1", "998901234567", true))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2)
	require.Equal(t, delivery.InboundUnsubscribed, got[0].Kind)
	require.Equal(t, delivery.InboundSubscribed, got[1].Kind)
	for _, ev := range got {
		require.Equal(t, "acme-1", ev.Sender)
		require.Equal(t, "998901234567", ev.Phone)
		require.False(t, ev.At.IsZero())
	}

	wrong := chatsim.New(chatsim.Config{CallbackURL: srv.URL + "/callbacks/chat", CallbackSecret: "another"})
	defer wrong.Close()
	require.Error(t, wrong.SendSubscription("acme-1", "998901234567", false), "a callback signed with another secret is refused")
}

// inboundFunc is a delivery.Reporter taking chat inbound reports only.
type inboundFunc func(in delivery.ChatInbound)

func (inboundFunc) Receipt(context.Context, delivery.Receipt) error { return errors.New("not here") }

func (inboundFunc) InboundSMS(context.Context, delivery.InboundPart) error {
	return errors.New("not here")
}

func (inboundFunc) ChatStatuses(context.Context, []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	return nil, errors.New("not here")
}

func (f inboundFunc) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	f(in)
	return delivery.ChatEventStored, nil
}
