// Package admin is a typed client of Herald's operators' API (/admin/v1):
// companies and their API keys, SMS senders and chat services, company
// rates, SMPP connectors and routes. It authenticates with the admin token
// (Authorization: Bearer), and exists on a server only when that token is
// set (HERALD_ADMIN_TOKEN); the connector and route operations only when
// the server runs with routing, as herald serve does.
//
// It takes the options of package client (client.WithHTTPClient, ...)
// and returns the same errors: a *client.Error for an answer that is not a
// success, so that client.IsNotFound and the other helpers apply.
//
// Onboarding a company:
//
//	a, err := admin.New("http://127.0.0.1:8080", adminToken)
//	co, err := a.CreateCompany(ctx, "Acme")          // inactive
//	_, err = a.ActivateCompany(ctx, co.ID)
//	key, err := a.CreateAPIKey(ctx, co.ID, "crm")    // key.APIKey for client.New
//	sd, err := a.RegisterSMSSender(ctx, co.ID, "ACME")
//	_, err = a.ApproveSMSSender(ctx, sd.ID)
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/client/internal/rest"
)

// Client calls the admin API of a Herald server. It is safe for concurrent
// use.
type Client struct {
	rc *rest.Caller
}

// New returns a Client of the server at baseURL (its root, such as
// http://127.0.0.1:8080; a URL ending with /admin/v1 is accepted too) that
// authenticates with the admin token. It takes the options of package
// client.
func New(baseURL, token string, opts ...client.Option) (*Client, error) {
	if token == "" {
		return nil, errors.New("herald: an admin token is required")
	}
	cfg := rest.Config{HTTPClient: http.DefaultClient, UserAgent: client.DefaultUserAgent, Retries: client.DefaultRetries,
		MaxRetryWait: client.DefaultMaxRetryWait}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	cfg.NewError = func(f *rest.Failure) error {
		return client.ErrorFromAnswer(f.Method, f.Path, f.Status, f.Header, f.Body)
	}
	rc, err := rest.New(baseURL, "/admin/v1", http.Header{"Authorization": {"Bearer " + token}}, cfg)
	if err != nil {
		return nil, err
	}
	return &Client{rc: rc}, nil
}

// do sends a JSON request and decodes its answer into out.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	_, err := c.rc.Do(ctx, method, path, nil, in, out)
	return err
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// Company is a company: a tenant with its API key, senders and chat
// services.
type Company struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Active: a company starts inactive, and its API key is answered 503
	// until it is activated.
	Active bool `json:"active"`
	// MaxPerSecond is the company's rate: messages handed to providers a
	// second, every process together; 0: none.
	MaxPerSecond float64   `json:"maxPerSecond"`
	CreatedAt    time.Time `json:"createdAt"`
}

// APIKey is one of a company's API keys.
type APIKey struct {
	ID int64 `json:"id"`
	// Name tells the company's keys apart ("default" unless given).
	Name string `json:"name"`
	// APIKey is the key itself (om_...): only in the answer of
	// CreateAPIKey, shown this once.
	APIKey    string    `json:"apiKey"`
	CreatedAt time.Time `json:"createdAt"`
	// LastUsedAt is when the key last authenticated a request, to the
	// minute; zero: never.
	LastUsedAt time.Time `json:"lastUsedAt"`
	// ExpiresAt is when the key stops working on its own, a newer key
	// having given it a grace period (RollAPIKey); zero: never.
	ExpiresAt time.Time `json:"expiresAt"`
}

// SMSSender is a company's SMS sender (an alphanumeric originator).
type SMSSender struct {
	ID int64 `json:"id"`
	// SenderID is left empty when the server cannot tell it.
	SenderID string `json:"senderId"`
	// Approved senders are listed by the company API and may send.
	Approved bool `json:"approved"`
	// CreatedAt is given by ListSMSSenders only; zero otherwise.
	CreatedAt time.Time `json:"createdAt"`
}

