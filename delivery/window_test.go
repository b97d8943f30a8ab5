package delivery_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// zones maps numbers to zones.
type zones map[string]*time.Location

func (z zones) Location(phone string) *time.Location { return z[phone] }

// TestSendWindow: a campaign's message outside its send window in the
// recipient's time goes back to Pending, due when the window opens there,
// and is sent then; one inside is sent at once; a window with a zone of
// its own applies it to everyone; a number of unknown zone is taken as
// UTC; the campaign waits for its last message.
func TestSendWindow(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	sms := newFakeSMS()
	paris, _ := time.LoadLocation("Europe/Paris")
	newYork, _ := time.LoadLocation("America/New_York")
	var now atomic.Pointer[time.Time]
	set := func(v time.Time) { now.Store(&v) }
	set(time.Date(2027, 5, 1, 19, 30, 0, 0, time.UTC)) // 21:30 in Paris, 15:30 in New York
	cfg := fastConfig(s)
	cfg.SMS = sms
	cfg.Now = func() time.Time { return *now.Load() }
	day := &messaging.SendWindow{From: 9 * 60, To: 20 * 60}
	ph := phones(3, 0)
	cfg.Zones = zones{ph[0]: paris, ph[1]: newYork}
	d, err := delivery.New(cfg)
	require.NoError(t, err)

	c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: ph, window: day})
	tokyo, _ := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(1, 10),
		window: &messaging.SendWindow{From: 9 * 60, To: 20 * 60, TimeZone: "Asia/Tokyo"}})
	run(t, d)

	waitMessage(t, w, msgs[1].ID, func(m messaging.Message) bool { return m.Status == messaging.StatusSent })
	waitMessage(t, w, msgs[2].ID, func(m messaging.Message) bool { return m.Status == messaging.StatusSent })
	paused := waitMessage(t, w, msgs[0].ID, func(m messaging.Message) bool { return m.Status == messaging.StatusPending && m.Attempts == 1 })
	require.True(t, paused.DueAt.Equal(time.Date(2027, 5, 2, 9, 0, 0, 0, paris)), "due at 09:00 in Paris: %s", paused.DueAt)
	require.Zero(t, sms.callsTo(ph[0]))
	n, err := s.CountWaiting(t.Context(), c.ID, *now.Load())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	tm := waitMessage(t, w, w.messagesOf(tokyo.ID)[0].ID, func(m messaging.Message) bool { return m.Status == messaging.StatusPending && m.Attempts == 1 })
	require.True(t, tm.DueAt.Equal(time.Date(2027, 5, 2, 0, 0, 0, 0, time.UTC)), "09:00 in Tokyo: %s", tm.DueAt)
	require.Equal(t, messaging.CampaignInProgress, w.get(c.ID).Status, "it waits for its last message")

	set(time.Date(2027, 5, 2, 7, 0, 1, 0, time.UTC)) // 09:00:01 in Paris
	d.Wake()
	waitMessage(t, w, msgs[0].ID, func(m messaging.Message) bool { return m.Status == messaging.StatusSent })
	require.Equal(t, 1, sms.callsTo(ph[0]))
}
