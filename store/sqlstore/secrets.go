package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/webhook"
)

// Where each kind of secret is kept: the context a sealed value is bound
// to, so that a value copied elsewhere does not open.
func webhookSecretPlace(id messaging.ID) string { return "webhook:" + id.String() }
func connectorSecretPlace(name string) string   { return "smpp_connector:" + name }
func chatServiceSecretPlace(id int64) string    { return fmt.Sprintf("chat_service:%d", id) }

// sealSecret returns the value to store for the secret plain kept at
// place: sealed under the current key; "" stays "". Without a key it
// refuses (messaging.SecretKeyMissing): the store writes no secret in
// clear.
func (s *Store) sealSecret(plain, place string) (string, error) {
	if plain == "" {
		return "", nil
	}
	if s.secrets == nil {
		return "", messaging.SecretKeyMissing()
	}
	v, err := s.secrets.Seal(plain, place)
	if err != nil {
		return "", fmt.Errorf("seal a secret: %w", err)
	}
	return v, nil
}

// openSecret returns the secret a stored value holds. A value stored in
// clear (before encryption was set up) is returned as it is.
func (s *Store) openSecret(stored, place string) (string, error) {
	if !secretbox.IsSealed(stored) {
		return stored, nil
	}
	if s.secrets == nil {
		id, _ := secretbox.KeyIDOf(stored)
		return "", fmt.Errorf("a stored secret is encrypted (key %s) and no secret key was given", id)
	}
	v, err := s.secrets.Open(stored, place)
	if err != nil {
		return "", fmt.Errorf("open a stored secret: %w", err)
	}
	return v, nil
}

// writeSecrets runs fn like write. On SQLite secure_delete is on for the
// transaction: the content it deletes or replaces is overwritten with
// zeros, so that a replaced secret does not stay readable in the file's
// free space. It is off elsewhere: delivery writes, which replace rows all
// the time, need no such care.
func (s *Store) writeSecrets(ctx context.Context, op string, fn func(tx *txn) error) error {
	return s.write(ctx, op, func(tx *txn) (err error) {
		if s.dialect == dialectSQLite {
			if _, err := tx.ExecContext(ctx, "PRAGMA secure_delete = ON"); err != nil {
				return fmt.Errorf("%s: secure delete: %w", op, err)
			}
			defer func() {
				if _, rerr := tx.ExecContext(context.WithoutCancel(ctx), "PRAGMA secure_delete = OFF"); rerr != nil && err == nil {
					err = fmt.Errorf("%s: secure delete: %w", op, rerr)
				}
			}()
		}
		return fn(tx)
	})
}

// SecretCount says how the stored secrets (SMPP connector passwords,
// webhook secrets current and previous, chat service credentials) are
// kept.
type SecretCount struct {
	// Plaintext counts the secrets stored in clear, before a key was set.
	Plaintext int
	// ByKey counts the sealed secrets by the id of their key.
	ByKey map[string]int
}

// storedSecret is one stored secret and how to write it back.
type storedSecret struct {
	value, place string
	// set writes the new stored value in tx, the write transaction that
	// read the old one.
	set func(ctx context.Context, tx *txn, new string) error
}

// CountSecrets counts the stored secrets by the way they are kept.
func (s *Store) CountSecrets(ctx context.Context) (_ SecretCount, err error) {
	defer keepUnavailable(&err)
	c := SecretCount{ByKey: map[string]int{}}
	err = s.readSecrets(ctx, func(all []storedSecret) error {
		for _, sec := range all {
			if id, ok := secretbox.KeyIDOf(sec.value); ok {
				c.ByKey[id]++
			} else if sec.value != "" {
				c.Plaintext++
			}
		}
		return nil
	})
	if err != nil {
		return SecretCount{}, fmt.Errorf("count secrets: %w", err)
	}
	return c, nil
}

// readSecrets reads every stored secret in one read-only snapshot.
func (s *Store) readSecrets(ctx context.Context, fn func([]storedSecret) error) error {
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	all, err := s.collectSecrets(ctx, tx.QueryContext, false)
	if err != nil {
		return err
	}
	return fn(all)
}