// ChatServiceInput describes a company's chat service, to add it or to
// replace it.
type ChatServiceInput struct {
	BrandName string `json:"brandName"`
	// ProviderServiceID is the brand's service id at the chat provider.
	ProviderServiceID string `json:"providerServiceId"`
	// Provider is the chat provider ("herald", "vonage", "infobip",
	// "meta-whatsapp"); empty: "herald".
	Provider string `json:"provider,omitempty"`
	// Channel is the chat network ("viber", "whatsapp"); empty: "viber",
	// or the provider's only one.
	Channel string `json:"channel,omitempty"`
	// BaseURL is the provider's API endpoint; empty: its public one.
	BaseURL string `json:"baseUrl,omitempty"`
	// Credentials is a JSON object the provider authenticates the
	// service with; the server stores it encrypted and never shows it
	// again. On a replacement, empty keeps the stored credentials and
	// json.RawMessage("null") removes them.
	Credentials json.RawMessage `json:"credentials,omitempty"`
}

// ChatService is a company's chat service. Its credentials are never
// shown: CredentialsSet tells whether it has some.
type ChatService struct {
	ID                int64  `json:"id"`
	BrandName         string `json:"brandName"`
	ProviderServiceID string `json:"providerServiceId"`
	Provider          string `json:"provider"`
	Channel           string `json:"channel"`
	// BaseURL is empty when the service uses the provider's public
	// endpoint.
	BaseURL        string    `json:"baseUrl"`
	CredentialsSet bool      `json:"credentialsSet"`
	CreatedAt      time.Time `json:"createdAt"`
}

