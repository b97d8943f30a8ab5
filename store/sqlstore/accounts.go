package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
)

const companyColumns = "id, name, active, created_at, max_per_second"

// scanCompany scans the companyColumns, then extra.
func scanCompany(row interface{ Scan(...any) error }, extra ...any) (messaging.Company, error) {
	var c messaging.Company
	err := row.Scan(append([]any{&c.ID, &c.Name, &c.Active, timeDst{&c.CreatedAt}, &c.MaxPerSecond}, extra...)...)
	return c, err
}

// CreateCompany implements accounts.Store.
func (s *Store) CreateCompany(ctx context.Context, c *messaging.Company) (err error) {
	defer keepUnavailable(&err)
	_, err = s.db.ExecContext(ctx, "INSERT INTO companies (id, name, name_key, active, created_at, max_per_second) VALUES (?, ?, ?, ?, ?, ?)",
		s.id(c.ID), c.Name, messaging.CompanyNameKey(c.Name), c.Active, s.ts(c.CreatedAt), c.MaxPerSecond)
	if name, ok := uniqueViolation(err); ok && strings.Contains(name, "name_key") {
		return &messaging.Error{Code: messaging.Conflict, Name: messaging.NameConflict, Message: fmt.Sprintf("A company named %q exists already", c.Name), Err: err}
	}
	if err != nil {
		return fmt.Errorf("create company: %w", duplicate(err, "company "+c.ID.String()))
	}
	return nil
}

// GetCompany implements accounts.Store.
func (s *Store) GetCompany(ctx context.Context, id messaging.ID) (_ messaging.Company, err error) {
	defer keepUnavailable(&err)
	c, err := scanCompany(s.read.QueryRowContext(ctx, "SELECT "+companyColumns+" FROM companies WHERE id = ?", s.id(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.Company{}, messaging.CompanyNotFound(id)
	}
	if err != nil {
		return messaging.Company{}, fmt.Errorf("get company: %w", err)
	}
	return c, nil
}

// SetCompanyActive implements accounts.Store. On Postgres it tells the
// other processes (see WatchAPIKeys).
func (s *Store) SetCompanyActive(ctx context.Context, id messaging.ID, active bool) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "set company active", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "UPDATE companies SET active = ? WHERE id = ?", active, s.id(id))
		if err := updatedOne(res, err, "set company active", func() error { return messaging.CompanyNotFound(id) }); err != nil {
			return err
		}
		return s.notifyKeys(ctx, tx)
	})
}

// SetCompanyRate implements accounts.Store.
func (s *Store) SetCompanyRate(ctx context.Context, id messaging.ID, perSecond float64) (err error) {
	defer keepUnavailable(&err)
	res, err := s.db.ExecContext(ctx, "UPDATE companies SET max_per_second = ? WHERE id = ?", perSecond, s.id(id))
	return updatedOne(res, err, "set company rate", func() error { return messaging.CompanyNotFound(id) })
}

// CompanyRates implements delivery.RateSource: the companies with a
// rate, and the claimers whose heartbeat is newer than since.
func (s *Store) CompanyRates(ctx context.Context, since time.Time) (_ map[messaging.ID]float64, _ int, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT id, max_per_second FROM companies WHERE max_per_second > 0")
	if err != nil {
		return nil, 0, fmt.Errorf("company rates: %w", err)
	}
	defer rows.Close()
	var rates map[messaging.ID]float64
	for rows.Next() {
		var id messaging.ID
		var r float64
		if err := rows.Scan(&id, &r); err != nil {
			return nil, 0, fmt.Errorf("company rates: %w", err)
		}
		if rates == nil {
			rates = map[messaging.ID]float64{}
		}
		rates[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("company rates: %w", err)
	}
	var n int
	if err := s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM claimers WHERE heartbeat_at >= ?", s.ts(since)).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("company rates: claimers: %w", err)
	}
	return rates, n, nil
}

