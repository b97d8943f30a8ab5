package memstore

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// CreateCompany implements accounts.Store.
func (s *Store) CreateCompany(ctx context.Context, c *messaging.Company) error {
	if err := s.lock(ctx, "create company"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.companies[c.ID]; ok {
		return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "company %s already exists", c.ID)
	}
	for _, co := range s.companies {
		if messaging.CompanyNameKey(co.c.Name) == messaging.CompanyNameKey(c.Name) {
			return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "A company named %q exists already", c.Name)
		}
	}
	s.companies[c.ID] = &company{c: *c}
	return nil
}

// GetCompany implements accounts.Store.
func (s *Store) GetCompany(ctx context.Context, id messaging.ID) (messaging.Company, error) {
	if err := s.lock(ctx, "get company"); err != nil {
		return messaging.Company{}, err
	}
	defer s.mu.Unlock()
	co := s.companies[id]
	if co == nil {
		return messaging.Company{}, messaging.CompanyNotFound(id)
	}
	return co.c, nil
}

// SetCompanyActive implements accounts.Store.
func (s *Store) SetCompanyActive(ctx context.Context, id messaging.ID, active bool) error {
	if err := s.lock(ctx, "set company active"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	co := s.companies[id]
	if co == nil {
		return messaging.CompanyNotFound(id)
	}
	co.c.Active = active
	return nil
}

// SetCompanyRate implements accounts.Store.
func (s *Store) SetCompanyRate(ctx context.Context, id messaging.ID, perSecond float64) error {
	if err := s.lock(ctx, "set company rate"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	co := s.companies[id]
	if co == nil {
		return messaging.CompanyNotFound(id)
	}
	co.c.MaxPerSecond = perSecond
	return nil
}

// CompanyRates implements delivery.RateSource: the companies with a
// rate, and the claimers whose heartbeat is newer than since.
func (s *Store) CompanyRates(ctx context.Context, since time.Time) (map[messaging.ID]float64, int, error) {
	if err := s.lock(ctx, "company rates"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var rates map[messaging.ID]float64
	for id, co := range s.companies {
		if co.c.MaxPerSecond > 0 {
			if rates == nil {
				rates = map[messaging.ID]float64{}
			}
			rates[id] = co.c.MaxPerSecond
		}
	}
	n := 0
	for _, at := range s.claimers {
		if !at.Before(since) {
			n++
		}
	}
	return rates, n, nil
}

// CreateAPIKey implements accounts.Store.
func (s *Store) CreateAPIKey(ctx context.Context, k *messaging.APIKey, selector string, hash []byte, max int, othersExpireAt time.Time) error {
	if err := s.lock(ctx, "create API key"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.companies[k.CompanyID] == nil {
		return messaging.CompanyNotFound(k.CompanyID)
	}
	if _, ok := s.apiKeys[selector]; ok {
		return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "API key selector already in use")
	}
	now, atOnce := k.CreatedAt, !othersExpireAt.After(k.CreatedAt)
	n := 0
	for _, ak := range s.apiKeys {
		if ak.k.CompanyID == k.CompanyID && !atOnce && (ak.k.ExpiresAt == nil || ak.k.ExpiresAt.After(now)) {
			n++
		}
	}
	if n >= max {
		return messaging.Errorf(messaging.Conflict, messaging.NameConflict,
			"The company has %d API keys in use already, the most it may have: revoke one, or give the others no grace period", n)
	}
	for sel, ak := range s.apiKeys {
		switch {
		case ak.k.CompanyID != k.CompanyID:
		case atOnce || (ak.k.ExpiresAt != nil && !ak.k.ExpiresAt.After(now)):
			delete(s.apiKeys, sel)
		case ak.k.ExpiresAt == nil || othersExpireAt.Before(*ak.k.ExpiresAt):
			at := othersExpireAt
			ak.k.ExpiresAt = &at
		}
	}
	s.lastAPIKey++
	k.ID = s.lastAPIKey
	s.apiKeys[selector] = &apiKey{k: *k, hash: string(hash)} // a copy of the caller's bytes
	return nil
}

// ListAPIKeys implements accounts.Store.
func (s *Store) ListAPIKeys(ctx context.Context, companyID messaging.ID) ([]messaging.APIKey, error) {
	if err := s.lock(ctx, "list API keys"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []messaging.APIKey
	for _, ak := range s.apiKeys {
		if ak.k.CompanyID == companyID {
			out = append(out, cloneAPIKey(ak.k))
		}
	}
	slices.SortFunc(out, func(a, b messaging.APIKey) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func cloneAPIKey(k messaging.APIKey) messaging.APIKey {
	if k.LastUsedAt != nil {
		t := *k.LastUsedAt
		k.LastUsedAt = &t
	}
	if k.ExpiresAt != nil {
		t := *k.ExpiresAt
		k.ExpiresAt = &t
	}
	return k
}

// RevokeAPIKey implements accounts.Store.
func (s *Store) RevokeAPIKey(ctx context.Context, companyID messaging.ID, id int64) error {
	if err := s.lock(ctx, "revoke API key"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for sel, ak := range s.apiKeys {
		if ak.k.ID == id && ak.k.CompanyID == companyID {
			delete(s.apiKeys, sel)
			return nil
		}
	}
	return messaging.Errorf(messaging.NotFound, messaging.NameNotFound, "API key %d not found", id)
}

// TouchAPIKey implements accounts.Store.
func (s *Store) TouchAPIKey(ctx context.Context, id int64, at time.Time) error {
	if err := s.lock(ctx, "touch API key"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for _, ak := range s.apiKeys {
		if ak.k.ID == id {
			at := at
			ak.k.LastUsedAt = &at
		}
	}
	return nil
}

// CompanyByAPIKeySelector implements accounts.Store.
func (s *Store) CompanyByAPIKeySelector(ctx context.Context, selector string) (messaging.Company, messaging.APIKey, []byte, error) {
	if err := s.lock(ctx, "find company by API key"); err != nil {
		return messaging.Company{}, messaging.APIKey{}, nil, err
	}
	defer s.mu.Unlock()
	ak, ok := s.apiKeys[selector]
	if !ok || selector == "" {
		return messaging.Company{}, messaging.APIKey{}, nil, messaging.APIKeyNotFound()
	}
	return s.companies[ak.k.CompanyID].c, cloneAPIKey(ak.k), []byte(ak.hash), nil
}

// ListCompanies implements accounts.Store.
func (s *Store) ListCompanies(ctx context.Context, page messaging.PageRequest) ([]messaging.Company, int, error) {
	if err := s.lock(ctx, "list companies"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	all := make([]messaging.Company, 0, len(s.companies))
	for _, co := range s.companies {
		all = append(all, co.c)
	}
	slices.SortFunc(all, func(a, b messaging.Company) int {
		return cmp.Or(strings.Compare(messaging.CompanyNameKey(a.Name), messaging.CompanyNameKey(b.Name)), bytes.Compare(a.ID[:], b.ID[:]))
	})
	from := min(page.Offset(), len(all))
	to := min(from+page.PageSize, len(all))
	return all[from:to], len(all), nil
}

// CreateSMSSender implements accounts.Store.
func (s *Store) CreateSMSSender(ctx context.Context, sd *messaging.SMSSender) error {
	if err := s.lock(ctx, "create SMS sender"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.companies[sd.CompanyID] == nil {
		return messaging.CompanyNotFound(sd.CompanyID)
	}
	s.lastSender++
	sd.ID = s.lastSender
	s.senders[sd.ID] = *sd
	return nil
}

// ApproveSMSSender implements accounts.Store.
func (s *Store) ApproveSMSSender(ctx context.Context, id int64) error {
	if err := s.lock(ctx, "approve SMS sender"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	sd, ok := s.senders[id]
	if !ok {
		return messaging.SMSSenderNotFound(id)
	}
	sd.Approved = true
	s.senders[id] = sd
	return nil
}

// GetSMSSender implements accounts.Store.
func (s *Store) GetSMSSender(ctx context.Context, companyID messaging.ID, id int64) (messaging.SMSSender, error) {
	if err := s.lock(ctx, "get SMS sender"); err != nil {
		return messaging.SMSSender{}, err
	}
	defer s.mu.Unlock()
	sd, ok := s.senders[id]
	if !ok || sd.CompanyID != companyID {
		return messaging.SMSSender{}, messaging.SMSSenderNotFound(id)
	}
	return sd, nil
}

// SMSSenderByID implements campaign.Store.
func (s *Store) SMSSenderByID(ctx context.Context, id int64) (messaging.SMSSender, error) {
	if err := s.lock(ctx, "get SMS sender"); err != nil {
		return messaging.SMSSender{}, err
	}
	defer s.mu.Unlock()
	sd, ok := s.senders[id]
	if !ok {
		return messaging.SMSSender{}, messaging.SMSSenderNotFound(id)
	}
	return sd, nil
}

// ListSMSSenders implements accounts.Store.
func (s *Store) ListSMSSenders(ctx context.Context, companyID messaging.ID, approvedOnly bool) ([]messaging.SMSSender, error) {
	if err := s.lock(ctx, "list SMS senders"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []messaging.SMSSender
	for _, sd := range s.senders {
		if sd.CompanyID == companyID && (sd.Approved || !approvedOnly) {
			out = append(out, sd)
		}
	}
	slices.SortFunc(out, func(a, b messaging.SMSSender) int { return compareInt(a.ID, b.ID) })
	return out, nil
}

// CreateChatService implements accounts.Store.
func (s *Store) CreateChatService(ctx context.Context, cs *messaging.ChatService) error {
	if err := s.lock(ctx, "create chat service"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.companies[cs.CompanyID] == nil {
		return messaging.CompanyNotFound(cs.CompanyID)
	}
	s.lastChat++
	cs.ID = s.lastChat
	cs.Provider, cs.Channel = cs.ProviderName(), cs.ChannelName()
	cs.CredentialsSet = len(cs.Credentials) > 0
	c := *cs
	c.Credentials = slices.Clone(cs.Credentials)
	s.chats[cs.ID] = c
	return nil
}

// UpdateChatService implements accounts.Store.
func (s *Store) UpdateChatService(ctx context.Context, cs *messaging.ChatService, keepCredentials bool) error {
	if err := s.lock(ctx, "update chat service"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	old, ok := s.chats[cs.ID]
	if !ok || old.CompanyID != cs.CompanyID {
		return messaging.ChatServiceNotFound(cs.ID)
	}
	cs.Provider, cs.Channel = cs.ProviderName(), cs.ChannelName()
	c := *cs
	c.CreatedAt = old.CreatedAt
	if keepCredentials {
		c.Credentials = old.Credentials
	} else {
		c.Credentials = slices.Clone(cs.Credentials)
	}
	c.CredentialsSet = len(c.Credentials) > 0
	s.chats[cs.ID] = c
	cs.CreatedAt, cs.CredentialsSet = c.CreatedAt, c.CredentialsSet
	return nil
}

// ChatServices implements accounts.Store.
func (s *Store) ChatServices(ctx context.Context) ([]messaging.ChatService, error) {
	if err := s.lock(ctx, "list chat services"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]messaging.ChatService, 0, len(s.chats))
	for _, cs := range s.chats {
		cs.Credentials = slices.Clone(cs.Credentials)
		out = append(out, cs)
	}
	slices.SortFunc(out, func(a, b messaging.ChatService) int { return compareInt(a.ID, b.ID) })
	return out, nil
}

// withoutCredentials is cs as the reads other than ChatServices return
// it.
func withoutCredentials(cs messaging.ChatService) messaging.ChatService {
	cs.Credentials = nil
	return cs
}

// GetChatService implements accounts.Store.
func (s *Store) GetChatService(ctx context.Context, companyID messaging.ID, id int64) (messaging.ChatService, error) {
	if err := s.lock(ctx, "get chat service"); err != nil {
		return messaging.ChatService{}, err
	}
	defer s.mu.Unlock()
	cs, ok := s.chats[id]
	if !ok || cs.CompanyID != companyID {
		return messaging.ChatService{}, messaging.ChatServiceNotFound(id)
	}
	return withoutCredentials(cs), nil
}

// ListChatServices implements accounts.Store.
func (s *Store) ListChatServices(ctx context.Context, companyID messaging.ID) ([]messaging.ChatService, error) {
	if err := s.lock(ctx, "list chat services"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []messaging.ChatService
	for _, cs := range s.chats {
		if cs.CompanyID == companyID {
			out = append(out, withoutCredentials(cs))
		}
	}
	slices.SortFunc(out, func(a, b messaging.ChatService) int { return compareInt(a.ID, b.ID) })
	return out, nil
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CreateTemplate implements campaign.TemplateStore.
func (s *Store) CreateTemplate(ctx context.Context, t *messaging.Template) error {
	if err := s.lock(ctx, "create template"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.companies[t.CompanyID] == nil {
		return messaging.CompanyNotFound(t.CompanyID)
	}
	if _, ok := s.templates[t.ID]; ok {
		return messaging.Errorf(messaging.Conflict, messaging.NameConflict, "template %s already exists", t.ID)
	}
	key := lookupKey{t.CompanyID, t.Name}
	if _, taken := s.templateNames[key]; taken {
		return nameTaken()
	}
	v := cloneTemplate(t)
	s.templates[t.ID] = &v
	s.templateNames[key] = t.ID
	return nil
}

func nameTaken() error { return messaging.Invalidf("name", "name must be unique") }

// GetTemplate implements campaign.TemplateStore.
func (s *Store) GetTemplate(ctx context.Context, companyID, id messaging.ID) (messaging.Template, error) {
	if err := s.lock(ctx, "get template"); err != nil {
		return messaging.Template{}, err
	}
	defer s.mu.Unlock()
	t := s.templates[id]
	if t == nil || t.CompanyID != companyID {
		return messaging.Template{}, messaging.TemplateNotFound(id)
	}
	return cloneTemplate(t), nil
}

// ListTemplates implements campaign.TemplateStore.
func (s *Store) ListTemplates(ctx context.Context, companyID messaging.ID, p messaging.PageRequest) ([]messaging.Template, int, error) {
	if err := s.lock(ctx, "list templates"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var all []*messaging.Template
	for _, t := range s.templates {
		if t.CompanyID == companyID {
			all = append(all, t)
		}
	}
	slices.SortFunc(all, func(a, b *messaging.Template) int { return newestFirst(a.CreatedAt, b.CreatedAt, a.ID, b.ID) })
	rows := page(all, p)
	out := make([]messaging.Template, len(rows))
	for i, t := range rows {
		out[i] = cloneTemplate(t)
	}
	return out, len(all), nil
}

// UpdateTemplate implements campaign.TemplateStore.
func (s *Store) UpdateTemplate(ctx context.Context, t *messaging.Template) error {
	if err := s.lock(ctx, "update template"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	old := s.templates[t.ID]
	if old == nil || old.CompanyID != t.CompanyID {
		return messaging.TemplateNotFound(t.ID)
	}
	newKey := lookupKey{t.CompanyID, t.Name}
	if owner, taken := s.templateNames[newKey]; taken && owner != t.ID {
		return nameTaken()
	}
	delete(s.templateNames, lookupKey{old.CompanyID, old.Name})
	s.templateNames[newKey] = t.ID
	v := cloneTemplate(t)
	v.Channel, v.CreatedAt = old.Channel, old.CreatedAt
	*old = v
	return nil
}

// DeleteTemplate implements campaign.TemplateStore. Campaigns made from
// the template keep its id and name.
func (s *Store) DeleteTemplate(ctx context.Context, companyID, id messaging.ID) error {
	if err := s.lock(ctx, "delete template"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	t := s.templates[id]
	if t == nil || t.CompanyID != companyID {
		return messaging.TemplateNotFound(id)
	}
	delete(s.templateNames, lookupKey{t.CompanyID, t.Name})
	delete(s.templates, id)
	return nil
}

// ChatServiceByProviderID implements accounts.Store.
func (s *Store) ChatServiceByProviderID(ctx context.Context, providerServiceID string) (messaging.ChatService, error) {
	if err := s.lock(ctx, "get chat service"); err != nil {
		return messaging.ChatService{}, err
	}
	defer s.mu.Unlock()
	var best messaging.ChatService
	for _, cs := range s.chats {
		if cs.ProviderServiceID == providerServiceID && (best.ID == 0 || cs.ID < best.ID) {
			best = cs
		}
	}
	if best.ID == 0 {
		return messaging.ChatService{}, messaging.NotFoundf("No chat service has provider id %q", providerServiceID)
	}
	return withoutCredentials(best), nil
}