// CreateCompany creates a company, inactive (POST /companies). Names are
// unique, compared trimmed and whatever the case: a taken one is a 409.
func (c *Client) CreateCompany(ctx context.Context, name string) (*Company, error) {
	var out Company
	if err := c.do(ctx, http.MethodPost, "/companies", struct {
		Name string `json:"name"`
	}{name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Operator is what the server says of the holder of the admin token.
type Operator struct {
	// Role is "operator".
	Role string `json:"role"`
	// Version is the server's version; empty: unknown.
	Version string `json:"version"`
	// Routing tells whether the server has SMPP connectors and routes.
	Routing bool `json:"routing"`
}

// WhoAmI checks the admin token (GET /whoami): the operator and the
// server's version, or a *client.Error (401 for a wrong token; 404 "Admin
// API Disabled" on a server without an admin token).
func (c *Client) WhoAmI(ctx context.Context) (*Operator, error) {
	var out Operator
	if err := c.do(ctx, http.MethodGet, "/whoami", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetCompany reads a company (GET /companies/{id}).
func (c *Client) GetCompany(ctx context.Context, id string) (*Company, error) {
	var out Company
	if err := c.do(ctx, http.MethodGet, "/companies/"+seg(id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ActivateCompany activates a company (POST /companies/{id}/activate): its
// API key works.
func (c *Client) ActivateCompany(ctx context.Context, id string) (*Company, error) {
	return c.companyPost(ctx, id, "activate")
}

// DeactivateCompany deactivates a company (POST
// /companies/{id}/deactivate): its API key is answered 503.
func (c *Client) DeactivateCompany(ctx context.Context, id string) (*Company, error) {
	return c.companyPost(ctx, id, "deactivate")
}

func (c *Client) companyPost(ctx context.Context, id, action string) (*Company, error) {
	var out Company
	if err := c.do(ctx, http.MethodPost, "/companies/"+seg(id)+"/"+action, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetCompanyRate sets a company's rate (PUT /companies/{id}/rate-limit):
// its messages handed to providers a second, every process together; 0
// removes the limit.
func (c *Client) SetCompanyRate(ctx context.Context, id string, maxPerSecond float64) (*Company, error) {
	var out Company
	if err := c.do(ctx, http.MethodPut, "/companies/"+seg(id)+"/rate-limit", struct {
		MaxPerSecond float64 `json:"maxPerSecond"`
	}{maxPerSecond}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListCompanies returns one page of the companies, by name (GET
// /companies).
func (c *Client) ListCompanies(ctx context.Context, opts client.PageOptions) (*client.Page[Company], error) {
	q := url.Values{}
	if opts.Page != 0 {
		q.Set("page", strconv.Itoa(opts.Page))
	}
	if opts.PageSize != 0 {
		q.Set("pageSize", strconv.Itoa(opts.PageSize))
	}
	var items []Company
	m, err := c.rc.List(ctx, "/companies", "companies", q, &items)
	if err != nil {
		return nil, err
	}
	return &client.Page[Company]{Items: items, TotalCount: m.TotalCount, Page: m.Page, PageSize: m.PageSize, TotalPages: m.TotalPages}, nil
}

// AllCompanies iterates over the companies, by name, a page of
// opts.PageSize at a time; it stops at the first error, which it yields.
func (c *Client) AllCompanies(ctx context.Context, opts client.PageOptions) iter.Seq2[Company, error] {
	return rest.Walk(opts.Page, func(page int) ([]Company, rest.PageMeta, error) {
		opts.Page = page
		p, err := c.ListCompanies(ctx, opts)
		if err != nil {
			return nil, rest.PageMeta{}, err
		}
		return p.Items, rest.PageMeta{TotalCount: p.TotalCount, Page: p.Page, PageSize: p.PageSize, TotalPages: p.TotalPages}, nil
	})
}

// CreateAPIKey makes a new API key for a company (POST
// /companies/{id}/api-keys), named name ("": "default"), and revokes the
// company's other keys at once. The answer's APIKey is the key, shown
// this once. RollAPIKey lets the other keys work a while longer.
func (c *Client) CreateAPIKey(ctx context.Context, companyID, name string) (*APIKey, error) {
	return c.RollAPIKey(ctx, companyID, name, 0)
}

// MaxKeyGrace is the longest grace RollAPIKey may give: 7 days.
const MaxKeyGrace = 7 * 24 * time.Hour

// RollAPIKey makes a new API key for a company, named name ("":
// "default"), and gives the company's other keys grace, rounded up to
// whole seconds and at most MaxKeyGrace: they keep working that long
// (or less, when an earlier roll gave them less), then stop on their own
// in every server process. Zero revokes them at once, as CreateAPIKey
// does. The answer's APIKey is the key, shown this once; ListAPIKeys
// shows when the others expire.
func (c *Client) RollAPIKey(ctx context.Context, companyID, name string, grace time.Duration) (*APIKey, error) {
	var body any
	if name != "" || grace != 0 {
		in := struct {
			Name                 string `json:"name,omitempty"`
			PreviousKeysExpireIn int64  `json:"previousKeysExpireIn,omitempty"`
		}{Name: name}
		if grace != 0 {
			in.PreviousKeysExpireIn = int64((grace + time.Second - 1) / time.Second)
			if grace < 0 {
				in.PreviousKeysExpireIn = -1 // the server says why
			}
		}
		body = in
	}
	var out APIKey
	if err := c.do(ctx, http.MethodPost, "/companies/"+seg(companyID)+"/api-keys", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListAPIKeys returns a company's API keys that still work, oldest
// first, without the keys themselves (GET /companies/{id}/api-keys).
func (c *Client) ListAPIKeys(ctx context.Context, companyID string) ([]APIKey, error) {
	var out []APIKey
	if err := c.do(ctx, http.MethodGet, "/companies/"+seg(companyID)+"/api-keys", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// RevokeAPIKey revokes one of a company's API keys (DELETE
// /companies/{id}/api-keys/{keyId}): it stops working at once.
func (c *Client) RevokeAPIKey(ctx context.Context, companyID string, keyID int64) error {
	return c.do(ctx, http.MethodDelete, "/companies/"+seg(companyID)+"/api-keys/"+strconv.FormatInt(keyID, 10), nil, nil)
}

// ListSMSSenders returns every SMS sender of a company, approved or not
// (GET /companies/{id}/sms-senders).
func (c *Client) ListSMSSenders(ctx context.Context, companyID string) ([]SMSSender, error) {
	var out []SMSSender
	if err := c.do(ctx, http.MethodGet, "/companies/"+seg(companyID)+"/sms-senders", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListChatServices returns every chat service of a company (GET
// /companies/{id}/chat-services).
func (c *Client) ListChatServices(ctx context.Context, companyID string) ([]ChatService, error) {
	var out []ChatService
	if err := c.do(ctx, http.MethodGet, "/companies/"+seg(companyID)+"/chat-services", nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// RegisterSMSSender registers an SMS sender for a company, not approved
// (POST /companies/{id}/sms-senders). senderID is 1 to 11 letters, digits
// and spaces.
func (c *Client) RegisterSMSSender(ctx context.Context, companyID, senderID string) (*SMSSender, error) {
	var out SMSSender
	if err := c.do(ctx, http.MethodPost, "/companies/"+seg(companyID)+"/sms-senders", struct {
		SenderID string `json:"senderId"`
	}{senderID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ApproveSMSSender approves an SMS sender by its id (POST
// /sms-senders/{smsSenderId}/approve).
func (c *Client) ApproveSMSSender(ctx context.Context, smsSenderID int64) (*SMSSender, error) {
	return c.approve(ctx, "/sms-senders/"+strconv.FormatInt(smsSenderID, 10)+"/approve")
}

// ApproveCompanySMSSender approves an SMS sender of a company (POST
// /companies/{id}/sms-senders/{smsSenderId}/approve); a sender of another
// company is a 404.
func (c *Client) ApproveCompanySMSSender(ctx context.Context, companyID string, smsSenderID int64) (*SMSSender, error) {
	return c.approve(ctx, "/companies/"+seg(companyID)+"/sms-senders/"+strconv.FormatInt(smsSenderID, 10)+"/approve")
}

func (c *Client) approve(ctx context.Context, path string) (*SMSSender, error) {
	var out SMSSender
	if err := c.do(ctx, http.MethodPost, path, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AddChatService adds a chat service to a company (POST
// /companies/{id}/chat-services). A server without a secret key answers
// 503 to a service with credentials.
func (c *Client) AddChatService(ctx context.Context, companyID string, in ChatServiceInput) (*ChatService, error) {
	var out ChatService
	if err := c.do(ctx, http.MethodPost, "/companies/"+seg(companyID)+"/chat-services", in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetChatService returns one chat service of a company (GET
// /companies/{id}/chat-services/{chatServiceId}).
func (c *Client) GetChatService(ctx context.Context, companyID string, id int64) (*ChatService, error) {
	var out ChatService
	if err := c.do(ctx, http.MethodGet, chatServicePath(companyID, id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateChatService replaces a chat service of a company (PUT
// /companies/{id}/chat-services/{chatServiceId}). Its credentials are
// kept when in has none, unless the provider or the channel changes.
func (c *Client) UpdateChatService(ctx context.Context, companyID string, id int64, in ChatServiceInput) (*ChatService, error) {
	var out ChatService
	if err := c.do(ctx, http.MethodPut, chatServicePath(companyID, id), in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func chatServicePath(companyID string, id int64) string {
	return "/companies/" + seg(companyID) + "/chat-services/" + strconv.FormatInt(id, 10)
}

// CompanySummary is one company's row of a Summary.
type CompanySummary struct {
	CompanyID string `json:"companyId"`
	// Name is nil when the company is gone.
	Name *string `json:"name"`
	client.Summary
}

// Summary counts every company's messages: all together, then a row for
// each company with messages, most first.
type Summary struct {
	client.Summary
	Companies []CompanySummary `json:"companies"`
}

// Summary counts every company's messages created since a time (GET
// /summary). A zero since is the start of the current UTC day; more than
// seven days back is a 400.
func (c *Client) Summary(ctx context.Context, since time.Time) (*Summary, error) {
	var out Summary
	if _, err := c.rc.Do(ctx, http.MethodGet, "/summary", client.SummaryQuery(since), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
