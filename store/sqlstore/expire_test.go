package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// TestExpireReceiptsCatchesUpSliceBySlice: a sweep whose window spans
// many slices of send time, with stretches without sends between them (a
// process back from a stop), marks every SMS of the window still waiting
// for its receipt, each once, leaves those whose receipt came, and a
// second sweep over the same window marks none.
func TestExpireReceiptsCatchesUpSliceBySlice(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			s := open(t, db.url(t))
			ctx := t.Context()
			ids := messaging.NewIDGenerator(nil)
			msgs := startedFixture(t, s, ids, 6)
			at := msgs[0].CreatedAt
			c := msgs[0]
			got, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: at.Add(time.Minute), LeaseUntil: at.Add(time.Hour), Limit: 6, Owner: "test"})
			require.NoError(t, err)
			require.Len(t, got, 6)
			// Sent 0, 25, 50, ... 125 minutes after the start; the receipts
			// of the messages sent at 25 and 100 minutes come.
			var updates []delivery.StatusUpdate
			var receipts []delivery.Receipt
			for i, m := range got {
				pid := fmt.Sprintf("part-%d", i)
				updates = append(updates, delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent,
					At: at.Add(time.Duration(25*i) * time.Minute), PartIDs: []string{pid}})
				if i == 1 || i == 4 {
					receipts = append(receipts, delivery.Receipt{ProviderID: pid, State: delivery.StateDelivered, Err: "000", At: at.Add(3 * time.Hour)})
				}
			}
			_, err = s.ApplyBatch(ctx, updates, receipts, at.Add(3*time.Hour))
			require.NoError(t, err)

			now := at.Add(5 * time.Hour)
			n, err := s.ExpireReceipts(ctx, at.Add(4*time.Hour), now, "NO_RECEIPT")
			require.NoError(t, err)
			require.Equal(t, 4, n, "the four still Sent, over four hours: a slice from each part on")
			n, err = s.ExpireReceipts(ctx, at.Add(4*time.Hour), now, "NO_RECEIPT")
			require.NoError(t, err)
			require.Zero(t, n)
			camp, err := s.GetCampaign(ctx, c.CompanyID, c.CampaignID)
			require.NoError(t, err)
			require.Equal(t, 4, camp.Counts.Unconfirmed)
			require.Equal(t, 2, camp.Counts.Delivered)
		})
	}
}
