package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// TestInsertMessagesMixedBatch writes one batch large enough for the bulk
// paths (several SQLite statements, a Postgres COPY) whose messages share
// some columns and not others, with values that need quoting or escaping,
// and reads every message back.
func TestInsertMessagesMixedBatch(t *testing.T) {
	base := time.Date(2026, time.March, 2, 9, 30, 0, 123456000, time.UTC)
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			s := open(t, db.url(t))
			ctx := t.Context()
			ids := messaging.NewIDGenerator(func() time.Time { return base })
			co := messaging.Company{ID: ids.New(), Name: "Mixed", CreatedAt: base}
			require.NoError(t, s.CreateCompany(ctx, &co))
			const perTest = 1200      // more than one SQLite statement, a Postgres COPY
			const n = 3 * perTest / 2 // per campaign
			newCampaign := func(ch messaging.Channel) messaging.Campaign {
				c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Name: "c", Channel: ch, Mode: messaging.ModeBulk,
					Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText, Planned: n, CreatedAt: base, UpdatedAt: base}
				require.NoError(t, s.CreateCampaign(ctx, &c, 10*n))
				return c
			}
			chat, sms := newCampaign(messaging.ChannelChat), newCampaign(messaging.ChannelSMS)

			tests := []struct {
				name string
				make func(i int, m *messaging.Message)
			}{
				{"shared quoted content", func(i int, m *messaging.Message) {
					m.Content = "It's ready; don't reply \\ 'quoted' \"too\""
				}},
				{"shared long content", func(i int, m *messaging.Message) {
					m.Content = strings.Repeat("Long shared text, bound rather than written as a constant. ", 5)
				}},
				{"varying everything", func(i int, m *messaging.Message) {
					m.Content = fmt.Sprintf("line one\nline\ttwo\r%d ✓ ünïcode", i)
					m.ExternalUserID = fmt.Sprintf("ext'%d", i%7)
					m.DueAt = base.Add(time.Duration(i) * time.Millisecond)
					m.Attempts = i % 3
					if i%5 == 0 {
						m.Config = &messaging.ChatConfig{ButtonText: "Go", ButtonURL: fmt.Sprintf("https://example.com/o/%d?a=1&b='x'", i)}
					}
					if i%11 == 0 {
						m.LeaseUntil = base.Add(time.Hour)
						m.Details, m.SMSErrorCode, m.ProviderMessageID = "UNDELIV\t", "005", fmt.Sprintf("p-%d", i)
						sent := base.Add(time.Duration(i) * time.Second)
						m.SentAt = &sent
					}
				}},
			}
			var all []*messaging.Message
			for _, tt := range tests {
				msgs := make([]*messaging.Message, perTest)
				for i := range msgs {
					c := sms
					if i%2 == 0 {
						c = chat
					}
					m := &messaging.Message{ID: ids.New(), CompanyID: co.ID, CampaignID: c.ID, Channel: c.Channel,
						Phone: fmt.Sprintf("4479%08d", i), Status: messaging.StatusPending, DueAt: base, CreatedAt: base, UpdatedAt: base}
					tt.make(i, m)
					msgs[i] = m
				}
				require.NoError(t, s.InsertMessages(ctx, msgs), tt.name)
				for i, m := range msgs {
					got, err := s.GetMessage(ctx, co.ID, m.ID)
					require.NoError(t, err, "%s: message %d", tt.name, i)
					requireSameMessage(t, *m, got, "%s: message %d", tt.name, i)
				}
				all = append(all, msgs...)
			}

			var wantChat, wantSMS int
			for _, m := range all {
				if m.CampaignID == chat.ID {
					wantChat++
				} else {
					wantSMS++
				}
			}
			for c, want := range map[messaging.ID]int{chat.ID: wantChat, sms.ID: wantSMS} {
				got, err := s.GetCampaign(ctx, co.ID, c)
				require.NoError(t, err)
				require.Equal(t, messaging.StatusCounts{Pending: want}, got.Counts)
			}
			pending, err := s.PendingCount(ctx, co.ID)
			require.NoError(t, err)
			require.Equal(t, 2*n, pending, "inserting within the reservations leaves the pending count")
			fixed, err := s.ReconcilePending(ctx)
			require.NoError(t, err)
			require.Zero(t, fixed)
		})
	}
}

// requireSameMessage compares messages with their times as instants, to
// the microsecond.
func requireSameMessage(t *testing.T, want, got messaging.Message, msgAndArgs ...any) {
	t.Helper()
	norm := func(m *messaging.Message) {
		for _, p := range []*time.Time{&m.DueAt, &m.LeaseUntil, &m.CreatedAt, &m.UpdatedAt} {
			if !p.IsZero() {
				*p = p.UTC().Truncate(time.Microsecond)
			}
		}
		for _, p := range []**time.Time{&m.SentAt, &m.DeliveredAt, &m.SeenAt} {
			if *p != nil {
				v := (*p).UTC().Truncate(time.Microsecond)
				*p = &v
			}
		}
	}
	norm(&want)
	norm(&got)
	require.Equal(t, want, got, msgAndArgs...)
}
