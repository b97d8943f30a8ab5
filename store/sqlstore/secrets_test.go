package sqlstore_test

import (
	"bytes"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/webhook"
)

// newKey returns a fresh secret key.
func newKey(t testing.TB) secretbox.Key {
	t.Helper()
	s, err := secretbox.NewKey()
	require.NoError(t, err)
	k, err := secretbox.ParseKey(s)
	require.NoError(t, err)
	return k
}

// newBox returns a box with a fresh key.
func newBox(t testing.TB) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(newKey(t))
	require.NoError(t, err)
	return b
}

func boxOf(t testing.TB, current secretbox.Key, previous ...secretbox.Key) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(current, previous...)
	require.NoError(t, err)
	return b
}

// openWith opens a store on rawURL with cfg, closed when the test ends
// (or earlier by the test: closing twice is harmless here).
func openWith(t testing.TB, rawURL string, cfg sqlstore.Config) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), rawURL, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// storedSecrets returns the stored text of the webhook's secrets and of
// the connector's settings.
func storedSecrets(t testing.TB, db *sql.DB, name string) (secret, previous, settings string) {
	t.Helper()
	require.NoError(t, db.QueryRowContext(t.Context(), "SELECT secret, previous_secret FROM webhook_endpoints").Scan(&secret, &previous))
	q := "SELECT settings FROM smpp_connectors WHERE name = $1"
	require.NoError(t, db.QueryRowContext(t.Context(), q, name).Scan(&settings))
	return secret, previous, settings
}

// fileBytes returns the bytes of the SQLite database of rawURL and of its
// write-ahead log, if any.
func fileBytes(t testing.TB, rawURL string) []byte {
	t.Helper()
	path := strings.TrimPrefix(rawURL, "sqlite://")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	if wal, err := os.ReadFile(path + "-wal"); err == nil {
		b = append(b, wal...)
	}
	return b
}

// TestSecretsEncryptedAtRest: connector passwords and webhook secrets,
// current and previous, are stored sealed under the key and read back in
// clear; after a password is replaced, neither the old nor the new one is
// in the SQLite file.
func TestSecretsEncryptedAtRest(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			url := db.url(t)
			box := newBox(t)
			s := openWith(t, url, sqlstore.Config{Secrets: box})
			ids := messaging.NewIDGenerator(nil)
			now := time.Now().UTC().Truncate(time.Millisecond)
			e := webhook.Endpoint{ID: ids.New(), CompanyID: ids.New(), URL: "https://hooks.example.com/h", Events: []webhook.EventType{"message.status"},
				Secret: "whsec_firstSecretValue1", CreatedAt: now}
			require.NoError(t, s.CreateWebhook(ctx, &e, 10))
			c := routing.Connector{Name: "smsc-a", Addr: "smsc.example.com:2775", SystemID: "herald", Password: "Pw0ld!x7", CreatedAt: now, UpdatedAt: now}
			require.NoError(t, s.CreateConnector(ctx, &c))
			_, err := s.RotateWebhookSecret(ctx, e.CompanyID, e.ID, "whsec_secondSecretValu2", now.Add(time.Hour))
			require.NoError(t, err)
			c.Password, c.UpdatedAt = "Pn3w?y9Q", now.Add(time.Second)
			require.NoError(t, s.UpdateConnector(ctx, &c))

			raw := rawDB(t, url)
			secret, previous, settings := storedSecrets(t, raw, "smsc-a")
			for _, v := range []string{secret, previous} {
				id, ok := secretbox.KeyIDOf(v)
				require.True(t, ok, "stored in clear: %q", v)
				require.Equal(t, box.KeyID(), id)
			}
			for _, plain := range []string{"whsec_firstSecretValue1", "whsec_secondSecretValu2", "Pw0ld!x7", "Pn3w?y9Q"} {
				require.NotContains(t, secret+previous+settings, plain)
			}
			require.Contains(t, settings, "v1:"+box.KeyID()+":")

			got, err := s.GetWebhook(ctx, e.CompanyID, e.ID)
			require.NoError(t, err)
			require.Equal(t, "whsec_secondSecretValu2", got.Secret)
			require.Equal(t, "whsec_firstSecretValue1", got.PreviousSecret)
			gotC, err := s.GetConnector(ctx, "smsc-a")
			require.NoError(t, err)
			require.Equal(t, "Pn3w?y9Q", gotC.Password)

			if db.name == "sqlite" {
				require.NoError(t, raw.Close())
				require.NoError(t, s.Close())
				b := fileBytes(t, url)
				for _, plain := range []string{"whsec_firstSecretValue1", "whsec_secondSecretValu2", "Pw0ld!x7", "Pn3w?y9Q"} {
					require.False(t, bytes.Contains(b, []byte(plain)), "%s is in the file", plain)
				}
			}
		})
	}
}