// CreateAPIKey implements accounts.Store. On Postgres it tells the other
// processes (see WatchAPIKeys).
func (s *Store) CreateAPIKey(ctx context.Context, k *messaging.APIKey, selector string, hash []byte, max int, othersExpireAt time.Time) (err error) {
	defer keepUnavailable(&err)
	lock := ""
	if s.dialect == dialectPostgres {
		lock = " FOR UPDATE" // one count-then-insert at a time per company
	}
	company, now := s.id(k.CompanyID), s.ts(k.CreatedAt)
	atOnce := !othersExpireAt.After(k.CreatedAt)
	return s.write(ctx, "create API key", func(tx *txn) error {
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM companies WHERE id = ?"+lock, company).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return messaging.CompanyNotFound(k.CompanyID)
		}
		if err != nil {
			return fmt.Errorf("create API key: %w", err)
		}
		if atOnce {
			_, err = tx.ExecContext(ctx, "DELETE FROM api_keys WHERE company_id = ?", company)
		} else {
			_, err = tx.ExecContext(ctx, "DELETE FROM api_keys WHERE company_id = ? AND expires_at <= ?", company, now)
		}
		if err != nil {
			return fmt.Errorf("create API key: revoke the other keys: %w", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM api_keys WHERE company_id = ?", company).Scan(&n); err != nil {
			return fmt.Errorf("create API key: %w", err)
		}
		if n >= max {
			return messaging.Errorf(messaging.Conflict, messaging.NameConflict,
				"The company has %d API keys in use already, the most it may have: revoke one, or give the others no grace period", n)
		}
		if n > 0 {
			until := s.ts(othersExpireAt)
			if _, err := tx.ExecContext(ctx, "UPDATE api_keys SET expires_at = ? WHERE company_id = ? AND (expires_at IS NULL OR expires_at > ?)",
				until, company, until); err != nil {
				return fmt.Errorf("create API key: give the other keys their grace: %w", err)
			}
		}
		err = tx.QueryRowContext(ctx, "INSERT INTO api_keys (company_id, name, selector, hash, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
			company, k.Name, selector, append([]byte(nil), hash...), now).Scan(&k.ID)
		if _, ok := uniqueViolation(err); ok {
			return &messaging.Error{Code: messaging.Conflict, Name: messaging.NameConflict, Message: "API key selector already in use", Err: err}
		}
		if err != nil {
			return fmt.Errorf("create API key: %w", err)
		}
		return s.notifyKeys(ctx, tx)
	})
}

const apiKeyColumns = "id, company_id, name, created_at, last_used_at, expires_at"

func scanAPIKey(row interface{ Scan(...any) error }) (messaging.APIKey, error) {
	var k messaging.APIKey
	err := row.Scan(&k.ID, &k.CompanyID, &k.Name, timeDst{&k.CreatedAt}, timePtrDst{&k.LastUsedAt}, timePtrDst{&k.ExpiresAt})
	return k, err
}

// ListAPIKeys implements accounts.Store.
func (s *Store) ListAPIKeys(ctx context.Context, companyID messaging.ID) (_ []messaging.APIKey, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT "+apiKeyColumns+" FROM api_keys WHERE company_id = ? ORDER BY id", s.id(companyID))
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	out, err := collect(rows, scanAPIKey)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	return out, nil
}

// RevokeAPIKey implements accounts.Store. On Postgres it tells the other
// processes (see WatchAPIKeys).
func (s *Store) RevokeAPIKey(ctx context.Context, companyID messaging.ID, id int64) (err error) {
	defer keepUnavailable(&err)
	return s.write(ctx, "revoke API key", func(tx *txn) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM api_keys WHERE id = ? AND company_id = ?", id, s.id(companyID))
		if err := updatedOne(res, err, "revoke API key", func() error {
			return messaging.Errorf(messaging.NotFound, messaging.NameNotFound, "API key %d not found", id)
		}); err != nil {
			return err
		}
		return s.notifyKeys(ctx, tx)
	})
}

// TouchAPIKey implements accounts.Store.
func (s *Store) TouchAPIKey(ctx context.Context, id int64, at time.Time) (err error) {
	defer keepUnavailable(&err)
	if _, err := s.db.ExecContext(ctx, "UPDATE api_keys SET last_used_at = ? WHERE id = ?", s.ts(at), id); err != nil {
		return fmt.Errorf("touch API key: %w", err)
	}
	return nil
}

