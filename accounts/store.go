package accounts

import (
	"context"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Store is what the account use cases need from storage: companies,
// their API key hashes, SMS senders and chat services. Every method that
// takes a companyID only sees that company's rows: another company's
// resource is reported as NotFound.
type Store interface {
	Lookup
	// CreateCompany inserts c (ID and CreatedAt set by the caller);
	// Conflict when another company has the same name, compared with
	// messaging.CompanyNameKey.
	CreateCompany(ctx context.Context, c *messaging.Company) error
	// GetCompany returns the company or NotFound.
	GetCompany(ctx context.Context, id messaging.ID) (messaging.Company, error)
	// ListCompanies returns a page of the companies, ordered by name
	// (messaging.CompanyNameKey, then id), and how many there are.
	ListCompanies(ctx context.Context, page messaging.PageRequest) ([]messaging.Company, int, error)
	// SetCompanyActive switches a company on or off; NotFound when unknown.
	SetCompanyActive(ctx context.Context, id messaging.ID, active bool) error
	// SetCompanyRate sets a company's MaxPerSecond (0: none); NotFound
	// when unknown.
	SetCompanyRate(ctx context.Context, id messaging.ID, perSecond float64) error
	// CreateAPIKey stores a new key of company k.CompanyID, as its
	// selector (the public part a key is looked up by) and the hash of the
	// whole key, and sets k.ID. In the same transaction it deals with the
	// company's other keys, taking k.CreatedAt as the present: keys
	// expired by then are removed; when othersExpireAt is not after
	// k.CreatedAt every other key is removed (revoked at once); otherwise
	// each other key expires at othersExpireAt, or at its own ExpiresAt
	// when that is sooner. NotFound when the company is unknown; Conflict
	// when any key has the same selector, or when the company would keep
	// max keys besides the new one (nothing is changed then).
	CreateAPIKey(ctx context.Context, k *messaging.APIKey, selector string, hash []byte, max int, othersExpireAt time.Time) error
	// ListAPIKeys returns the company's keys, oldest first, expired ones
	// included (none for an unknown company).
	ListAPIKeys(ctx context.Context, companyID messaging.ID) ([]messaging.APIKey, error)
	// RevokeAPIKey removes one of the company's keys: it stops
	// authenticating. NotFound when the company has no key with that id.
	RevokeAPIKey(ctx context.Context, companyID messaging.ID, id int64) error
	// TouchAPIKey records that key id authenticated a request at at.
	TouchAPIKey(ctx context.Context, id int64, at time.Time) error
	// CompanyByAPIKeySelector finds the key with this selector and returns
	// its company, the key (with its ExpiresAt: the caller refuses an
	// expired key) and its stored hash; NotFound when none.
	CompanyByAPIKeySelector(ctx context.Context, selector string) (messaging.Company, messaging.APIKey, []byte, error)

	// CreateSMSSender inserts s and sets its ID.
	CreateSMSSender(ctx context.Context, s *messaging.SMSSender) error
	// ApproveSMSSender approves a sender; NotFound when unknown.
	ApproveSMSSender(ctx context.Context, id int64) error
	// SMSSenderByID returns the sender of any company, or NotFound: the
	// operator's view.
	SMSSenderByID(ctx context.Context, id int64) (messaging.SMSSender, error)

	// CreateChatService inserts s and sets its ID; an empty Provider or
	// Channel is stored, and set, as the default. Its Credentials, when
	// set, are stored sealed: a store that cannot seal them refuses
	// (messaging.SecretKeyMissing) and stores nothing.
	CreateChatService(ctx context.Context, s *messaging.ChatService) error
	// UpdateChatService replaces the company's chat service s.ID with s;
	// its CreatedAt stays and is set in s, like CredentialsSet. With
	// keepCredentials the stored credentials stay; otherwise they become
	// s.Credentials (nil: none). NotFound when the company s.CompanyID has
	// no such service.
	UpdateChatService(ctx context.Context, s *messaging.ChatService, keepCredentials bool) error
	// ListChatServices lists the company's chat services by id, with
	// CredentialsSet and without Credentials.
	ListChatServices(ctx context.Context, companyID messaging.ID) ([]messaging.ChatService, error)
	// ChatServices lists every company's chat services by id, with their
	// credentials opened: what the chat router builds its adapters from.
	ChatServices(ctx context.Context) ([]messaging.ChatService, error)
	// ChatServiceByProviderID returns the chat service with the provider's
	// service id, the first registered when several companies have it;
	// NotFound when none.
	ChatServiceByProviderID(ctx context.Context, providerServiceID string) (messaging.ChatService, error)
}

// KeyWatcher is implemented by a store that several processes may share.
// It tells a Service when another process revoked a key, let one expire
// sooner or switched a company off, so that the key stops working here at
// once rather than when the cache forgets it.
type KeyWatcher interface {
	// SharedKeys reports whether other processes may change the keys
	// (Postgres: yes; a single-process database: no).
	SharedKeys() bool
	// WatchAPIKeys listens for such changes, made by any process sharing
	// the store, until ctx ends or the listening fails, and returns the
	// error (nil when ctx ended). It calls changed once it listens (what
	// happened before is unknown), then after every change.
	WatchAPIKeys(ctx context.Context, changed func()) error
}

// Lookup reads a company's SMS senders and chat services: the part of the
// account store that sending (which checks the sender a campaign names)
// and the dispatcher (which reads a campaign's route) need too.
type Lookup interface {
	// GetSMSSender returns the company's sender or NotFound.
	GetSMSSender(ctx context.Context, companyID messaging.ID, id int64) (messaging.SMSSender, error)
	// ListSMSSenders lists the company's senders by id, only approved ones
	// when approvedOnly.
	ListSMSSenders(ctx context.Context, companyID messaging.ID, approvedOnly bool) ([]messaging.SMSSender, error)
	// GetChatService returns the company's chat service, with
	// CredentialsSet and without Credentials, or NotFound.
	GetChatService(ctx context.Context, companyID messaging.ID, id int64) (messaging.ChatService, error)
}