// TestSecretsRefusedWithoutKey: a store without a key stores no secret:
// a webhook, a rotation or a connector with a password fails with
// SecretKeyMissing (503, no Retry-After) and writes nothing; a connector
// without a password is stored.
func TestSecretsRefusedWithoutKey(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			s := openWith(t, db.url(t), sqlstore.Config{})
			ids := messaging.NewIDGenerator(nil)
			now := time.Now().UTC()
			e := webhook.Endpoint{ID: ids.New(), CompanyID: ids.New(), URL: "https://hooks.example.com/h", Secret: "whsec_x", CreatedAt: now}
			requireKeyMissing(t, s.CreateWebhook(ctx, &e, 10))
			list, err := s.ListWebhooks(ctx, e.CompanyID)
			require.NoError(t, err)
			require.Empty(t, list)

			c := routing.Connector{Name: "smsc-a", Addr: "smsc.example.com:2775", Password: "secret", CreatedAt: now, UpdatedAt: now}
			requireKeyMissing(t, s.CreateConnector(ctx, &c))
			_, err = s.GetConnector(ctx, "smsc-a")
			require.True(t, messaging.IsCode(err, messaging.NotFound), "%v", err)
			c.Password = ""
			require.NoError(t, s.CreateConnector(ctx, &c))
			c.Password = "secret"
			requireKeyMissing(t, s.UpdateConnector(ctx, &c))
		})
	}
}

func requireKeyMissing(t *testing.T, err error) {
	t.Helper()
	var e *messaging.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, messaging.Unavailable, e.Code)
	require.Equal(t, messaging.NameSecretKeyMissing, e.Name)
	require.Zero(t, e.RetryAfter)
}

// plaintextStore returns the URL of a database holding a webhook and a
// connector whose secrets were stored in clear, as before encryption.
func plaintextStore(t *testing.T, url string) (webhook.Endpoint, *sql.DB) {
	t.Helper()
	ctx := t.Context()
	s, err := sqlstore.Open(ctx, url, sqlstore.Config{})
	require.NoError(t, err)
	ids := messaging.NewIDGenerator(nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	e := webhook.Endpoint{ID: ids.New(), CompanyID: ids.New(), URL: "https://hooks.example.com/h", CreatedAt: now}
	require.NoError(t, s.CreateWebhook(ctx, &e, 10))
	require.NoError(t, s.CreateConnector(ctx, &routing.Connector{Name: "smsc-a", Addr: "smsc.example.com:2775", CreatedAt: now, UpdatedAt: now}))
	require.NoError(t, s.Close())
	raw := rawDB(t, url)
	_, err = raw.ExecContext(ctx, "UPDATE webhook_endpoints SET secret = 'whsec_legacyCurrent77', previous_secret = 'whsec_legacyPrevious8'")
	require.NoError(t, err)
	if strings.HasPrefix(url, "sqlite://") {
		_, err = raw.ExecContext(ctx, "UPDATE smpp_connectors SET settings = json_set(settings, '$.password', 'Lg9#pQ2z')")
	} else {
		_, err = raw.ExecContext(ctx, `UPDATE smpp_connectors SET settings = jsonb_set(settings, '{password}', '"Lg9#pQ2z"')`)
	}
	require.NoError(t, err)
	e.Secret, e.PreviousSecret = "whsec_legacyCurrent77", "whsec_legacyPrevious8"
	return e, raw
}

// TestSecretsPlaintextMigration: secrets stored in clear by an earlier
// version are read as they are without a key, counted as plaintext, and
// sealed when the store opens with a key; opening again seals nothing
// more. On SQLite the clear values leave the file.
func TestSecretsPlaintextMigration(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			url := db.url(t)
			e, raw := plaintextStore(t, url)

			s := openWith(t, url, sqlstore.Config{})
			count, err := s.CountSecrets(ctx)
			require.NoError(t, err)
			require.Equal(t, 3, count.Plaintext)
			require.Empty(t, count.ByKey)
			got, err := s.GetWebhook(ctx, e.CompanyID, e.ID)
			require.NoError(t, err)
			require.Equal(t, e.Secret, got.Secret)
			require.NoError(t, s.Close())

			box := newBox(t)
			s = openWith(t, url, sqlstore.Config{Secrets: box})
			count, err = s.CountSecrets(ctx)
			require.NoError(t, err)
			require.Equal(t, sqlstore.SecretCount{ByKey: map[string]int{box.KeyID(): 3}}, count)
			secret, previous, settings := storedSecrets(t, raw, "smsc-a")
			for _, plain := range []string{e.Secret, e.PreviousSecret, "Lg9#pQ2z"} {
				require.NotContains(t, secret+previous+settings, plain)
			}
			got, err = s.GetWebhook(ctx, e.CompanyID, e.ID)
			require.NoError(t, err)
			require.Equal(t, e.Secret, got.Secret)
			require.Equal(t, e.PreviousSecret, got.PreviousSecret)
			c, err := s.GetConnector(ctx, "smsc-a")
			require.NoError(t, err)
			require.Equal(t, "Lg9#pQ2z", c.Password)
			n, err := s.SealSecrets(ctx, false)
			require.NoError(t, err)
			require.Zero(t, n, "sealed again")
			require.NoError(t, s.Close())

			s = openWith(t, url, sqlstore.Config{Secrets: box})
			again, _, _ := storedSecrets(t, raw, "smsc-a")
			require.Equal(t, secret, again, "a second open sealed again")
			require.NoError(t, s.Close())

			if db.name == "sqlite" {
				require.NoError(t, raw.Close())
				b := fileBytes(t, url)
				for _, plain := range []string{e.Secret, e.PreviousSecret, "Lg9#pQ2z"} {
					require.False(t, bytes.Contains(b, []byte(plain)), "%s is still in the file", plain)
				}
			}
		})
	}
}