// CompanyByAPIKeySelector implements accounts.Store.
func (s *Store) CompanyByAPIKeySelector(ctx context.Context, selector string) (_ messaging.Company, _ messaging.APIKey, _ []byte, err error) {
	defer keepUnavailable(&err)
	if selector == "" {
		return messaging.Company{}, messaging.APIKey{}, nil, messaging.APIKeyNotFound()
	}
	var hash []byte
	var k messaging.APIKey
	c, err := scanCompany(s.readRow(ctx, "SELECT c.id, c.name, c.active, c.created_at, c.max_per_second, k.id, k.name, k.created_at, k.last_used_at, k.expires_at, k.hash "+
		"FROM api_keys k JOIN companies c ON c.id = k.company_id WHERE k.selector = ?", selector),
		&k.ID, &k.Name, timeDst{&k.CreatedAt}, timePtrDst{&k.LastUsedAt}, timePtrDst{&k.ExpiresAt}, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.Company{}, messaging.APIKey{}, nil, messaging.APIKeyNotFound()
	}
	if err != nil {
		return messaging.Company{}, messaging.APIKey{}, nil, fmt.Errorf("company by API key: %w", err)
	}
	k.CompanyID = c.ID
	return c, k, hash, nil
}

// ListCompanies implements accounts.Store.
func (s *Store) ListCompanies(ctx context.Context, page messaging.PageRequest) (_ []messaging.Company, _ int, err error) {
	defer keepUnavailable(&err)
	var total int
	if err := s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM companies").Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("list companies: %w", err)
	}
	rows, err := s.read.QueryContext(ctx, "SELECT "+companyColumns+" FROM companies ORDER BY name_key, id LIMIT ? OFFSET ?", page.PageSize, page.Offset())
	if err != nil {
		return nil, 0, fmt.Errorf("list companies: %w", err)
	}
	out, err := collect(rows, func(row interface{ Scan(...any) error }) (messaging.Company, error) { return scanCompany(row) })
	if err != nil {
		return nil, 0, fmt.Errorf("list companies: %w", err)
	}
	return out, total, nil
}

// CreateSMSSender implements accounts.Store.
func (s *Store) CreateSMSSender(ctx context.Context, sd *messaging.SMSSender) (err error) {
	defer keepUnavailable(&err)
	err = s.db.QueryRowContext(ctx, "INSERT INTO sms_senders (company_id, sender_id, approved, created_at) VALUES (?, ?, ?, ?) RETURNING id",
		s.id(sd.CompanyID), sd.SenderID, sd.Approved, s.ts(sd.CreatedAt)).Scan(&sd.ID)
	if err != nil {
		return fmt.Errorf("create SMS sender: %w", err)
	}
	return nil
}

// ApproveSMSSender implements accounts.Store.
func (s *Store) ApproveSMSSender(ctx context.Context, id int64) (err error) {
	defer keepUnavailable(&err)
	res, err := s.db.ExecContext(ctx, "UPDATE sms_senders SET approved = TRUE WHERE id = ?", id)
	return updatedOne(res, err, "approve SMS sender", func() error { return messaging.SMSSenderNotFound(id) })
}

const smsSenderColumns = "id, company_id, sender_id, approved, created_at"

func scanSMSSender(row interface{ Scan(...any) error }) (messaging.SMSSender, error) {
	var sd messaging.SMSSender
	err := row.Scan(&sd.ID, &sd.CompanyID, &sd.SenderID, &sd.Approved, timeDst{&sd.CreatedAt})
	return sd, err
}

// GetSMSSender implements accounts.Store.
func (s *Store) GetSMSSender(ctx context.Context, companyID messaging.ID, id int64) (_ messaging.SMSSender, err error) {
	defer keepUnavailable(&err)
	sd, err := scanSMSSender(s.read.QueryRowContext(ctx, "SELECT "+smsSenderColumns+" FROM sms_senders WHERE id = ? AND company_id = ?", id, s.id(companyID)))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.SMSSender{}, messaging.SMSSenderNotFound(id)
	}
	if err != nil {
		return messaging.SMSSender{}, fmt.Errorf("get SMS sender: %w", err)
	}
	return sd, nil
}

