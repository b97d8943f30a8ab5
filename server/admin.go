package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
)

// adminWhoAmI answers GET /admin/v1/whoami: 200 when the admin token is
// right, with the caller's role and the server's version. It is what a
// client signing in as the operator checks the token with.
func (s *server) adminWhoAmI(w http.ResponseWriter, _ *http.Request) error {
	s.writeJSON(w, http.StatusOK, struct {
		Role    string  `json:"role"`
		Version *string `json:"version"`
		Routing bool    `json:"routing"`
	}{"operator", strOrNull(s.version), s.routing != nil})
	return nil
}

// companyJSON answers the company endpoints of the admin API.
type companyJSON struct {
	ID        messaging.ID `json:"id"`
	Name      string       `json:"name"`
	Active    bool         `json:"active"`
	CreatedAt timestamp    `json:"createdAt"`
	// MaxPerSecond is the company's rate: messages handed to a provider a
	// second, every process together; 0: none.
	MaxPerSecond float64 `json:"maxPerSecond"`
}

// companyOut is c as the admin API answers it.
func companyOut(c messaging.Company) companyJSON {
	return companyJSON{ID: c.ID, Name: c.Name, Active: c.Active, CreatedAt: ts(c.CreatedAt), MaxPerSecond: c.MaxPerSecond}
}

// senderJSON answers the SMS sender endpoints of the admin API. senderId
// is left out when the store cannot tell it (see accounts.Service.ApproveSender).
type senderJSON struct {
	ID       int64  `json:"id"`
	SenderID string `json:"senderId,omitempty"`
	Approved bool   `json:"approved"`
}

// adminCreateCompany answers POST /admin/v1/companies: 201, inactive.
func (s *server) adminCreateCompany(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	c, err := s.accounts.CreateCompany(r.Context(), in.Name)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, companyOut(c))
	return nil
}

// adminActivate answers POST /admin/v1/companies/{id}/activate and
// /deactivate.
func (s *server) adminActivate(active bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		if err := s.accounts.SetCompanyActive(r.Context(), id, active); err != nil {
			return err
		}
		c, err := s.accounts.GetCompany(r.Context(), id)
		if err != nil {
			return err
		}
		s.writeJSON(w, http.StatusOK, companyOut(c))
		return nil
	}
}

// adminGetCompany answers GET /admin/v1/companies/{id}.
func (s *server) adminGetCompany(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := s.accounts.GetCompany(r.Context(), id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, companyOut(c))
	return nil
}

