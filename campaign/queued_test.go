package campaign_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

func TestOnQueued(t *testing.T) {
	ctx := t.Context()
	var calls atomic.Int64
	st := memstore.New()
	svc := must(campaign.New(campaign.Config{Store: st, Limits: campaign.Limits{MaxPending: 3}, OnQueued: func() { calls.Add(1) }}))
	t.Cleanup(svc.Close)
	acc := must(accounts.New(accounts.Config{Store: st}))
	c, err := acc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, acc.SetCompanyActive(ctx, c.ID, true))
	sender, err := acc.RegisterSMSSender(ctx, c.ID, "ACME")
	require.NoError(t, err)
	require.NoError(t, acc.ApproveSMSSender(ctx, sender.ID))
	tpl, err := svc.CreateTemplate(ctx, c.ID, messaging.Template{Channel: messaging.ChannelSMS, Name: "t", SMSSenderID: sender.ID, Content: "Hi"})
	require.NoError(t, err)

	// A bulk campaign prepared to Ready is not due yet; started, it is.
	res, err := svc.SendBulk(ctx, c.ID, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tpl.ID, Recipients: []campaign.Recipient{{Phone: "+447700900001"}}})
	require.NoError(t, err)
	require.NoError(t, svc.Wait(ctx))
	require.Zero(t, calls.Load())
	_, err = svc.Start(ctx, c.ID, res.Campaign.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, calls.Load())

	tx, err := svc.CreateTransactional(ctx, c.ID, messaging.ChannelSMS, campaign.NewCampaign{Name: "otp", TemplateID: tpl.ID})
	require.NoError(t, err)
	_, err = svc.AddMessage(ctx, c.ID, messaging.ChannelSMS, tx.ID, campaign.Recipient{Phone: "+447700900002"})
	require.NoError(t, err)
	require.EqualValues(t, 2, calls.Load())

	_, err = svc.SendDirectSMS(ctx, c.ID, campaign.DirectSMS{Content: "Hello", SMSSenderID: sender.ID, Recipients: []campaign.Recipient{{Phone: "+447700900003"}}})
	require.NoError(t, err)
	require.EqualValues(t, 3, calls.Load())

	// Refused: the capacity of 3 is used up. Nothing became due.
	_, err = svc.AddMessage(ctx, c.ID, messaging.ChannelSMS, tx.ID, campaign.Recipient{Phone: "+447700900004"})
	require.True(t, messaging.IsCode(err, messaging.RateLimited), "%v", err)
	require.EqualValues(t, 3, calls.Load())
}
