package sqlstore_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
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

// TestWebhookEventPacks: the events of one write for a company whose
// endpoints all take batches are one row, sent, listed, redelivered and
// purged as the events they hold.
func TestWebhookEventPacks(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			u := db.url(t)
			s := open(t, u)
			ids := messaging.NewIDGenerator(nil)
			msgs := startedFixture(t, s, ids, 5)
			ep := webhook.Endpoint{ID: ids.New(), CompanyID: msgs[0].CompanyID, URL: "https://hooks.example.com/a",
				Events: []webhook.EventType{webhook.MessageStatus}, Secret: "whsec_a", CreatedAt: time.Now(),
				Batch: webhook.Batch{MaxEvents: 3, MaxWait: time.Second}}
			require.NoError(t, s.CreateWebhook(ctx, &ep, 10))
			now := msgs[0].CreatedAt.Add(time.Minute)
			claimed, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: now, LeaseUntil: now.Add(time.Hour), Limit: 5})
			require.NoError(t, err)
			require.Len(t, claimed, 5)
			var updates []delivery.StatusUpdate
			for i, m := range msgs {
				updates = append(updates, delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent,
					At: now.Add(time.Duration(i) * time.Millisecond), ProviderMessageID: fmt.Sprintf("P%d", i)})
			}
			_, err = s.ApplyUpdates(ctx, updates)
			require.NoError(t, err)

			var counts []int // events a row
			rows, err := rawDB(t, u).QueryContext(ctx, "SELECT events FROM webhook_events ORDER BY id")
			require.NoError(t, err)
			for rows.Next() {
				var n int
				require.NoError(t, rows.Scan(&n))
				counts = append(counts, n)
			}
			require.NoError(t, rows.Err())
			require.NoError(t, rows.Close())
			require.Equal(t, []int{3, 2}, counts, "a row for the events of each delivery")

			ds, err := s.WaitingDeliveries(ctx, ep.ID, 100)
			require.NoError(t, err)
			require.Len(t, ds, 5)
			seen := map[messaging.ID]bool{}
			for i, d := range ds {
				require.False(t, seen[d.Event.ID], "each event with its own id")
				seen[d.Event.ID] = true
				require.Equal(t, msgs[i].ID, d.Event.Subject, "in order")
				require.Equal(t, webhook.MessageStatus, d.Event.Type)
				require.Equal(t, msgs[i].CompanyID, d.Event.CompanyID)
				requireSameTime(t, now.Add(time.Duration(i)*time.Millisecond), d.Event.CreatedAt)
				var data webhook.MessageStatusData
				require.NoError(t, json.Unmarshal(d.Event.Data, &data), "%s", d.Event.Data)
				require.Equal(t, msgs[i].ID, data.MessageID)
				require.Equal(t, messaging.StatusSent, data.Status)
				require.Equal(t, msgs[i].Phone, data.PhoneNumber)
			}
			require.Equal(t, ds[0].ID, ds[2].ID, "the first three in one delivery")
			require.NotEqual(t, ds[2].ID, ds[3].ID)

			at := now.Add(time.Minute)
			require.NoError(t, s.RecordAttempts(ctx, []webhook.Attempt{{DeliveryID: ds[0].ID, At: at, Status: 200, State: webhook.Delivered, NextAt: at}}))
			left, err := s.WaitingDeliveries(ctx, ep.ID, 100)
			require.NoError(t, err)
			require.Len(t, left, 2)
			require.Equal(t, ds[3].Event.ID, left[0].Event.ID)

			// the second event of the first pack, then its first: each is
			// split out of its delivery, still read from the pack
			require.NoError(t, s.Redeliver(ctx, ep.CompanyID, ep.ID, ds[1].Event.ID, at))
			require.NoError(t, s.Redeliver(ctx, ep.CompanyID, ep.ID, ds[0].Event.ID, at))
			again, err := s.WaitingDeliveries(ctx, ep.ID, 100)
			require.NoError(t, err)
			var got []messaging.ID
			for _, d := range again {
				got = append(got, d.Event.ID)
				if d.Event.ID == ds[1].Event.ID || d.Event.ID == ds[0].Event.ID {
					require.Equal(t, 1, d.Attempts, "its attempts are kept")
				}
			}
			require.ElementsMatch(t, []messaging.ID{ds[0].Event.ID, ds[1].Event.ID, ds[3].Event.ID, ds[4].Event.ID}, got)
			list, total, err := s.ListDeliveries(ctx, ep.CompanyID, ep.ID, messaging.PageRequest{Page: 1, PageSize: 10})
			require.NoError(t, err)
			require.Equal(t, 5, total)
			states := map[messaging.ID]webhook.DeliveryState{}
			for _, d := range list {
				states[d.Event.ID] = d.State
			}
			require.Equal(t, map[messaging.ID]webhook.DeliveryState{ds[0].Event.ID: webhook.Waiting, ds[1].Event.ID: webhook.Waiting,
				ds[2].Event.ID: webhook.Delivered, ds[3].Event.ID: webhook.Waiting, ds[4].Event.ID: webhook.Waiting}, states)

			n, err := s.PurgeEvents(ctx, time.Now().Add(time.Hour), 4)
			require.NoError(t, err)
			require.Equal(t, 5, n, "a row goes whole, its events counted")
			left, err = s.WaitingDeliveries(ctx, ep.ID, 100)
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}