// adminSetCompanyRate answers PUT /admin/v1/companies/{id}/rate-limit:
// the company's messages a second, every process together (0: none).
func (s *server) adminSetCompanyRate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in struct {
		MaxPerSecond *float64 `json:"maxPerSecond"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	if in.MaxPerSecond == nil {
		return invalidField("maxPerSecond", "maxPerSecond is required (0 removes the limit)")
	}
	c, err := s.accounts.SetCompanyRate(r.Context(), id, *in.MaxPerSecond)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, companyOut(c))
	return nil
}

// apiKeyJSON describes an API key in the admin API; the key itself is in
// the answer of its creation only.
type apiKeyJSON struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	APIKey     string     `json:"apiKey,omitempty"`
	CreatedAt  timestamp  `json:"createdAt"`
	LastUsedAt *timestamp `json:"lastUsedAt"`
	// ExpiresAt is when the key stops working on its own (a newer key
	// gave it a grace period); null: never.
	ExpiresAt *timestamp `json:"expiresAt"`
}

func apiKeyOut(k messaging.APIKey, key string) apiKeyJSON {
	return apiKeyJSON{ID: k.ID, Name: k.Name, APIKey: key, CreatedAt: ts(k.CreatedAt), LastUsedAt: tsOrNull(k.LastUsedAt), ExpiresAt: tsOrNull(k.ExpiresAt)}
}

// maxKeyGraceSeconds is the most previousKeysExpireIn may be.
const maxKeyGraceSeconds = int64(accounts.MaxKeyGrace / time.Second)

// adminAPIKey answers POST /admin/v1/companies/{id}/api-keys, with an
// optional body {"name", "previousKeysExpireIn"}: 201 with the new key,
// shown this once. The company's other keys are revoked at once, or
// expire after previousKeysExpireIn seconds (at most 7 days).
func (s *server) adminAPIKey(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in struct {
		Name                 string `json:"name"`
		PreviousKeysExpireIn *int64 `json:"previousKeysExpireIn"`
	}
	// The body is optional: a key without a name is "default".
	data, err := io.ReadAll(s.body(w, r))
	if err != nil {
		return decodeError(err, "") // too large (413), too slow (408)
	}
	if len(bytes.TrimSpace(data)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(data))
		if err := s.decodeBody(w, r, &in); err != nil {
			return err
		}
	}
	var grace time.Duration
	if in.PreviousKeysExpireIn != nil {
		if n := *in.PreviousKeysExpireIn; n < 0 || n > maxKeyGraceSeconds {
			return invalidField("previousKeysExpireIn", fmt.Sprintf(
				"previousKeysExpireIn must be between 0 (revoke the other keys at once) and %d seconds (7 days)", maxKeyGraceSeconds))
		}
		grace = time.Duration(*in.PreviousKeysExpireIn) * time.Second
	}
	key, k, err := s.accounts.CreateAPIKey(r.Context(), id, in.Name, grace)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, http.StatusCreated, apiKeyOut(k, key))
	return nil
}

// adminListAPIKeys answers GET /admin/v1/companies/{id}/api-keys: the
// keys' descriptions, oldest first.
func (s *server) adminListAPIKeys(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	ks, err := s.accounts.ListAPIKeys(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]apiKeyJSON, len(ks))
	for i, k := range ks {
		out[i] = apiKeyOut(k, "")
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}

// adminRevokeAPIKey answers DELETE /admin/v1/companies/{id}/api-keys/{keyId}.
func (s *server) adminRevokeAPIKey(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	v, err := pathVar(r, "keyId")
	if err != nil {
		return err
	}
	keyID, err := strconv.ParseInt(v, 10, 64)
	if err != nil || keyID <= 0 {
		return invalidField("keyId", fmt.Sprintf("keyId %q is not a positive integer", v))
	}
	if err := s.accounts.RevokeAPIKey(r.Context(), id, keyID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// adminListCompanies answers GET /admin/v1/companies: a page of the
// companies, by name.
func (s *server) adminListCompanies(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	page := q.page()
	if err := q.err(); err != nil {
		return err
	}
	cs, total, err := s.accounts.ListCompanies(r.Context(), page)
	if err != nil {
		return err
	}
	out := make([]companyJSON, len(cs))
	for i, c := range cs {
		out[i] = companyOut(c)
	}
	s.writeJSON(w, http.StatusOK, struct {
		Companies []companyJSON `json:"companies"`
		pageJSON
	}{out, pageOut(page, total)})
	return nil
}

// adminListSenders answers GET /admin/v1/companies/{id}/sms-senders: every
// sender of the company, approved or not.
func (s *server) adminListSenders(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	sds, err := s.accounts.CompanySMSSenders(r.Context(), id)
	if err != nil {
		return err
	}
	type senderOut struct {
		ID        int64     `json:"id"`
		SenderID  string    `json:"senderId"`
		Approved  bool      `json:"approved"`
		CreatedAt timestamp `json:"createdAt"`
	}
	out := make([]senderOut, len(sds))
	for i, sd := range sds {
		out[i] = senderOut{sd.ID, sd.SenderID, sd.Approved, ts(sd.CreatedAt)}
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}

// adminListChatServices answers GET /admin/v1/companies/{id}/chat-services.
func (s *server) adminListChatServices(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	css, err := s.accounts.CompanyChatServices(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]adminChatServiceJSON, len(css))
	for i, cs := range css {
		out[i] = adminChatServiceOut(cs)
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}

// adminRegisterSender answers POST /admin/v1/companies/{id}/sms-senders:
// 201, unapproved.
func (s *server) adminRegisterSender(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in struct {
		SenderID string `json:"senderId"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	sd, err := s.accounts.RegisterSMSSender(r.Context(), id, in.SenderID)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, senderJSON{ID: sd.ID, SenderID: sd.SenderID, Approved: sd.Approved})
	return nil
}

// pathSenderID parses the integer id of an SMS sender in the path.
func pathSenderID(r *http.Request) (int64, error) {
	v, err := pathVar(r, "smsSenderId")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, invalidField("smsSenderId", fmt.Sprintf("smsSenderId %q is not a positive integer", v))
	}
	return n, nil
}

