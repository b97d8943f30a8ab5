package campaign_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

func TestNextFollowsTheSpecTable(t *testing.T) {
	const (
		Q  = messaging.CampaignQueuing
		R  = messaging.CampaignReady
		IP = messaging.CampaignInProgress
		C  = messaging.CampaignCompleted
		F  = messaging.CampaignFailed
		P  = messaging.CampaignPaused
	)
	type key struct {
		from messaging.CampaignStatus
		ev   campaign.Event
	}
	want := map[key]messaging.CampaignStatus{
		{"", campaign.EventCreateTransactional}: IP,
		{"", campaign.EventCreateBulk}:          Q,
		{Q, campaign.EventPrepared}:             R,
		{Q, campaign.EventAutoStart}:            IP,
		{Q, campaign.EventPreparationFailed}:    F,
		{R, campaign.EventStart}:                IP,
		{R, campaign.EventSchedule}:             R,
		{IP, campaign.EventDrained}:             C,
		{IP, campaign.EventPause}:               P,
		{P, campaign.EventResume}:               IP,
		{R, campaign.EventCancel}:               C,
		{IP, campaign.EventCancel}:              C,
		{P, campaign.EventCancel}:               C,
	}
	events := []campaign.Event{campaign.EventCreateTransactional, campaign.EventCreateBulk, campaign.EventPrepared,
		campaign.EventPreparationFailed, campaign.EventStart, campaign.EventAutoStart, campaign.EventDrained,
		campaign.EventPause, campaign.EventResume, campaign.EventCancel, campaign.EventSchedule}
	froms := append([]messaging.CampaignStatus{""}, messaging.CampaignStatuses()...)
	for _, from := range froms {
		for _, ev := range events {
			got, err := campaign.Next(from, ev)
			to, ok := want[key{from, ev}]
			if ok {
				require.NoError(t, err, "%q on %s", from, ev)
				require.Equal(t, to, got, "%q on %s", from, ev)
				continue
			}
			require.Error(t, err, "%q on %s must be refused", from, ev)
			require.Equal(t, from, got)
		}
	}
}

func TestNextErrorNames(t *testing.T) {
	tests := []struct {
		from messaging.CampaignStatus
		ev   campaign.Event
		code messaging.Code
		name string
	}{
		{messaging.CampaignQueuing, campaign.EventStart, messaging.Invalid, messaging.NameCampaignNotReady},
		{messaging.CampaignInProgress, campaign.EventStart, messaging.Invalid, messaging.NameCampaignNotReady},
		{messaging.CampaignCompleted, campaign.EventStart, messaging.Invalid, messaging.NameCampaignNotReady},
		{messaging.CampaignReady, campaign.EventDrained, messaging.Invalid, messaging.NameCampaignNotActive},
		{messaging.CampaignReady, campaign.EventPrepared, messaging.Conflict, messaging.NameConflict},
		{messaging.CampaignPaused, campaign.EventPause, messaging.Invalid, messaging.NameCampaignNotActive},
		{messaging.CampaignInProgress, campaign.EventResume, messaging.Invalid, messaging.NameBadRequest},
		{messaging.CampaignCompleted, campaign.EventCancel, messaging.Invalid, messaging.NameBadRequest},
	}
	for _, tt := range tests {
		_, err := campaign.Next(tt.from, tt.ev)
		var e *messaging.Error
		require.True(t, errors.As(err, &e))
		require.Equal(t, tt.code, e.Code)
		require.Equal(t, tt.name, e.Name)
	}
}

func TestSources(t *testing.T) {
	require.Equal(t, []messaging.CampaignStatus{messaging.CampaignReady}, campaign.Sources(campaign.EventStart))
	require.Equal(t, []messaging.CampaignStatus{messaging.CampaignInProgress}, campaign.Sources(campaign.EventDrained))
	require.Empty(t, campaign.Sources(campaign.EventCreateBulk))
}

func TestCanAddMessages(t *testing.T) {
	base := messaging.Campaign{Channel: messaging.ChannelSMS, Mode: messaging.ModeTransactional, Status: messaging.CampaignInProgress}
	tests := []struct {
		name   string
		mutate func(c *messaging.Campaign)
		ch     messaging.Channel
		want   string
	}{
		{"ok sms", func(*messaging.Campaign) {}, messaging.ChannelSMS, ""},
		{"ok chat", func(c *messaging.Campaign) { c.Channel = messaging.ChannelChat }, messaging.ChannelChat, ""},
		{"chat campaign on sms endpoint", func(c *messaging.Campaign) { c.Channel = messaging.ChannelChat }, messaging.ChannelSMS, messaging.NameNotSMSCampaign},
		{"sms campaign on chat endpoint", func(*messaging.Campaign) {}, messaging.ChannelChat, messaging.NameNotChatCampaign},
		{"bulk", func(c *messaging.Campaign) { c.Mode = messaging.ModeBulk }, messaging.ChannelSMS, messaging.NameCannotAddToBulk},
		{"completed", func(c *messaging.Campaign) { c.Status = messaging.CampaignCompleted }, messaging.ChannelSMS, messaging.NameCampaignNotActive},
		{"ready", func(c *messaging.Campaign) { c.Status = messaging.CampaignReady }, messaging.ChannelSMS, messaging.NameCampaignNotActive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mutate(&c)
			err := campaign.CanAddMessages(c, tt.ch)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			var e *messaging.Error
			require.True(t, errors.As(err, &e))
			require.Equal(t, tt.want, e.Name)
			require.Equal(t, messaging.Invalid, e.Code)
		})
	}
}

func TestLimits(t *testing.T) {
	l := campaign.Limits{}.WithDefaults()
	require.Equal(t, 50_000, l.MaxPending)
	require.NoError(t, l.CheckRecipients(200_000))
	err := l.CheckRecipients(200_001)
	var e *messaging.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, messaging.NameTooManyRecipients, e.Name)
	require.Equal(t, messaging.Invalid, e.Code)
	require.Error(t, campaign.Limits{MaxRecipients: 10}.CheckRecipients(11))

	storeErr := &messaging.Error{Code: messaging.RateLimited, Capacity: &messaging.Capacity{
		CurrentPending: 49_990, RequestedCount: 20, MaxAllowed: 50_000, AvailableCapacity: 10}}
	hinted := l.RetryHint(storeErr)
	require.True(t, errors.As(hinted, &e))
	require.Equal(t, messaging.NameTooManyPending, e.Name)
	require.Equal(t, 60, e.Capacity.RetryAfterSeconds)
	require.Equal(t, 49_990, e.Capacity.CurrentPending)
	require.Zero(t, storeErr.Capacity.RetryAfterSeconds, "the store's error is not modified")
	plain := errors.New("disk full")
	require.Same(t, plain, l.RetryHint(plain))
}