// SealSecrets seals under the current key every secret stored in clear
// and, with all, every secret sealed under another key (a rotation). It
// returns how many it sealed. It is idempotent and safe beside other
// processes: each value is replaced only if the row still holds the value
// read. Without a key it does nothing.
func (s *Store) SealSecrets(ctx context.Context, all bool) (n int, err error) {
	defer keepUnavailable(&err)
	if s.secrets == nil {
		return 0, nil
	}
	// A read first: most starts find nothing to seal and take no lock.
	c, err := s.CountSecrets(ctx)
	if err != nil {
		return 0, err
	}
	if c.Plaintext == 0 && (!all || len(c.ByKey) == 0 || (len(c.ByKey) == 1 && c.ByKey[s.secrets.KeyID()] > 0)) {
		return 0, nil
	}
	err = s.writeSecrets(ctx, "seal secrets", func(tx *txn) error {
		n = 0
		secrets, err := s.collectSecrets(ctx, tx.QueryContext, true)
		if err != nil {
			return err
		}
		for _, sec := range secrets {
			id, sealed := secretbox.KeyIDOf(sec.value)
			switch {
			case sec.value == "":
				continue
			case sealed && (!all || id == s.secrets.KeyID()):
				continue
			}
			plain, err := s.openSecret(sec.value, sec.place)
			if err != nil {
				return err
			}
			v, err := s.sealSecret(plain, sec.place)
			if err != nil {
				return err
			}
			if err := sec.set(ctx, tx, v); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if n > 0 && s.dialect == dialectSQLite {
		// The replaced values are zeroed in the database pages; this
		// empties the write-ahead log, whose older frames still hold
		// them. It may find readers in the way; the log is then reused
		// from its start as usual.
		_, _ = s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
	return n, nil
}

// checkSecretKeys fails when a stored secret is sealed under a key the
// store was not given: without it the secret cannot be used.
func (s *Store) checkSecretKeys(ctx context.Context) error {
	c, err := s.CountSecrets(ctx)
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range slices.Sorted(maps.Keys(c.ByKey)) {
		if s.secrets == nil || !s.secrets.Has(id) {
			missing = append(missing, fmt.Sprintf("%d under key %s", c.ByKey[id], id))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("stored secrets are encrypted under keys not given (%s): set the secret key they were sealed with as the current or a previous key", strings.Join(missing, ", "))
	}
	return nil
}

// collectSecrets reads every stored secret through query; forUpdate
// locks the rows on Postgres.
func (s *Store) collectSecrets(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), forUpdate bool) ([]storedSecret, error) {
	lock := ""
	if forUpdate && s.dialect == dialectPostgres {
		lock = " FOR UPDATE"
	}
	var out []storedSecret
	rows, err := query(ctx, "SELECT id, secret, previous_secret FROM webhook_endpoints ORDER BY id"+lock)
	if err != nil {
		return nil, fmt.Errorf("read webhook secrets: %w", err)
	}
	for rows.Next() {
		var id messaging.ID
		var cur, prev string
		if err := rows.Scan(&id, &cur, &prev); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read webhook secrets: %w", err)
		}
		for _, col := range []string{"secret", "previous_secret"} {
			v := cur
			if col == "previous_secret" {
				v = prev
			}
			out = append(out, storedSecret{value: v, place: webhookSecretPlace(id), set: func(ctx context.Context, tx *txn, new string) error {
				res, err := tx.ExecContext(ctx, "UPDATE webhook_endpoints SET "+col+" = ? WHERE id = ?", new, s.id(id))
				return updatedOne(res, err, "seal a webhook secret", func() error { return webhook.NotFound(id) })
			}})
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("read webhook secrets: %w", err)
	}

	rows, err = query(ctx, "SELECT name, settings FROM smpp_connectors ORDER BY name"+lock)
	if err != nil {
		return nil, fmt.Errorf("read connector passwords: %w", err)
	}
	for rows.Next() {
		var name string
		var raw []byte
		if err := rows.Scan(&name, &raw); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read connector passwords: %w", err)
		}
		var doc map[string]json.RawMessage
		var password string
		if err := json.Unmarshal(raw, &doc); err != nil {
			rows.Close()
			return nil, fmt.Errorf("connector %s: %w", name, err)
		}
		if p, ok := doc["password"]; ok {
			if err := json.Unmarshal(p, &password); err != nil {
				rows.Close()
				return nil, fmt.Errorf("connector %s: password: %w", name, err)
			}
		}
		out = append(out, storedSecret{value: password, place: connectorSecretPlace(name), set: func(ctx context.Context, tx *txn, new string) error {
			b, err := json.Marshal(new)
			if err != nil {
				return fmt.Errorf("seal a connector password: %w", err)
			}
			doc["password"] = b
			newDoc, err := json.Marshal(doc)
			if err != nil {
				return fmt.Errorf("seal a connector password: %w", err)
			}
			res, err := tx.ExecContext(ctx, "UPDATE smpp_connectors SET settings = ? WHERE name = ?", string(newDoc), name)
			return updatedOne(res, err, "seal a connector password", func() error { return routing.ConnectorNotFound(name) })
		}})
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("read connector passwords: %w", err)
	}

	rows, err = query(ctx, "SELECT id, credentials FROM chat_services ORDER BY id"+lock)
	if err != nil {
		return nil, fmt.Errorf("read chat service credentials: %w", err)
	}
	for rows.Next() {
		var id int64
		var creds string
		if err := rows.Scan(&id, &creds); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read chat service credentials: %w", err)
		}
		out = append(out, storedSecret{value: creds, place: chatServiceSecretPlace(id), set: func(ctx context.Context, tx *txn, new string) error {
			res, err := tx.ExecContext(ctx, "UPDATE chat_services SET credentials = ? WHERE id = ?", new, id)
			return updatedOne(res, err, "seal chat service credentials", func() error { return messaging.ChatServiceNotFound(id) })
		}})
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("read chat service credentials: %w", err)
	}
	return out, nil
}
