package campaign_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

func TestStatsOf(t *testing.T) {
	tests := []struct {
		name string
		c    messaging.Campaign
		want campaign.Stats
	}{
		{"empty", messaging.Campaign{Status: messaging.CampaignInProgress}, campaign.Stats{}},
		{"queuing counts planned as pending", messaging.Campaign{Status: messaging.CampaignQueuing, Planned: 100,
			Counts: messaging.StatusCounts{Pending: 40}}, campaign.Stats{TotalMessages: 100, Prepared: 40, Pending: 100}},
		{"sms outcomes: no chat messages, no rate", messaging.Campaign{Status: messaging.CampaignCompleted, Channel: messaging.ChannelSMS,
			Counts: messaging.StatusCounts{Sent: 1, Delivered: 6, Failed: 3}},
			campaign.Stats{TotalMessages: 10, Prepared: 10, Pending: 1, Delivered: 6, Failed: 3}},
		{"unconfirmed sms are not pending", messaging.Campaign{Status: messaging.CampaignCompleted, Channel: messaging.ChannelSMS,
			Counts: messaging.StatusCounts{Sent: 3, Delivered: 6, Failed: 1, Unconfirmed: 2}},
			campaign.Stats{TotalMessages: 10, Prepared: 10, Pending: 1, Delivered: 6, Failed: 1, Unconfirmed: 2}},
		{"chat outcomes", messaging.Campaign{Status: messaging.CampaignCompleted, Channel: messaging.ChannelChat,
			Counts: messaging.StatusCounts{Sent: 1, Delivered: 6, Failed: 3}},
			campaign.Stats{TotalMessages: 10, Prepared: 10, Pending: 1, Delivered: 6, Failed: 3, OverallDeliveryRate: 60}},
		{"chat with fallback", messaging.Campaign{Status: messaging.CampaignCompleted, Channel: messaging.ChannelChat,
			Counts:         messaging.StatusCounts{Delivered: 2, Seen: 3, Failed: 4, Pending: 1, Sending: 1, Sent: 1},
			FallbackCounts: messaging.StatusCounts{Delivered: 2, Failed: 1, Pending: 1}},
			campaign.Stats{TotalMessages: 12, Prepared: 12, Pending: 3, Delivered: 5, Seen: 3, Failed: 4,
				FallbackCount: 4, FallbackDelivered: 2, FallbackFailed: 1, OverallDeliveryRate: 58.33}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := campaign.StatsOf(tt.c)
			require.Equal(t, tt.want, got)
			require.Equal(t, got.TotalMessages, got.Pending+got.Delivered+got.Failed+got.Unconfirmed,
				"every message is in exactly one of pending, delivered (seen included), failed and unconfirmed")
			require.LessOrEqual(t, got.Seen, got.Delivered, "seen is a part of delivered")
		})
	}
}
