package accounts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// ProviderInfo describes a chat provider to the use cases: the channels
// it reaches, the credentials it needs and the messages it carries. It is
// what accounts and campaign know of a provider, without importing its
// adapter.
type ProviderInfo struct {
	// Name is the provider's name in the API ("herald", "vonage", ...).
	Name string
	// Channels are the chat networks the provider reaches ("viber",
	// "whatsapp").
	Channels []string
	// NeedsBaseURL tells that the provider has no public endpoint: each
	// service gives its baseUrl.
	NeedsBaseURL bool
	// CheckCredentials returns nil when creds has what the provider needs
	// on channel, else a *messaging.Error of code Invalid naming the field
	// ("credentials.apiKey"). Nil: any object, or none, is accepted.
	CheckCredentials func(channel string, creds json.RawMessage) error
	// Carries returns nil when a message of type t with config c can go
	// over channel, else a *messaging.Error of code Invalid naming the
	// field. Nil: every type is carried.
	Carries func(channel string, t messaging.MessageType, c messaging.ChatConfig) error
}

// Reaches reports whether the provider reaches channel.
func (p ProviderInfo) Reaches(channel string) bool { return slices.Contains(p.Channels, channel) }

// Providers finds a provider's description by name.
type Providers func(name string) (ProviderInfo, bool)

// HeraldProvider describes Herald's own chat protocol, the provider known
// when Config.Providers is nil: it reaches Viber, takes every message type
// and needs no credentials.
func HeraldProvider() ProviderInfo {
	return ProviderInfo{Name: messaging.DefaultChatProvider, Channels: []string{messaging.DefaultChatChannel}}
}

// defaultProviders knows HeraldProvider only.
func defaultProviders(name string) (ProviderInfo, bool) {
	if name == messaging.DefaultChatProvider {
		return HeraldProvider(), true
	}
	return ProviderInfo{}, false
}

// MaxChatServiceFieldLen is the most characters of a chat service's
// brandName and providerServiceId.
const MaxChatServiceFieldLen = 200

// MaxBaseURLLen is the most characters of a chat service's baseUrl.
const MaxBaseURLLen = 2048

// MaxCredentialsLen is the most bytes of a chat service's credentials
// object.
const MaxCredentialsLen = 8192

// ChatServiceInput is a chat service as the operator describes it, on
// creation and on update.
type ChatServiceInput struct {
	BrandName         string
	ProviderServiceID string
	// Provider is the provider's name; empty: "herald".
	Provider string
	// Channel is the chat network; empty: "viber".
	Channel string
	// BaseURL is the provider's endpoint; empty: its public one.
	BaseURL string
	// Credentials is a JSON object. On update, nil keeps the stored
	// credentials and the JSON null removes them.
	Credentials json.RawMessage
}

// checkChatService validates in and returns the service it describes, of
// company companyID. keepCredentials is set when in keeps the stored
// credentials (an update without them).
func (s *Service) checkChatService(companyID messaging.ID, in ChatServiceInput) (messaging.ChatService, bool, error) {
	var fe messaging.FieldErrors
	template.CheckField(&fe, "brandName", in.BrandName, 1, MaxChatServiceFieldLen)
	template.CheckField(&fe, "providerServiceId", in.ProviderServiceID, 1, MaxChatServiceFieldLen)
	cs := messaging.ChatService{CompanyID: companyID, BrandName: in.BrandName, ProviderServiceID: in.ProviderServiceID,
		Provider: in.Provider, Channel: in.Channel, BaseURL: in.BaseURL}
	if cs.Provider == "" {
		cs.Provider = messaging.DefaultChatProvider
	}
	p, known := s.providers(cs.Provider)
	if !known {
		fe.Add("provider", "provider %q is unknown", cs.Provider)
	}
	if cs.Channel == "" {
		cs.Channel = messaging.DefaultChatChannel
		if known && !p.Reaches(cs.Channel) && len(p.Channels) > 0 {
			cs.Channel = p.Channels[0]
		}
	}
	if known && !p.Reaches(cs.Channel) {
		fe.Add("channel", "provider %s does not reach channel %q (it reaches %s)", cs.Provider, cs.Channel, strings.Join(p.Channels, ", "))
	}
	checkBaseURL(&fe, cs.BaseURL)
	if known && p.NeedsBaseURL && cs.BaseURL == "" {
		fe.Add("baseUrl", "baseUrl is required: provider %s has no public endpoint", cs.Provider)
	}
	keep := in.Credentials == nil
	creds := bytes.TrimSpace(in.Credentials)
	switch {
	case keep, string(creds) == "null":
	case len(creds) > MaxCredentialsLen:
		fe.Add("credentials", "credentials must be at most %d bytes", MaxCredentialsLen)
	case len(creds) == 0 || creds[0] != '{' || !json.Valid(creds):
		fe.Add("credentials", "credentials must be a JSON object")
	default:
		cs.Credentials = json.RawMessage(bytes.Clone(creds))
		cs.CredentialsSet = true
	}
	if _, bad := fe["credentials"]; !bad && known && !keep {
		if _, bad := fe["channel"]; !bad && p.CheckCredentials != nil {
			if err := p.CheckCredentials(cs.Channel, cs.Credentials); err != nil {
				if !messaging.IsCode(err, messaging.Invalid) {
					return messaging.ChatService{}, false, fmt.Errorf("check credentials: %w", err)
				}
				addFields(&fe, err, "credentials")
			}
		}
	}
	return cs, keep, fe.Err()
}

