package delivery_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/webhook"
)

// TestExpiredWhilePausedCompletes: a bulk campaign paused right after its
// first sends, whose validity runs out while it is paused, completes once
// resumed, although nothing is left to send: the messages sent are
// Delivered, the others Failed EXPIRED, and a campaign.status event says
// Completed. On memstore, SQLite and Postgres.
func TestExpiredWhilePausedCompletes(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) store
	}{
		{"memstore", func(*testing.T) store { return memstore.New() }},
	}
	for _, db := range databases {
		stores = append(stores, struct {
			name string
			open func(t *testing.T) store
		}{db.name, func(t *testing.T) store { return openStore(t, db.url(t)) }})
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			w := newWorld(t, s)
			ctx := context.Background()
			hook := webhook.Endpoint{ID: w.ids.New(), CompanyID: w.co.ID, URL: "https://hooks.example.com/campaigns",
				Events: []webhook.EventType{webhook.CampaignStatus}, Secret: "whsec_" + w.ids.New().String(), CreatedAt: time.Now()}
			require.NoError(t, s.(webhook.Store).CreateWebhook(ctx, &hook, 10))

			// The first sends wait until the campaign is paused.
			gate := make(chan struct{})
			var gateOnce sync.Once
			sms := newFakeSMS()
			sms.outcome = func(delivery.SMS, int) (int, error) {
				<-gate
				return 1, nil
			}
			cfg := fastConfig(s)
			cfg.SMS, cfg.BatchSize, cfg.SMSConcurrency = sms, 8, 4
			cfg.ExpireInterval = 10 * time.Millisecond
			obs := &sweepObserver{}
			cfg.Observer = obs
			d, err := delivery.New(cfg)
			require.NoError(t, err)
			sms.receipts = receiptsFor(t, d.HandleReceipt)

			const n = 300
			const validFor = 2 * time.Second
			c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(n, 100), validFor: validFor})
			run(t, d)
			defer gateOnce.Do(func() { close(gate) })
			waitFor(t, "the first send", func() bool { return len(sms.sends()) > 0 })
			w.transition(c, messaging.CampaignInProgress, messaging.CampaignPaused)
			gateOnce.Do(func() { close(gate) })

			paused := w.waitCampaign(c.ID, "nothing waits in the paused campaign", func(c messaging.Campaign) bool {
				return c.Counts.Pending+c.Counts.Sending == 0 && c.Counts.Sent == 0
			})
			// Let the dispatcher look for drained campaigns after the last
			// expiry, while the campaign is still paused.
			waitFor(t, "a completion round after the expiry", obs.completedSinceExpiry)
			require.Equal(t, messaging.CampaignPaused, w.get(c.ID).Status, "a paused campaign does not complete")
			require.Less(t, paused.Counts.Delivered, n/2, "most messages expired while paused")
			require.Equal(t, n, paused.Counts.Delivered+paused.Counts.Failed)

			w.transition(c, messaging.CampaignPaused, messaging.CampaignInProgress)
			d.Wake()
			done := w.waitCampaign(c.ID, "the resumed campaign completes", func(c messaging.Campaign) bool {
				return c.Status == messaging.CampaignCompleted
			})
			require.NotNil(t, done.CompletedAt)
			require.Equal(t, paused.Counts, done.Counts)
			require.Equal(t, len(sms.sends()), done.Counts.Delivered, "every message sent is delivered")
			sent := map[string]bool{}
			for _, m := range sms.sends() {
				sent[m.To] = true
			}
			for _, m := range msgs {
				got := w.message(m.ID)
				if sent[m.Phone] {
					require.Equal(t, messaging.StatusDelivered, got.Status)
					continue
				}
				require.Equal(t, messaging.StatusFailed, got.Status)
				require.Equal(t, messaging.DetailsExpired, got.Details)
			}

			ds, err := s.(webhook.Outbox).WaitingDeliveries(ctx, hook.ID, 100)
			require.NoError(t, err)
			var last webhook.CampaignStatusData
			for _, dl := range ds {
				require.NoError(t, json.Unmarshal(dl.Event.Data, &last))
			}
			require.Equal(t, messaging.CampaignCompleted, last.Status, "the last campaign.status event")
			require.Equal(t, done.Counts.Delivered, last.DeliveredCount)
			require.Equal(t, done.Counts.Failed, last.FailedCount)
			require.Zero(t, last.PendingCount)
		})
	}
}

// sweepObserver tells whether the dispatcher looked for drained campaigns
// since the validity sweep last failed messages.
type sweepObserver struct {
	delivery.NopObserver
	mu       sync.Mutex
	expiries int // sweeps that failed messages
	seen     int // expiries when drained campaigns were last looked for
}

func (o *sweepObserver) Batch(op string, n int, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err != nil:
	case op == "expire_messages" && n > 0:
		o.expiries++
	case op == "complete":
		o.seen = o.expiries
	}
}

func (o *sweepObserver) completedSinceExpiry() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.expiries > 0 && o.seen == o.expiries
}
