package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
)

// TestCheck: herald check exits 0 on a database whose counters agree with
// its rows, and 1, naming each counter with both values, once a message
// row changed behind the store's back.
func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	url := "sqlite://" + path
	s, err := sqlstore.Open(t.Context(), url, sqlstore.Config{})
	require.NoError(t, err)
	ids := messaging.NewIDGenerator(nil)
	now := time.Date(2026, time.March, 2, 9, 30, 0, 0, time.UTC)
	co := messaging.Company{ID: ids.New(), Name: "Check", Active: true, CreatedAt: now}
	require.NoError(t, s.CreateCompany(t.Context(), &co))
	c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Name: "check", Channel: messaging.ChannelSMS,
		Mode: messaging.ModeBulk, Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText,
		Planned: 3, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.CreateCampaign(t.Context(), &c, 3))
	var msgs []*messaging.Message
	for i := range 3 {
		msgs = append(msgs, &messaging.Message{ID: ids.New(), CompanyID: co.ID, CampaignID: c.ID, Channel: messaging.ChannelSMS,
			Phone: fmt.Sprintf("44790000000%d", i), Content: "Hello", Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now})
	}
	require.NoError(t, s.InsertMessages(t.Context(), msgs))
	require.NoError(t, s.Close())

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"check", "--database-url", url}, env(nil), &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "agrees with the rows")

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), "UPDATE messages SET status = 'Delivered' WHERE phone = '447900000001'")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	out.Reset()
	errOut.Reset()
	require.Equal(t, 1, run(t.Context(), []string{"check"}, env(map[string]string{"HERALD_DATABASE_URL": url}), &out, &errOut))
	require.Equal(t, fmt.Sprintf("company %[1]s: pending count 3, rows give 2\n"+
		"campaign %[2]s (company %[1]s): delivered 0, rows give 1\n"+
		"campaign %[2]s (company %[1]s): pending 3, rows give 2\n", co.ID, c.ID), out.String())
	require.Contains(t, errOut.String(), "counters differ from the rows: 3")

	out.Reset()
	require.Equal(t, 1, run(t.Context(), []string{"check", "-json", "--database-url", url}, env(nil), &out, &errOut))
	require.JSONEq(t, fmt.Sprintf(`[
		{"companyId":%[1]q,"campaignId":null,"counter":"companyPending","stored":3,"counted":2},
		{"companyId":%[1]q,"campaignId":%[2]q,"counter":"delivered","stored":0,"counted":1},
		{"companyId":%[1]q,"campaignId":%[2]q,"counter":"pending","stored":3,"counted":2}]`, co.ID.String(), c.ID.String()), out.String())

	require.Equal(t, 2, run(t.Context(), []string{"check", "extra"}, env(nil), &out, &errOut))
}
