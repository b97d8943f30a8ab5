package sqlstore_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
)

// TestChatCredentialsSealed: a chat service's credentials are stored
// sealed under the key, bound to their row, and read back by ChatServices
// only; a store without a key refuses them and stores nothing; a rotation
// seals them under the new key.
func TestChatCredentialsSealed(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			url := db.url(t)
			oldKey, newKeyV := newKey(t), newKey(t)
			now := time.Now().UTC().Truncate(time.Millisecond)
			company := messaging.Company{ID: messaging.NewIDGenerator(nil).New(), Name: "Acme", CreatedAt: now}

			bare := openWith(t, url, sqlstore.Config{})
			require.NoError(t, bare.CreateCompany(ctx, &company))
			refused := messaging.ChatService{CompanyID: company.ID, BrandName: "Acme", ProviderServiceID: "acme",
				Provider: "vonage", Channel: "viber", Credentials: json.RawMessage(`{"apiKey":"Zq7!plain"}`), CreatedAt: now}
			err := bare.CreateChatService(ctx, &refused)
			require.True(t, messaging.IsCode(err, messaging.Unavailable), "%v", err)
			require.ErrorContains(t, err, messaging.NameSecretKeyMissing)
			none, err := bare.ChatServices(ctx)
			require.NoError(t, err)
			require.Empty(t, none, "nothing stored")
			require.NoError(t, bare.Close())

			s := openWith(t, url, sqlstore.Config{Secrets: boxOf(t, oldKey)})
			cs := refused
			require.NoError(t, s.CreateChatService(ctx, &cs))
			raw := rawDB(t, url)
			var stored string
			require.NoError(t, raw.QueryRowContext(ctx, "SELECT credentials FROM chat_services").Scan(&stored))
			id, ok := secretbox.KeyIDOf(stored)
			require.True(t, ok, "stored in clear: %q", stored)
			require.Equal(t, oldKey.ID(), id)
			require.NotContains(t, stored, "Zq7!plain")
			count, err := s.CountSecrets(ctx)
			require.NoError(t, err)
			require.Equal(t, map[string]int{oldKey.ID(): 1}, count.ByKey)
			require.NoError(t, s.Close())

			s = openWith(t, url, sqlstore.Config{Secrets: boxOf(t, newKeyV, oldKey)})
			n, err := s.SealSecrets(ctx, true)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.NoError(t, raw.QueryRowContext(ctx, "SELECT credentials FROM chat_services").Scan(&stored))
			require.True(t, strings.HasPrefix(stored, "v1:"+newKeyV.ID()+":"), stored)
			require.NoError(t, s.Close())

			s = openWith(t, url, sqlstore.Config{Secrets: boxOf(t, newKeyV)})
			all, err := s.ChatServices(ctx)
			require.NoError(t, err)
			require.Len(t, all, 1)
			require.JSONEq(t, `{"apiKey":"Zq7!plain"}`, string(all[0].Credentials))

			// A sealed value copied to another service's row does not open.
			other := messaging.ChatService{CompanyID: company.ID, BrandName: "Other", ProviderServiceID: "other", CreatedAt: now}
			require.NoError(t, s.CreateChatService(ctx, &other))
			_, err = raw.ExecContext(ctx, "UPDATE chat_services SET credentials = '"+stored+"' WHERE provider_service_id = 'other'")
			require.NoError(t, err)
			_, err = s.ChatServices(ctx)
			require.Error(t, err)
			require.NoError(t, s.Close())

			if db.name == "sqlite" {
				require.NoError(t, raw.Close())
				require.False(t, bytes.Contains(fileBytes(t, url), []byte("Zq7!plain")), "the credentials are in the file")
			}
		})
	}
}
