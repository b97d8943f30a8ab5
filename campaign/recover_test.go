package campaign_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// blockingStore holds InsertMessages until release is closed, so a
// preparation stays in progress while the test looks at it.
type blockingStore struct {
	*memstore.Store
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) InsertMessages(ctx context.Context, msgs []*messaging.Message) error {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return b.Store.InsertMessages(ctx, msgs)
}

func TestRecoverPreparations(t *testing.T) {
	ctx := t.Context()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(base.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	store := &blockingStore{Store: memstore.New(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	svc := must(campaign.New(campaign.Config{Store: store, Now: now}))
	t.Cleanup(svc.Close)
	acc := must(accounts.New(accounts.Config{Store: store, Now: now}))

	company, err := acc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, acc.SetCompanyActive(ctx, company.ID, true))
	sender, err := acc.RegisterSMSSender(ctx, company.ID, "ACME")
	require.NoError(t, err)
	require.NoError(t, acc.ApproveSMSSender(ctx, sender.ID))
	tpl, err := svc.CreateTemplate(ctx, company.ID, messaging.Template{
		Channel: messaging.ChannelSMS, Name: "promo", SMSSenderID: sender.ID, Content: "Hi",
	})
	require.NoError(t, err)

	// A campaign another process left Queuing when it stopped: written
	// straight to the store, as that process would have.
	ids := messaging.NewIDGenerator(now)
	abandoned := messaging.Campaign{
		ID: ids.New(), CompanyID: company.ID, Name: "abandoned", Channel: messaging.ChannelSMS,
		Mode: messaging.ModeBulk, Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText,
		Planned: 40, CreatedAt: base, UpdatedAt: base,
	}
	require.NoError(t, store.CreateCampaign(ctx, &abandoned, 1000))

	// A preparation of this Service, held in progress.
	res, err := svc.SendBulk(ctx, company.ID, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tpl.ID, Recipients: []campaign.Recipient{{Phone: "998901234567"}, {Phone: "998901234568"}}})
	require.NoError(t, err)
	<-store.entered

	// Too recent: another process may still be preparing it.
	clock.Store(base.Add(time.Minute).UnixNano())
	n, err := svc.RecoverPreparations(ctx, 0)
	require.NoError(t, err)
	require.Zero(t, n)
	c, err := svc.GetCampaign(ctx, company.ID, abandoned.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.CampaignQueuing, c.Status)

	clock.Store(base.Add(campaign.DefaultStaleAfter + time.Minute).UnixNano())
	n, err = svc.RecoverPreparations(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the abandoned campaign; this Service's own preparation is left alone")

	c, err = svc.GetCampaign(ctx, company.ID, abandoned.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.CampaignFailed, c.Status)
	require.Equal(t, campaign.ReasonPreparationInterrupted, c.FailureReason)
	pending, err := store.PendingCount(ctx, company.ID)
	require.NoError(t, err)
	require.Equal(t, 2, pending, "the abandoned reservation is released; the live one is kept")

	c, err = svc.GetCampaign(ctx, company.ID, res.Campaign.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.CampaignQueuing, c.Status)
	close(store.release)
	require.NoError(t, svc.Wait(ctx))
	c, err = svc.GetCampaign(ctx, company.ID, res.Campaign.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.CampaignReady, c.Status)

	n, err = svc.RecoverPreparations(ctx, time.Second)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left Queuing")
}
