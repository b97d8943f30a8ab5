package delivery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// TestRatesWaitPerChannel: a claim on one channel that finds none of a
// capped company's messages does not stop the other channel's lane from
// claiming again as soon as the company has turns: each lane answers for
// its own channel. Both lanes claim in every process, so a chat lane that
// finds nothing would otherwise slow the company's SMS to the poll
// interval.
func TestRatesWaitPerChannel(t *testing.T) {
	co := messaging.MustParseID("0190f5d2-7c1e-7a00-8000-000000000001")
	now := time.Unix(1_800_000_000, 0)
	var r companyRates
	r.set(map[messaging.ID]float64{co: 100}, 1, now)

	// The SMS lane takes the whole quota and uses it: more may wait.
	q := r.take(now)
	require.Equal(t, 10, q[co], "a tenth of a second's worth")
	sms := make([]messaging.Message, q[co])
	for i := range sms {
		sms[i] = messaging.Message{CompanyID: co, Channel: messaging.ChannelSMS}
	}
	r.settle(messaging.ChannelSMS, q, sms)

	// The chat lane claims once turns are back and finds none.
	later := now.Add(60 * time.Millisecond)
	q = r.take(later)
	require.Positive(t, q[co])
	r.settle(messaging.ChannelChat, q, nil)

	w, ok := r.wait(messaging.ChannelSMS, later)
	require.True(t, ok, "the SMS lane still has the company's messages to claim")
	require.Zero(t, w, "and may claim at once: the chat claim gave its turns back")
	_, ok = r.wait(messaging.ChannelChat, later)
	require.False(t, ok, "the chat lane has none of them waiting")

	// The SMS lane then takes less than its quota: nothing waits there either.
	q = r.take(later)
	r.settle(messaging.ChannelSMS, q, sms[:1])
	_, ok = r.wait(messaging.ChannelSMS, later)
	require.False(t, ok)
}
