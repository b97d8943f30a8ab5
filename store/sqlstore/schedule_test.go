package sqlstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
)

// TestScheduledCampaignsStartOnceAcrossProcesses: the services of four
// processes (two stores on one database, two services on each) looking for
// due campaigns at the same moment start each campaign whose time came
// once between them, and leave the one scheduled later.
func TestScheduledCampaignsStartOnceAcrossProcesses(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			url := db.url(t)
			stores := []*sqlstore.Store{open(t, url), open(t, url)}
			ctx, st := t.Context(), stores[0]
			ids := messaging.NewIDGenerator(nil)
			now := time.Now().UTC()
			co := messaging.Company{ID: ids.New(), Name: "A", Active: true, CreatedAt: now}
			require.NoError(t, st.CreateCompany(ctx, &co))
			const due = 30
			var all []messaging.ID
			for i := range due + 1 {
				c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Name: "c", Channel: messaging.ChannelSMS, Mode: messaging.ModeBulk,
					Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText, CreatedAt: now, UpdatedAt: now}
				require.NoError(t, st.CreateCampaign(ctx, &c, 1000))
				require.NoError(t, st.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: co.ID, CampaignID: c.ID,
					From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignReady, At: now}))
				when := now.Add(-time.Duration(i) * time.Millisecond)
				if i == due {
					when = now.Add(time.Hour)
				}
				require.NoError(t, st.ScheduleCampaign(ctx, co.ID, c.ID, when, now))
				all = append(all, c.ID)
			}

			var wg sync.WaitGroup
			started := make([]int, 4)
			for i := range started {
				svc, err := campaign.New(campaign.Config{Store: stores[i%2]})
				require.NoError(t, err)
				wg.Go(func() {
					n, err := svc.StartDue(ctx)
					require.NoError(t, err)
					started[i] = n
				})
			}
			wg.Wait()
			total := 0
			for _, n := range started {
				total += n
			}
			require.Equal(t, due, total, "each due campaign started once: %v", started)
			for i, id := range all {
				c, err := st.GetCampaign(ctx, co.ID, id)
				require.NoError(t, err)
				if i == due {
					require.Equal(t, messaging.CampaignReady, c.Status, "scheduled an hour ahead")
					continue
				}
				require.Equal(t, messaging.CampaignInProgress, c.Status)
				require.NotNil(t, c.ScheduledAt)
			}
		})
	}
}
