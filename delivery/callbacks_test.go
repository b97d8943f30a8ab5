package delivery_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatsim"
)

// TestChatCallbacksEndToEnd sends a chat campaign through the chat
// adapter to the provider simulator, whose signed callbacks come back over
// HTTP to the callback endpoint over ChatEvents on the store, with faults
// on both sides: every callback is posted twice, seen comes before
// delivered, and the endpoint fails its first answers (the provider posts
// them again). Each message ends exactly once where its outcome says, and
// the campaign's counts match.
func TestChatCallbacksEndToEnd(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			s := openStore(t, db.url(t))
			w := newWorld(t, s)
			events := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: s, Answers: answers(t, s), Logger: testLogger()})
			const secret = "callback-secret"
			endpoint := chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: delivery.Reports{Chat: events}})
			var refused atomic.Int64
			cb := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				if refused.Add(1) <= 5 { // a database hiccup: the provider must retry
					http.Error(rw, "unavailable", http.StatusServiceUnavailable)
					return
				}
				endpoint.ServeHTTP(rw, r)
			}))
			t.Cleanup(cb.Close)

			sim := chatsim.New(chatsim.Config{Token: "tok", ServiceIDs: []string{"acme-brand"},
				CallbackURL: cb.URL, CallbackSecret: secret,
				CallbackBackoff: messaging.Backoff{Min: time.Millisecond, Max: 10 * time.Millisecond},
				Faults:          chatsim.Faults{DuplicateCallbacks: true, SeenBeforeDelivered: true, FailFirst: 2}})
			require.NoError(t, sim.Start("127.0.0.1:0"))
			t.Cleanup(func() { _ = sim.Close() })
			client, err := chat.New(chat.Config{BaseURL: sim.URL(), Token: "tok", Timeout: 5 * time.Second})
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.Close() })
			cfg := fastConfig(s)
			cfg.Chat = client
			d, err := delivery.New(cfg)
			require.NoError(t, err)

			ps := phones(30, 0) // ...0008, 0009 and 0010 are refused by the provider
			c, msgs := w.campaign(spec{channel: messaging.ChannelChat, phones: ps})
			run(t, d)
			got := w.waitCampaign(c.ID, "every callback applied", func(c messaging.Campaign) bool {
				return c.Status == messaging.CampaignCompleted && c.Counts.Seen == 27
			})
			require.NoError(t, sim.WaitIdle(t.Context()))
			require.Equal(t, messaging.StatusCounts{Seen: 27, Failed: 3}, got.Counts)
			require.Positive(t, sim.Stats().CallbackFailures, "the refused callbacks were posted again")
			for i, m := range msgs {
				got := w.message(m.ID)
				switch i {
				case 8, 9, 10:
					require.Equal(t, messaging.StatusFailed, got.Status, "message %d", i)
					require.Nil(t, got.SeenAt)
				default:
					require.Equal(t, messaging.StatusSeen, got.Status, "message %d", i)
					require.NotNil(t, got.SentAt)
					require.NotNil(t, got.SeenAt, "message %d", i)
					require.NotNil(t, got.DeliveredAt, "seen implies delivered, message %d", i)
					require.False(t, got.DeliveredAt.After(*got.SeenAt), "message %d", i)
					require.False(t, got.DeliveredAt.Before(*got.SentAt), "message %d", i)
				}
			}
			// The provider's late copies change nothing: counts stay.
			require.Equal(t, got.Counts, w.get(c.ID).Counts)
		})
	}
}
