package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
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

// TestCheckNeedsAHeraldDatabase: herald check opens an existing database
// read-only. A mistyped path fails, naming it, and creates nothing; so do
// a SQLite file that is not Herald's and one with a migration missing. A
// good database is left as it was: check writes nothing.
func TestCheckNeedsAHeraldDatabase(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nonexist.db")
	var out, errOut bytes.Buffer
	require.Equal(t, 1, run(t.Context(), []string{"check", "--database-url", "sqlite://" + missing}, env(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "sqlite://"+missing)
	require.Contains(t, errOut.String(), "no database file")
	require.Empty(t, out.String())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "check created a file")

	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), "CREATE TABLE notes (body TEXT)")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	errOut.Reset()
	require.Equal(t, 1, run(t.Context(), []string{"check", "--database-url", "sqlite://" + other}, env(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "sqlite://"+other)
	require.Contains(t, errOut.String(), "not a Herald database")
	db, err = sql.Open("sqlite", other)
	require.NoError(t, err)
	var tables int
	require.NoError(t, db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").Scan(&tables))
	require.NoError(t, db.Close())
	require.Equal(t, 1, tables, "check migrated a database that is not Herald's")

	good := filepath.Join(dir, "herald.db")
	s, err := sqlstore.Open(t.Context(), "sqlite://"+good, sqlstore.Config{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	before, err := os.ReadFile(good)
	require.NoError(t, err)
	errOut.Reset()
	require.Equal(t, 0, run(t.Context(), []string{"check", "--database-url", "sqlite://" + good}, env(nil), &out, &errOut), errOut.String())
	after, err := os.ReadFile(good)
	require.NoError(t, err)
	require.Equal(t, before, after, "check changed the database file")

	db, err = sql.Open("sqlite", good)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), "DELETE FROM herald_migrations WHERE id = (SELECT MAX(id) FROM herald_migrations)")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	errOut.Reset()
	require.Equal(t, 1, run(t.Context(), []string{"check", "--database-url", "sqlite://" + good}, env(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "lacks 1 migrations")
}

// TestCheckPostgresReadOnly: on Postgres, herald check migrates nothing:
// an empty schema is refused as not a Herald database and stays empty.
func TestCheckPostgresReadOnly(t *testing.T) {
	url := pgtest.SchemaURL(t)
	var out, errOut bytes.Buffer
	require.Equal(t, 1, run(t.Context(), []string{"check", "--database-url", url}, env(nil), &out, &errOut))
	require.Contains(t, errOut.String(), "not a Herald database")

	s, err := sqlstore.Open(t.Context(), url, sqlstore.Config{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	errOut.Reset()
	require.Equal(t, 0, run(t.Context(), []string{"check", "--database-url", url}, env(nil), &out, &errOut), errOut.String())
}

// TestOpenErrorNamesTheDatabase: a database that cannot be opened is
// reported with its path, or its URL with the password masked, by herald
// serve and herald check.
func TestOpenErrorNamesTheDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "herald.db")
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--database-url", "sqlite://" + path},
		{"check", "--database-url", "sqlite://" + path},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 1, run(t.Context(), args, env(nil), &out, &errOut), args[0])
		require.Contains(t, errOut.String(), "sqlite://"+path, args[0])
	}
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	url := "postgres://herald:hunter2secret@" + addr + "/herald?sslmode=disable"
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--database-url", url},
		{"check", "--database-url", url},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 1, run(t.Context(), args, env(nil), &out, &errOut), args[0])
		require.Contains(t, errOut.String(), "postgres://herald:xxxxx@"+addr+"/herald", args[0])
		require.NotContains(t, errOut.String(), "hunter2secret", args[0])
	}
}
