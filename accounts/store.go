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
	// whole key, and sets k.ID; the company's other keys keep working.
	// NotFound when the company is unknown; Conflict when any key has the
	// same selector, or when the company has max keys already (nothing is
	// changed then).
	CreateAPIKey(ctx context.Context, k *messaging.APIKey, selector string, hash []byte, max int) error
	// ListAPIKeys returns the company's keys, oldest first (none for an
	// unknown company).
	ListAPIKeys(ctx context.Context, companyID messaging.ID) ([]messaging.APIKey, error)
	// RevokeAPIKey removes one of the company's keys: it stops
	// authenticating. NotFound when the company has no key with that id.
	RevokeAPIKey(ctx context.Context, companyID messaging.ID, id int64) error
	// TouchAPIKey records that key id authenticated a request at at.
	TouchAPIKey(ctx context.Context, id int64, at time.Time) error
	// CompanyByAPIKeySelector finds the key with this selector and returns
	// its company, the key and its stored hash; NotFound when none.
	CompanyByAPIKeySelector(ctx context.Context, selector string) (messaging.Company, messaging.APIKey, []byte, error)

	// CreateSMSSender inserts s and sets its ID.
	CreateSMSSender(ctx context.Context, s *messaging.SMSSender) error
	// ApproveSMSSender approves a sender; NotFound when unknown.
	ApproveSMSSender(ctx context.Context, id int64) error
	// SMSSenderByID returns the sender of any company, or NotFound: the
	// operator's view.
	SMSSenderByID(ctx context.Context, id int64) (messaging.SMSSender, error)

	// CreateChatService inserts s and sets its ID.
	CreateChatService(ctx context.Context, s *messaging.ChatService) error
	// ListChatServices lists the company's chat services by id.
	ListChatServices(ctx context.Context, companyID messaging.ID) ([]messaging.ChatService, error)
	// ChatServiceByProviderID returns the chat service with the provider's
	// service id, the first registered when several companies have it;
	// NotFound when none.
	ChatServiceByProviderID(ctx context.Context, providerServiceID string) (messaging.ChatService, error)
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
	// GetChatService returns the company's chat service or NotFound.
	GetChatService(ctx context.Context, companyID messaging.ID, id int64) (messaging.ChatService, error)
}