// addFields adds the field errors of err, an Invalid *messaging.Error, to
// fe; an error without fields is reported on field.
func addFields(fe *messaging.FieldErrors, err error, field string) {
	var me *messaging.Error
	if errors.As(err, &me) && len(me.Fields) > 0 {
		for k, v := range me.Fields {
			fe.Add(k, "%s", v)
		}
		return
	}
	msg := err.Error()
	if me != nil && me.Message != "" {
		msg = me.Message
	}
	fe.Add(field, "%s", msg)
}

// checkBaseURL checks a service's baseUrl: empty, or an absolute http or
// https URL without user information, query or fragment.
func checkBaseURL(fe *messaging.FieldErrors, raw string) {
	if raw == "" {
		return
	}
	if len(raw) > MaxBaseURLLen {
		fe.Add("baseUrl", "baseUrl must be at most %d characters", MaxBaseURLLen)
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		fe.Add("baseUrl", "baseUrl must be an absolute http or https URL")
	case u.User != nil:
		fe.Add("baseUrl", "baseUrl must not hold user information: put credentials in credentials")
	case u.RawQuery != "" || u.Fragment != "":
		fe.Add("baseUrl", "baseUrl must not have a query or a fragment")
	}
}

// AddChatService registers a company's brand account at Herald's own
// chat provider, on Viber, without credentials: CreateChatService with
// the defaults.
func (s *Service) AddChatService(ctx context.Context, companyID messaging.ID, brandName, providerServiceID string) (messaging.ChatService, error) {
	return s.CreateChatService(ctx, companyID, ChatServiceInput{BrandName: brandName, ProviderServiceID: providerServiceID})
}

// CreateChatService registers a company's brand account at a chat
// provider. brandName and providerServiceId are required, at most
// MaxChatServiceFieldLen characters each, without control characters; the
// provider must be known and reach the channel, and its credentials check
// must pass. The credentials are stored sealed: a store without a secret
// key refuses them (messaging.SecretKeyMissing). The service returned
// holds no credentials, only CredentialsSet.
func (s *Service) CreateChatService(ctx context.Context, companyID messaging.ID, in ChatServiceInput) (messaging.ChatService, error) {
	if in.Credentials == nil {
		in.Credentials = json.RawMessage("null") // none: the provider says whether that will do
	}
	cs, _, err := s.checkChatService(companyID, in)
	if err != nil {
		return messaging.ChatService{}, err
	}
	if _, err := s.store.GetCompany(ctx, companyID); err != nil {
		return messaging.ChatService{}, fmt.Errorf("add chat service: %w", err)
	}
	cs.CreatedAt = s.clock()
	if err := s.store.CreateChatService(ctx, &cs); err != nil {
		return messaging.ChatService{}, fmt.Errorf("add chat service: %w", err)
	}
	cs.Credentials = nil
	return cs, nil
}

// UpdateChatService replaces the description of the company's chat
// service id with in, under the rules of CreateChatService. Credentials
// nil keeps the stored ones, unless the provider or the channel changes:
// they are then required again. NotFound when the company has no such
// service.
func (s *Service) UpdateChatService(ctx context.Context, companyID messaging.ID, id int64, in ChatServiceInput) (messaging.ChatService, error) {
	cs, keep, err := s.checkChatService(companyID, in)
	if err != nil {
		return messaging.ChatService{}, err
	}
	old, err := s.store.GetChatService(ctx, companyID, id)
	if err != nil {
		return messaging.ChatService{}, fmt.Errorf("update chat service: %w", err)
	}
	if keep && (old.ProviderName() != cs.Provider || old.ChannelName() != cs.Channel) {
		var fe messaging.FieldErrors
		if old.CredentialsSet {
			fe.Add("credentials", "credentials are required when the provider or the channel changes")
			return messaging.ChatService{}, fe.Err()
		}
		// No stored credentials to keep: the new provider must accept none.
		if p, _ := s.providers(cs.Provider); p.CheckCredentials != nil {
			if err := p.CheckCredentials(cs.Channel, nil); err != nil {
				addFields(&fe, err, "credentials")
				return messaging.ChatService{}, fe.Err()
			}
		}
	}
	cs.ID, cs.CreatedAt = id, old.CreatedAt
	if keep {
		cs.CredentialsSet = old.CredentialsSet
	}
	if err := s.store.UpdateChatService(ctx, &cs, keep); err != nil {
		return messaging.ChatService{}, fmt.Errorf("update chat service: %w", err)
	}
	cs.Credentials = nil
	return cs, nil
}

// ChatService returns one of the company's chat services, without its
// credentials.
func (s *Service) ChatService(ctx context.Context, companyID messaging.ID, id int64) (messaging.ChatService, error) {
	cs, err := s.store.GetChatService(ctx, companyID, id)
	if err != nil {
		return messaging.ChatService{}, fmt.Errorf("get chat service: %w", err)
	}
	return cs, nil
}

// ListChatServices lists the company's chat services, without their
// credentials.
func (s *Service) ListChatServices(ctx context.Context, companyID messaging.ID) ([]messaging.ChatService, error) {
	out, err := s.store.ListChatServices(ctx, companyID)
	if err != nil {
		return nil, fmt.Errorf("list chat services: %w", err)
	}
	return out, nil
}

// CompanyChatServices lists the company's chat services: the operator's
// view. NotFound for an unknown company.
func (s *Service) CompanyChatServices(ctx context.Context, companyID messaging.ID) ([]messaging.ChatService, error) {
	if _, err := s.store.GetCompany(ctx, companyID); err != nil {
		return nil, fmt.Errorf("list chat services: %w", err)
	}
	return s.ListChatServices(ctx, companyID)
}