// TestMigrationKeepsWebhookEventsOneARow: events written one a row before
// rows could hold several, with a delivery of several of them waiting, are
// read, sent and redelivered as before once the store migrated the
// database.
func TestMigrationKeepsWebhookEventsOneARow(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			u := db.url(t)
			require.NoError(t, sqlstore.MigrateBefore(ctx, u, "20261207000001_webhook_event_packs"))
			raw := rawDB(t, u)
			sqlite := db.name == "sqlite"
			id := func(id messaging.ID) any {
				if sqlite {
					return id[:]
				}
				return id.String()
			}
			ts := func(t time.Time) any {
				if sqlite {
					return t.UnixMicro()
				}
				return t
			}
			q := func(s string) string {
				if sqlite {
					return s
				}
				for i := 1; strings.Contains(s, "?"); i++ {
					s = strings.Replace(s, "?", fmt.Sprintf("$%d", i), 1)
				}
				return s
			}
			ids := messaging.NewIDGenerator(nil)
			company, ep := ids.New(), ids.New()
			created := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
			_, err := raw.ExecContext(ctx, q("INSERT INTO webhook_endpoints (id, company_id, url, events, secret, created_at, batch_max_events, "+
				"batch_max_wait_ms) VALUES (?, ?, 'https://hooks.example.com/a', 'optout.changed', 'x', ?, 100, 1000)"), id(ep), id(company), ts(created))
			require.NoError(t, err)
			evs := []messaging.ID{ids.New(), ids.New(), ids.New()}
			list := ""
			for i, ev := range evs {
				_, err := raw.ExecContext(ctx, q("INSERT INTO webhook_events (id, company_id, type, subject_id, created_at, data) "+
					"VALUES (?, ?, 'optout.changed', ?, ?, ?)"), id(ev), id(company), id(ev), ts(created), fmt.Sprintf(`{"n":%d}`, i))
				require.NoError(t, err)
				list += hex.EncodeToString(ev[:])
			}
			_, err = raw.ExecContext(ctx, q("INSERT INTO webhook_deliveries (id, endpoint_id, event_id, subject_id, state, next_at, event_ids, events) "+
				"VALUES (?, ?, ?, ?, 0, ?, ?, 3)"), id(ids.New()), id(ep), id(evs[0]), id(evs[0]), ts(created), list)
			require.NoError(t, err)

			s := open(t, u)
			waiting, err := s.WaitingDeliveries(ctx, ep, 100)
			require.NoError(t, err)
			require.Len(t, waiting, 3)
			for i, d := range waiting {
				require.Equal(t, evs[i], d.Event.ID)
				require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, i), string(d.Event.Data))
			}
			now := time.Now()
			require.NoError(t, s.RecordAttempts(ctx, []webhook.Attempt{{DeliveryID: waiting[0].ID, At: now, Status: 200, State: webhook.Delivered, NextAt: now}}))
			require.NoError(t, s.Redeliver(ctx, company, ep, evs[1], now))
			waiting, err = s.WaitingDeliveries(ctx, ep, 100)
			require.NoError(t, err)
			require.Len(t, waiting, 1)
			require.Equal(t, evs[1], waiting[0].Event.ID)
			list2, total, err := s.ListDeliveries(ctx, company, ep, messaging.PageRequest{Page: 1, PageSize: 10})
			require.NoError(t, err)
			require.Equal(t, 3, total)
			require.Len(t, list2, 3)
		})
	}
}

// requireSameTime fails unless a and b are the same time to the
// microsecond.
func requireSameTime(t *testing.T, want, got time.Time) {
	t.Helper()
	require.Equal(t, want.UnixMicro(), got.UnixMicro(), "want %v, got %v", want, got)
}