// adminApproveSender answers POST /admin/v1/sms-senders/{id}/approve.
func (s *server) adminApproveSender(w http.ResponseWriter, r *http.Request) error {
	id, err := pathSenderID(r)
	if err != nil {
		return err
	}
	sd, err := s.accounts.ApproveSender(r.Context(), id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, senderJSON{ID: sd.ID, SenderID: sd.SenderID, Approved: sd.Approved})
	return nil
}

// adminApproveCompanySender answers POST
// /admin/v1/companies/{id}/sms-senders/{smsSenderId}/approve.
func (s *server) adminApproveCompanySender(w http.ResponseWriter, r *http.Request) error {
	company, err := pathID(r, "id")
	if err != nil {
		return err
	}
	id, err := pathSenderID(r)
	if err != nil {
		return err
	}
	sd, err := s.accounts.ApproveCompanySender(r.Context(), company, id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, senderJSON{ID: sd.ID, SenderID: sd.SenderID, Approved: sd.Approved})
	return nil
}

// adminChatServiceJSON is a chat service in the admin API: its
// credentials are never shown, only whether it has some.
type adminChatServiceJSON struct {
	ID                int64     `json:"id"`
	BrandName         string    `json:"brandName"`
	ProviderServiceID string    `json:"providerServiceId"`
	Provider          string    `json:"provider"`
	Channel           string    `json:"channel"`
	BaseURL           *string   `json:"baseUrl"`
	CredentialsSet    bool      `json:"credentialsSet"`
	CreatedAt         timestamp `json:"createdAt"`
}

// adminChatServiceOut is cs as the admin API answers it.
func adminChatServiceOut(cs messaging.ChatService) adminChatServiceJSON {
	return adminChatServiceJSON{ID: cs.ID, BrandName: cs.BrandName, ProviderServiceID: cs.ProviderServiceID,
		Provider: cs.ProviderName(), Channel: cs.ChannelName(), BaseURL: strOrNull(cs.BaseURL),
		CredentialsSet: cs.CredentialsSet, CreatedAt: ts(cs.CreatedAt)}
}

// chatServiceBody is the body of the chat service creation and update.
type chatServiceBody struct {
	BrandName         string          `json:"brandName"`
	ProviderServiceID string          `json:"providerServiceId"`
	Provider          string          `json:"provider"`
	Channel           string          `json:"channel"`
	BaseURL           *string         `json:"baseUrl"`
	Credentials       json.RawMessage `json:"credentials"`
}

// input is the body as the accounts service takes it. An absent
// credentials field stays nil (kept on update), null is kept as null
// (removed).
func (b chatServiceBody) input() accounts.ChatServiceInput {
	in := accounts.ChatServiceInput{BrandName: b.BrandName, ProviderServiceID: b.ProviderServiceID,
		Provider: b.Provider, Channel: b.Channel, Credentials: b.Credentials}
	if b.BaseURL != nil {
		in.BaseURL = *b.BaseURL
	}
	return in
}

// pathChatServiceID parses the integer id of a chat service in the path.
func pathChatServiceID(r *http.Request) (int64, error) {
	v, err := pathVar(r, "chatServiceId")
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, invalidField("chatServiceId", fmt.Sprintf("chatServiceId %q is not a positive integer", v))
	}
	return n, nil
}

// adminAddChatService answers POST /admin/v1/companies/{id}/chat-services:
// 201. Credentials are refused with 503 when no secret key is set.
func (s *server) adminAddChatService(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in chatServiceBody
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	cs, err := s.accounts.CreateChatService(r.Context(), id, in.input())
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, adminChatServiceOut(cs))
	return nil
}

// adminGetChatService answers GET
// /admin/v1/companies/{id}/chat-services/{chatServiceId}.
func (s *server) adminGetChatService(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	sid, err := pathChatServiceID(r)
	if err != nil {
		return err
	}
	cs, err := s.accounts.ChatService(r.Context(), id, sid)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, adminChatServiceOut(cs))
	return nil
}

// adminUpdateChatService answers PUT
// /admin/v1/companies/{id}/chat-services/{chatServiceId}: the whole
// service, its credentials kept when the body has none (unless the
// provider or channel changes), removed when they are null.
func (s *server) adminUpdateChatService(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	sid, err := pathChatServiceID(r)
	if err != nil {
		return err
	}
	var in chatServiceBody
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	cs, err := s.accounts.UpdateChatService(r.Context(), id, sid, in.input())
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, adminChatServiceOut(cs))
	return nil
}
