package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// promptly bounds how long an idle connector's SMS may wait in these tests:
// a few milliseconds unloaded (the end-to-end figures in BENCHMARKS.md),
// with room for a loaded CI machine under the race detector, and well under
// the seconds such an SMS waited behind a capped connector's claims.
const promptly = 2 * time.Second

// pickingSMS is a queueSMS that tells the dispatcher its connectors and
// their budgets (delivery.ConnectorPicker).
type pickingSMS struct {
	*queueSMS
	budgets map[string]int
}

func (p pickingSMS) PickConnector(sms delivery.SMS) (string, int) {
	name := p.route(sms)
	return name, p.budgets[name]
}

// TestIdleConnectorNotHeldBehindCappedOne: while thousands of a company's
// bulk SMS wait for a connector capped at 25 a second, another company's
// direct and transactional SMS through an idle connector reach it within a
// second, and so does the first company's own through the idle one: the
// capped connector holds its budget of the dispatcher's places, not all of
// them.
func TestIdleConnectorNotHeldBehindCappedOne(t *testing.T) {
	for _, st := range testStores() {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			a, b := newWorld(t, s), newWorld(t, s)
			const bulk = 3000
			a.campaign(spec{channel: messaging.ChannelSMS, phones: phones(bulk, 0)})
			route := func(sms delivery.SMS) string {
				if sms.CompanyID == a.co.ID && sms.Text != "Code" {
					return "capped"
				}
				return "idle"
			}
			q := newQueueSMS(t, route, map[string]time.Duration{"capped": 40 * time.Millisecond, "idle": 0})
			cfg := fastConfig(s)
			cfg.PollInterval = 50 * time.Millisecond
			cfg.SMS = pickingSMS{q, map[string]int{"capped": 50}}
			cfg.DrainTimeout = 100 * time.Millisecond
			d, err := delivery.New(cfg)
			require.NoError(t, err)
			run(t, d)
			waitFor(t, "the bulk under way", func() bool { return len(q.sent("capped")) >= 10 })
			// The capped connector has had time to fill every place.
			time.Sleep(300 * time.Millisecond)

			start := time.Now()
			code := func(int) string { return "Code" }
			b.campaign(spec{channel: messaging.ChannelSMS, phones: phones(5, 20000), hidden: true, text: code})
			b.campaign(spec{channel: messaging.ChannelSMS, mode: messaging.ModeTransactional, phones: phones(3, 30000), text: code})
			a.campaign(spec{channel: messaging.ChannelSMS, phones: phones(2, 40000), hidden: true, text: code})
			d.Wake()
			require.Eventually(t, func() bool { return len(q.sent("idle")) == 10 }, 15*time.Second, 5*time.Millisecond,
				"the idle connector's SMS")
			for _, x := range q.sent("idle") {
				require.Less(t, x.at.Sub(start), promptly, "SMS to %s reached its idle connector late", x.sms.To)
			}
			require.Less(t, len(q.sent("capped")), bulk/4, "the bulk still waits")
		})
	}
}

// queuedOn returns how many SMS wait in connector name's queue.
func (q *queueSMS) queuedOn(name string) int {
	c := q.conns[name]
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// TestIdleConnectorNotHeldBehindNewCampaignOnStalledOne: a new campaign on
// a stalled connector that holds its budget already, claimed before the
// dispatcher knows its connector, sends none of what it claimed past the
// budget: those go back to Pending at once, and another company's direct
// SMS through an idle connector go out within a second.
func TestIdleConnectorNotHeldBehindNewCampaignOnStalledOne(t *testing.T) {
	for _, st := range testStores() {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			a, b := newWorld(t, s), newWorld(t, s)
			const budget = 8
			route := func(sms delivery.SMS) string {
				if sms.CompanyID == a.co.ID {
					return "stalled"
				}
				return "idle"
			}
			q := newQueueSMS(t, route, map[string]time.Duration{"stalled": time.Hour, "idle": 0})
			cfg := fastConfig(s)
			cfg.PollInterval = 50 * time.Millisecond
			cfg.SMSConcurrency = 64
			cfg.SMS = pickingSMS{q, map[string]int{"stalled": budget}}
			cfg.DrainTimeout = 100 * time.Millisecond
			d, err := delivery.New(cfg)
			require.NoError(t, err)
			run(t, d)
			a.campaign(spec{channel: messaging.ChannelSMS, phones: phones(100, 0)})
			waitFor(t, "the stalled connector's budget taken", func() bool { return q.queuedOn("stalled") == budget })

			// A new campaign on the stalled connector: its first claim
			// could take every place left.
			a.campaign(spec{channel: messaging.ChannelSMS, phones: phones(300, 1000)})
			d.Wake()
			time.Sleep(300 * time.Millisecond)

			start := time.Now()
			b.campaign(spec{channel: messaging.ChannelSMS, hidden: true, phones: phones(5, 20000)})
			d.Wake()
			require.Eventually(t, func() bool { return len(q.sent("idle")) == 5 }, 5*time.Second, 5*time.Millisecond,
				"the idle connector's SMS")
			for _, x := range q.sent("idle") {
				require.Less(t, x.at.Sub(start), promptly, "SMS to %s reached its idle connector late", x.sms.To)
			}
			require.Equal(t, budget, q.queuedOn("stalled"), "the stalled connector holds its budget, no more")
		})
	}
}