// TestSecretsRotation: a store given a new key and the old one reads
// everything; SealSecrets(all) seals it all under the new key, after
// which the old key is no longer needed. A store given only a key that
// sealed nothing there refuses to open, naming the key ids it lacks; one
// opened without a key reads no sealed secret and says why.
func TestSecretsRotation(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			url := db.url(t)
			e, raw := plaintextStore(t, url)
			oldKey, newKeyV := newKey(t), newKey(t)
			s := openWith(t, url, sqlstore.Config{Secrets: boxOf(t, oldKey)})
			require.NoError(t, s.Close())

			_, err := sqlstore.Open(ctx, url, sqlstore.Config{Secrets: boxOf(t, newKeyV)})
			require.ErrorContains(t, err, "3 under key "+oldKey.ID())

			s = openWith(t, url, sqlstore.Config{Secrets: boxOf(t, newKeyV, oldKey)})
			got, err := s.GetWebhook(ctx, e.CompanyID, e.ID)
			require.NoError(t, err)
			require.Equal(t, e.Secret, got.Secret)
			n, err := s.SealSecrets(ctx, true)
			require.NoError(t, err)
			require.Equal(t, 3, n)
			count, err := s.CountSecrets(ctx)
			require.NoError(t, err)
			require.Equal(t, map[string]int{newKeyV.ID(): 3}, count.ByKey)
			require.NoError(t, s.Close())
			secret, _, _ := storedSecrets(t, raw, "smsc-a")
			require.True(t, strings.HasPrefix(secret, "v1:"+newKeyV.ID()+":"))

			s = openWith(t, url, sqlstore.Config{Secrets: boxOf(t, newKeyV)})
			c, err := s.GetConnector(ctx, "smsc-a")
			require.NoError(t, err)
			require.Equal(t, "Lg9#pQ2z", c.Password)
			require.NoError(t, s.Close())

			s = openWith(t, url, sqlstore.Config{})
			_, err = s.GetWebhook(ctx, e.CompanyID, e.ID)
			require.ErrorContains(t, err, "no secret key was given")
			_, err = s.ListConnectors(ctx)
			require.ErrorContains(t, err, newKeyV.ID())
		})
	}
}

// TestSecretsDeletedLeaveNoTrace: on SQLite, deleting a webhook and a
// connector whose secrets were stored in clear zeroes them in the file:
// they do not stay readable in its free space.
func TestSecretsDeletedLeaveNoTrace(t *testing.T) {
	ctx := t.Context()
	url := sqliteURL(t)
	e, raw := plaintextStore(t, url)
	require.NoError(t, raw.Close())
	require.True(t, bytes.Contains(fileBytes(t, url), []byte(e.Secret)), "the fixture did not write the secret")
	s := openWith(t, url, sqlstore.Config{})
	require.NoError(t, s.DeleteWebhook(ctx, e.CompanyID, e.ID))
	require.NoError(t, s.DeleteConnector(ctx, "smsc-a"))
	require.NoError(t, s.Close())
	b := fileBytes(t, url)
	for _, plain := range []string{e.Secret, e.PreviousSecret, "Lg9#pQ2z"} {
		require.False(t, bytes.Contains(b, []byte(plain)), "%s is still in the file", plain)
	}
}
