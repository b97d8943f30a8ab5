package delivery_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// TestDeliveredLatency: a receipt that moves a Sent SMS to Delivered
// reports, once, how long after its Sent the message was delivered; a
// partial, repeated or failed receipt reports nothing.
func TestDeliveredLatency(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	sms.outcome = func(m delivery.SMS, _ int) (int, error) {
		if m.To == phones(3, 700)[2] {
			return 2, nil
		}
		return 1, nil
	}
	var mu sync.Mutex
	parts := map[string][]string{}
	sms.receipts = func(m delivery.SMS, ids []string) {
		mu.Lock()
		parts[m.To] = ids
		mu.Unlock()
	}
	cfg := fastConfig(s)
	cfg.SMS = sms
	obs := &latencyObserver{}
	cfg.Observer = obs
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(3, 700)})
	run(t, d)
	w.waitCampaign(c.ID, "all sent", func(c messaging.Campaign) bool { return c.Counts.Sent == 3 })

	receipt := func(m *messaging.Message, part int, state string, after time.Duration) delivery.Receipt {
		sent := w.message(m.ID).SentAt
		require.NotNil(t, sent)
		return delivery.Receipt{ProviderID: parts[m.Phone][part], State: state, Err: "000", At: sent.Add(after)}
	}
	// The first message is delivered 90 s after its Sent, twice.
	require.NoError(t, d.HandleReceipt(t.Context(), receipt(msgs[0], 0, delivery.StateDelivered, 90*time.Second)))
	require.NoError(t, d.HandleReceipt(t.Context(), receipt(msgs[0], 0, delivery.StateDelivered, 95*time.Second)))
	// The second fails.
	require.NoError(t, d.HandleReceipt(t.Context(), receipt(msgs[1], 0, delivery.StateUndeliverable, time.Second)))
	// The third has two parts: delivered with the later one.
	require.NoError(t, d.HandleReceipt(t.Context(), receipt(msgs[2], 1, delivery.StateDelivered, 3*time.Minute)))
	require.Len(t, obs.got(), 1, "a repeated, failed or partial receipt reports no delivery")
	require.NoError(t, d.HandleReceipt(t.Context(), receipt(msgs[2], 0, delivery.StateDelivered, 2*time.Minute)))

	require.Equal(t, []delivered{{messaging.ChannelSMS, 90 * time.Second}, {messaging.ChannelSMS, 3 * time.Minute}}, obs.got())
	m := w.message(msgs[0].ID)
	require.Equal(t, 90*time.Second, m.DeliveredAt.Sub(*m.SentAt))
}

// delivered is one Observer.Delivered call.
type delivered struct {
	ch    messaging.Channel
	after time.Duration
}

// latencyObserver records the Delivered calls.
type latencyObserver struct {
	delivery.NopObserver
	mu    sync.Mutex
	calls []delivered
}

func (o *latencyObserver) Delivered(ch messaging.Channel, after time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, delivered{ch, after})
}

func (o *latencyObserver) got() []delivered {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]delivered(nil), o.calls...)
}