// SMSSenderByID implements campaign.Store.
func (s *Store) SMSSenderByID(ctx context.Context, id int64) (_ messaging.SMSSender, err error) {
	defer keepUnavailable(&err)
	sd, err := scanSMSSender(s.read.QueryRowContext(ctx, "SELECT "+smsSenderColumns+" FROM sms_senders WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.SMSSender{}, messaging.SMSSenderNotFound(id)
	}
	if err != nil {
		return messaging.SMSSender{}, fmt.Errorf("get SMS sender: %w", err)
	}
	return sd, nil
}

// ListSMSSenders implements accounts.Store.
func (s *Store) ListSMSSenders(ctx context.Context, companyID messaging.ID, approvedOnly bool) (_ []messaging.SMSSender, err error) {
	defer keepUnavailable(&err)
	q := "SELECT " + smsSenderColumns + " FROM sms_senders WHERE company_id = ?"
	if approvedOnly {
		q += " AND approved"
	}
	rows, err := s.read.QueryContext(ctx, q+" ORDER BY id", s.id(companyID))
	if err != nil {
		return nil, fmt.Errorf("list SMS senders: %w", err)
	}
	out, err := collect(rows, scanSMSSender)
	if err != nil {
		return nil, fmt.Errorf("list SMS senders: %w", err)
	}
	return out, nil
}

// CreateChatService implements accounts.Store. The credentials are
// sealed with the service's id, known once the row is inserted, in the
// same transaction.
func (s *Store) CreateChatService(ctx context.Context, cs *messaging.ChatService) (err error) {
	defer keepUnavailable(&err)
	if len(cs.Credentials) > 0 && s.secrets == nil {
		return fmt.Errorf("create chat service: %w", messaging.SecretKeyMissing())
	}
	cs.Provider, cs.Channel = cs.ProviderName(), cs.ChannelName()
	err = s.writeSecrets(ctx, "create chat service", func(tx *txn) error {
		err := tx.QueryRowContext(ctx, "INSERT INTO chat_services (company_id, brand_name, provider_service_id, provider, channel, base_url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
			s.id(cs.CompanyID), cs.BrandName, cs.ProviderServiceID, cs.ProviderName(), cs.ChannelName(), cs.BaseURL, s.ts(cs.CreatedAt)).Scan(&cs.ID)
		if err != nil {
			return fmt.Errorf("create chat service: %w", err)
		}
		return s.setChatCredentials(ctx, tx, cs.ID, cs.Credentials)
	})
	if err != nil {
		return err
	}
	cs.CredentialsSet = len(cs.Credentials) > 0
	return nil
}

// setChatCredentials stores the credentials of chat service id, sealed
// (empty: none).
func (s *Store) setChatCredentials(ctx context.Context, tx *txn, id int64, creds []byte) error {
	v, err := s.sealSecret(string(creds), chatServiceSecretPlace(id))
	if err != nil {
		return fmt.Errorf("chat service credentials: %w", err)
	}
	res, err := tx.ExecContext(ctx, "UPDATE chat_services SET credentials = ? WHERE id = ?", v, id)
	return updatedOne(res, err, "chat service credentials", func() error { return messaging.ChatServiceNotFound(id) })
}

// UpdateChatService implements accounts.Store.
func (s *Store) UpdateChatService(ctx context.Context, cs *messaging.ChatService, keepCredentials bool) (err error) {
	defer keepUnavailable(&err)
	if !keepCredentials && len(cs.Credentials) > 0 && s.secrets == nil {
		return fmt.Errorf("update chat service: %w", messaging.SecretKeyMissing())
	}
	cs.Provider, cs.Channel = cs.ProviderName(), cs.ChannelName()
	var stored string
	err = s.writeSecrets(ctx, "update chat service", func(tx *txn) error {
		err := tx.QueryRowContext(ctx, "UPDATE chat_services SET brand_name = ?, provider_service_id = ?, provider = ?, channel = ?, base_url = ? WHERE id = ? AND company_id = ? RETURNING created_at, credentials",
			cs.BrandName, cs.ProviderServiceID, cs.ProviderName(), cs.ChannelName(), cs.BaseURL, cs.ID, s.id(cs.CompanyID)).Scan(timeDst{&cs.CreatedAt}, &stored)
		if errors.Is(err, sql.ErrNoRows) {
			return messaging.ChatServiceNotFound(cs.ID)
		}
		if err != nil {
			return fmt.Errorf("update chat service: %w", err)
		}
		if keepCredentials {
			return nil
		}
		stored = string(cs.Credentials)
		return s.setChatCredentials(ctx, tx, cs.ID, cs.Credentials)
	})
	if err != nil {
		return err
	}
	cs.CredentialsSet = stored != ""
	return nil
}

const chatServiceColumns = "id, company_id, brand_name, provider_service_id, provider, channel, base_url, credentials, created_at"

// scanChatService reads a chat service; its credentials are opened with
// open, or only told to be set when open is false.
func (s *Store) scanChatService(row interface{ Scan(...any) error }, open bool) (messaging.ChatService, error) {
	var cs messaging.ChatService
	var creds string
	err := row.Scan(&cs.ID, &cs.CompanyID, &cs.BrandName, &cs.ProviderServiceID, &cs.Provider, &cs.Channel, &cs.BaseURL, &creds, timeDst{&cs.CreatedAt})
	if err != nil {
		return cs, err
	}
	cs.CredentialsSet = creds != ""
	if open && creds != "" {
		plain, err := s.openSecret(creds, chatServiceSecretPlace(cs.ID))
		if err != nil {
			return cs, fmt.Errorf("chat service %d: credentials: %w", cs.ID, err)
		}
		cs.Credentials = json.RawMessage(plain)
	}
	return cs, nil
}

// scanChatServiceInfo reads a chat service without opening its
// credentials.
func (s *Store) scanChatServiceInfo(row interface{ Scan(...any) error }) (messaging.ChatService, error) {
	return s.scanChatService(row, false)
}

// ChatServices implements accounts.Store.
func (s *Store) ChatServices(ctx context.Context) (_ []messaging.ChatService, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT "+chatServiceColumns+" FROM chat_services ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list chat services: %w", err)
	}
	out, err := collect(rows, func(row interface{ Scan(...any) error }) (messaging.ChatService, error) {
		return s.scanChatService(row, true)
	})
	if err != nil {
		return nil, fmt.Errorf("list chat services: %w", err)
	}
	return out, nil
}

