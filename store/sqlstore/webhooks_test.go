package sqlstore_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
	"github.com/heraldhq/herald/webhook"
)

// TestPostgresMigrationKeepsWebhookDeliveries: the deliveries of a
// batched endpoint written before deliveries could hold several events,
// one a row, are read, listed, recorded and redelivered as before once the
// store migrated the database.
func TestPostgresMigrationKeepsWebhookDeliveries(t *testing.T) {
	ctx := t.Context()
	u := pgtest.SchemaURL(t)
	require.NoError(t, sqlstore.MigrateBefore(ctx, u, "20261127009501_webhook_delivery_events"))
	db := rawDB(t, u)
	company := messaging.MustParseID("01900000-0000-7000-8000-00000000000a")
	ep := messaging.MustParseID("01900000-0000-7000-8000-00000000000e")
	ev1 := messaging.MustParseID("01900000-0000-7000-8000-000000000101")
	ev2 := messaging.MustParseID("01900000-0000-7000-8000-000000000102")
	_, err := db.ExecContext(ctx, "INSERT INTO webhook_endpoints (id, company_id, url, events, secret, created_at, batch_max_events, "+
		"batch_max_wait_ms) VALUES ($1, $2, 'https://hooks.example.com/a', 'optout.changed', 'x', now(), 100, 1000)", ep.String(), company.String())
	require.NoError(t, err)
	for i, ev := range []messaging.ID{ev1, ev2} {
		_, err := db.ExecContext(ctx, "INSERT INTO webhook_events (id, company_id, type, subject_id, created_at, data) "+
			"VALUES ($1, $2, 'optout.changed', $1, now(), '{\"n\":1}')", ev.String(), company.String())
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "INSERT INTO webhook_deliveries (id, endpoint_id, event_id, subject_id, state, next_at) "+
			"VALUES ($1, $2, $3, $3, $4, now())", messaging.NewIDGenerator(nil).New().String(), ep.String(), ev.String(), 1-i)
		require.NoError(t, err)
	}

	s := open(t, u)
	waiting, err := s.WaitingDeliveries(ctx, ep, 100)
	require.NoError(t, err)
	require.Len(t, waiting, 1)
	require.Equal(t, ev2, waiting[0].Event.ID)
	require.JSONEq(t, `{"n":1}`, string(waiting[0].Event.Data))

	list, total, err := s.ListDeliveries(ctx, company, ep, messaging.PageRequest{Page: 1, PageSize: 10})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, list, 2)
	require.Equal(t, ev2, list[0].Event.ID, "latest event first")
	require.Equal(t, webhook.Delivered, list[1].State)

	now := time.Now()
	require.NoError(t, s.RecordAttempts(ctx, []webhook.Attempt{{DeliveryID: waiting[0].ID, At: now, Status: 200, State: webhook.Delivered, NextAt: now}}))
	waiting, err = s.WaitingDeliveries(ctx, ep, 100)
	require.NoError(t, err)
	require.Empty(t, waiting)
	require.NoError(t, s.Redeliver(ctx, company, ep, ev1, now))
	waiting, err = s.WaitingDeliveries(ctx, ep, 100)
	require.NoError(t, err)
	require.Len(t, waiting, 1)
	require.Equal(t, ev1, waiting[0].Event.ID)
}

// TestStatusEventsWithAndWithoutData: a message.status event written with
// its status only (by a process that had not yet found an endpoint, or by
// an older build) is described when read; once an endpoint is known, the
// event is written with its data. Both read the same.
func TestStatusEventsWithAndWithoutData(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			u := db.url(t)
			s := open(t, u)
			ids := messaging.NewIDGenerator(nil)
			msgs := startedFixture(t, s, ids, 2)
			ep := webhook.Endpoint{ID: ids.New(), CompanyID: msgs[0].CompanyID, URL: "https://hooks.example.com/a",
				Events: []webhook.EventType{webhook.MessageStatus}, Secret: "whsec_a", CreatedAt: time.Now()}
			require.NoError(t, s.CreateWebhook(ctx, &ep, 10))
			now := msgs[0].CreatedAt.Add(time.Minute)
			claimed, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: now, LeaseUntil: now.Add(time.Hour), Limit: 2})
			require.NoError(t, err)
			require.Len(t, claimed, 2)

			s.ForgetEndpoints()
			for i, m := range msgs {
				applied, err := s.ApplyUpdates(ctx, []delivery.StatusUpdate{{MessageID: m.ID, Status: messaging.StatusSent,
					At: now.Add(time.Duration(i) * time.Second), ProviderMessageID: fmt.Sprintf("P%d", i)}})
				require.NoError(t, err)
				require.Equal(t, []bool{true}, applied)
			}
			rows, err := rawDB(t, u).QueryContext(ctx, "SELECT render FROM webhook_events ORDER BY id")
			require.NoError(t, err)
			var render []bool
			for rows.Next() {
				var r bool
				require.NoError(t, rows.Scan(&r))
				render = append(render, r)
			}
			require.NoError(t, rows.Err())
			require.NoError(t, rows.Close())
			require.Equal(t, []bool{true, false}, render, "the first with its status only, the second with its data")

			ds, err := s.WaitingDeliveries(ctx, ep.ID, 100)
			require.NoError(t, err)
			require.Len(t, ds, 2)
			for i, d := range ds {
				var data webhook.MessageStatusData
				require.NoError(t, json.Unmarshal(d.Event.Data, &data), "%s", d.Event.Data)
				require.Equal(t, msgs[i].ID, data.MessageID)
				require.Equal(t, messaging.StatusSent, data.Status)
				require.Equal(t, msgs[i].Phone, data.PhoneNumber)
				require.NotNil(t, data.ExternalUserID)
				require.Equal(t, msgs[i].ExternalUserID, *data.ExternalUserID)
				require.NotNil(t, data.SentAt)
				require.Equal(t, msgs[i].CampaignID, data.CampaignID)
			}
		})
	}
}
