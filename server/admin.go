package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/heraldhq/herald/messaging"
)

// companyJSON answers the company endpoints of the admin API.
type companyJSON struct {
	ID     messaging.ID `json:"id"`
	Name   string       `json:"name"`
	Active bool         `json:"active"`
	// MaxPerSecond is the company's rate: messages handed to a provider a
	// second, every process together; 0: none.
	MaxPerSecond float64 `json:"maxPerSecond"`
}

// companyOut is c as the admin API answers it.
func companyOut(c messaging.Company) companyJSON {
	return companyJSON{ID: c.ID, Name: c.Name, Active: c.Active, MaxPerSecond: c.MaxPerSecond}
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

// adminAPIKey answers POST /admin/v1/companies/{id}/api-keys: 201 with
// the key, shown this once; the previous key stops working.
func (s *server) adminAPIKey(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	key, err := s.accounts.GenerateAPIKey(r.Context(), id)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, http.StatusCreated, struct {
		APIKey string `json:"apiKey"`
	}{key})
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

// adminAddChatService answers POST /admin/v1/companies/{id}/chat-services:
// 201.
func (s *server) adminAddChatService(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in struct {
		BrandName         string `json:"brandName"`
		ProviderServiceID string `json:"providerServiceId"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	cs, err := s.accounts.AddChatService(r.Context(), id, in.BrandName, in.ProviderServiceID)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, struct {
		ID                int64  `json:"id"`
		BrandName         string `json:"brandName"`
		ProviderServiceID string `json:"providerServiceId"`
	}{cs.ID, cs.BrandName, cs.ProviderServiceID})
	return nil
}