// GetChatService implements accounts.Store.
func (s *Store) GetChatService(ctx context.Context, companyID messaging.ID, id int64) (_ messaging.ChatService, err error) {
	defer keepUnavailable(&err)
	cs, err := s.scanChatServiceInfo(s.read.QueryRowContext(ctx, "SELECT "+chatServiceColumns+" FROM chat_services WHERE id = ? AND company_id = ?", id, s.id(companyID)))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.ChatService{}, messaging.ChatServiceNotFound(id)
	}
	if err != nil {
		return messaging.ChatService{}, fmt.Errorf("get chat service: %w", err)
	}
	return cs, nil
}

// ChatServiceByProviderID implements accounts.Store.
func (s *Store) ChatServiceByProviderID(ctx context.Context, providerServiceID string) (_ messaging.ChatService, err error) {
	defer keepUnavailable(&err)
	cs, err := s.scanChatServiceInfo(s.read.QueryRowContext(ctx, "SELECT "+chatServiceColumns+" FROM chat_services WHERE provider_service_id = ? ORDER BY id LIMIT 1", providerServiceID))
	if errors.Is(err, sql.ErrNoRows) {
		return messaging.ChatService{}, messaging.NotFoundf("No chat service has provider id %q", providerServiceID)
	}
	if err != nil {
		return messaging.ChatService{}, fmt.Errorf("get chat service: %w", err)
	}
	return cs, nil
}

// ListChatServices implements accounts.Store.
func (s *Store) ListChatServices(ctx context.Context, companyID messaging.ID) (_ []messaging.ChatService, err error) {
	defer keepUnavailable(&err)
	rows, err := s.read.QueryContext(ctx, "SELECT "+chatServiceColumns+" FROM chat_services WHERE company_id = ? ORDER BY id", s.id(companyID))
	if err != nil {
		return nil, fmt.Errorf("list chat services: %w", err)
	}
	out, err := collect(rows, s.scanChatServiceInfo)
	if err != nil {
		return nil, fmt.Errorf("list chat services: %w", err)
	}
	return out, nil
}

// updatedOne checks the result of an UPDATE of one row by key: no row is
// the error made by missing.
func updatedOne(res sql.Result, err error, op string, missing func() error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n == 0 {
		return missing()
	}
	return nil
}

// collect scans every row with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
