package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
)

// TestSummary: today's summary counts a direct send's messages by status
// and channel; a since more than seven days back is refused.
func TestSummary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	res, err := e.c.SendSMS(ctx, client.DirectSMS{MessageContent: "a", SMSSenderID: e.SenderID,
		Recipients: []client.DirectRecipient{{PhoneNumber: phone(1)}, {PhoneNumber: phone(2)}}})
	require.NoError(t, err)
	e.waitCampaign(res.CampaignID, "delivered", func(c *client.CampaignDetail) bool { return c.DeliveredCount == 2 })

	s, err := e.c.Summary(ctx, time.Time{})
	require.NoError(t, err)
	require.Equal(t, 2, s.Total)
	require.Equal(t, 2, s.ByStatus.Delivered)
	require.Equal(t, 2, s.ByChannel.SMS.Total)
	require.Zero(t, s.ByChannel.Chat.Total)
	require.NotNil(t, s.DeliveryRate)
	require.InDelta(t, 100, *s.DeliveryRate, 0.001)
	require.Empty(t, s.FailuresByReason)
	require.False(t, s.Since.After(time.Now()))

	later, err := e.c.Summary(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, later.Total, "nothing was created since a time to come")

	_, err = e.c.Summary(ctx, time.Now().Add(-8*24*time.Hour))
	invalid(t, err, "since")
}
