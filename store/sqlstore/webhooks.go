package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

const webhookColumns = "id, company_id, url, events, secret, previous_secret, previous_until, created_at, disabled_at, disabled_reason, batch_max_events, batch_max_wait_ms"

// scanWebhook reads an endpoint, its secrets opened.
func (s *Store) scanWebhook(row interface{ Scan(...any) error }) (webhook.Endpoint, error) {
	var e webhook.Endpoint
	var events string
	var prevUntil *time.Time
	var batchWaitMs int64
	err := row.Scan(&e.ID, &e.CompanyID, &e.URL, &events, &e.Secret, &e.PreviousSecret, timePtrDst{&prevUntil},
		timeDst{&e.CreatedAt}, timePtrDst{&e.DisabledAt}, &e.DisabledReason, &e.Batch.MaxEvents, &batchWaitMs)
	if err != nil {
		return e, err
	}
	e.Batch.MaxWait = time.Duration(batchWaitMs) * time.Millisecond
	if prevUntil != nil {
		e.PreviousUntil = *prevUntil
	}
	if e.Secret, err = s.openSecret(e.Secret, webhookSecretPlace(e.ID)); err != nil {
		return e, fmt.Errorf("webhook %s: %w", e.ID, err)
	}
	if e.PreviousSecret, err = s.openSecret(e.PreviousSecret, webhookSecretPlace(e.ID)); err != nil {
		return e, fmt.Errorf("webhook %s: previous secret: %w", e.ID, err)
	}
	for t := range strings.SplitSeq(events, ",") {
		if t != "" {
			e.Events = append(e.Events, webhook.EventType(t))
		}
	}
	return e, nil
}

func joinEvents(ts []webhook.EventType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ",")
}

// CreateWebhook implements webhook.Store. The count and the insert run in
// one transaction, the company's row locked on Postgres, so concurrent
// registrations cannot pass the limit together. The secrets are stored
// encrypted (messaging.SecretKeyMissing without a key).
func (s *Store) CreateWebhook(ctx context.Context, e *webhook.Endpoint, max int) (err error) {
	defer keepUnavailable(&err)
	secret, err := s.sealSecret(e.Secret, webhookSecretPlace(e.ID))
	if err != nil {
		return err
	}
	previous, err := s.sealSecret(e.PreviousSecret, webhookSecretPlace(e.ID))
	if err != nil {
		return err
	}
	return s.writeSecrets(ctx, "create webhook", func(tx *txn) error {
		if s.dialect == dialectPostgres {
			if _, err := tx.ExecContext(ctx, "SELECT id FROM companies WHERE id = ? FOR UPDATE", s.id(e.CompanyID)); err != nil {
				return fmt.Errorf("create webhook: %w", err)
			}
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM webhook_endpoints WHERE company_id = ?", s.id(e.CompanyID)).Scan(&n); err != nil {
			return fmt.Errorf("create webhook: %w", err)
		}
		if n >= max {
			return messaging.Invalidf("url", "a company may register at most %d webhook endpoints", max)
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO webhook_endpoints ("+webhookColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			s.id(e.ID), s.id(e.CompanyID), e.URL, joinEvents(e.Events), secret, previous, s.nullTS(e.PreviousUntil),
			s.ts(e.CreatedAt), s.tsPtr(e.DisabledAt), e.DisabledReason, e.Batch.MaxEvents, e.Batch.MaxWait.Milliseconds())
		if err != nil {
			return fmt.Errorf("create webhook: %w", err)
		}
		s.describeEvents.Store(true)
		return nil
	})
}

// ListWebhooks implements webhook.Store.
func (s *Store) ListWebhooks(ctx context.Context, companyID messaging.ID) (_ []webhook.Endpoint, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT "+webhookColumns+" FROM webhook_endpoints WHERE company_id = ? ORDER BY created_at, id", s.id(companyID))
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	out, err := collect(rows, s.scanWebhook)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out, nil
}

// GetWebhook implements webhook.Store.
func (s *Store) GetWebhook(ctx context.Context, companyID, id messaging.ID) (_ webhook.Endpoint, err error) {
	defer keepUnavailable(&err)
	e, err := s.scanWebhook(s.read.QueryRowContext(ctx, "SELECT "+webhookColumns+" FROM webhook_endpoints WHERE id = ? AND company_id = ?",
		s.id(id), s.id(companyID)))
	if errors.Is(err, sql.ErrNoRows) {
		return webhook.Endpoint{}, webhook.NotFound(id)
	}
	if err != nil {
		return webhook.Endpoint{}, fmt.Errorf("get webhook: %w", err)
	}
	return e, nil
}

// DeleteWebhook implements webhook.Store.
func (s *Store) DeleteWebhook(ctx context.Context, companyID, id messaging.ID) (err error) {
	defer keepUnavailable(&err)
	return s.writeSecrets(ctx, "delete webhook", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM webhook_endpoints WHERE id = ? AND company_id = ?", s.id(id), s.id(companyID))
		return updatedOne(res, err, "delete webhook", func() error { return webhook.NotFound(id) })
	})
}

// RotateWebhookSecret implements webhook.Store. The new secret is stored
// encrypted (messaging.SecretKeyMissing without a key).
func (s *Store) RotateWebhookSecret(ctx context.Context, companyID, id messaging.ID, secret string, previousUntil time.Time) (_ webhook.Endpoint, err error) {
	defer keepUnavailable(&err)
	sealed, err := s.sealSecret(secret, webhookSecretPlace(id))
	if err != nil {
		return webhook.Endpoint{}, err
	}
	var e webhook.Endpoint
	err = s.writeSecrets(ctx, "rotate webhook secret", func(tx *txn) error {
		var err error
		e, err = s.scanWebhook(tx.QueryRowContext(ctx, "UPDATE webhook_endpoints SET previous_secret = secret, previous_until = ?, secret = ? "+
			"WHERE id = ? AND company_id = ? RETURNING "+webhookColumns, s.ts(previousUntil), sealed, s.id(id), s.id(companyID)))
		if errors.Is(err, sql.ErrNoRows) {
			return webhook.NotFound(id)
		}
		return err
	})
	if err != nil {
		return webhook.Endpoint{}, err
	}
	return e, nil
}
