package server

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
)

// optOutJSON is an opt-out as the API shows it.
type optOutJSON struct {
	PhoneNumber string    `json:"phoneNumber"`
	Channel     string    `json:"channel"`
	Source      string    `json:"source"`
	CreatedAt   timestamp `json:"createdAt"`
}

func optOutOut(o optout.OptOut) optOutJSON {
	return optOutJSON{PhoneNumber: o.Phone, Channel: string(o.Scope), Source: string(o.Source), CreatedAt: ts(o.CreatedAt)}
}

// listOptOuts answers GET /opt-outs: the company's opt-outs, latest first.
func (s *server) listOptOuts(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	f := optout.Filter{Phone: q.str("phoneNumber"), PageRequest: q.page()}
	if err := q.err(); err != nil {
		return err
	}
	os, total, err := s.optOuts.List(r.Context(), companyOf(r), f)
	if err != nil {
		return err
	}
	out := make([]optOutJSON, len(os))
	for i, o := range os {
		out[i] = optOutOut(o)
	}
	s.writeJSON(w, http.StatusOK, struct {
		OptOuts []optOutJSON `json:"optOuts"`
		pageJSON
	}{out, pageOut(f.PageRequest, total)})
	return nil
}

// addOptOut answers POST /opt-outs: 201 with the opt-out, 200 when the
// number was opted out of that channel already.
func (s *server) addOptOut(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		PhoneNumber string `json:"phoneNumber"`
		Channel     string `json:"channel"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	o, added, err := s.optOuts.Add(r.Context(), companyOf(r), in.PhoneNumber, in.Channel)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if added {
		status = http.StatusCreated
	}
	s.writeJSON(w, status, optOutOut(o))
	return nil
}

// removeOptOut answers DELETE /opt-outs/{phoneNumber}?channel=: 204.
func (s *server) removeOptOut(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	channel := q.str("channel")
	if err := q.err(); err != nil {
		return err
	}
	if err := s.optOuts.Remove(r.Context(), companyOf(r), mux.Vars(r)["phoneNumber"], channel); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// keywordsJSON is a company's opt-out keywords as the API shows them.
type keywordsJSON struct {
	OptOut []string `json:"optOut"`
	OptIn  []string `json:"optIn"`
}

// getKeywords answers GET /opt-outs/keywords.
func (s *server) getKeywords(w http.ResponseWriter, r *http.Request) error {
	k, err := s.optOuts.Keywords(r.Context(), companyOf(r))
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, keywordsJSON{OptOut: k.Out, OptIn: k.In})
	return nil
}

// setKeywords answers PUT /opt-outs/keywords: the keywords as stored.
func (s *server) setKeywords(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		OptOut *[]string `json:"optOut"`
		OptIn  *[]string `json:"optIn"`
	}
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	var fe messaging.FieldErrors
	if in.OptOut == nil {
		fe.Add("optOut", "optOut is required (an empty list turns opting out by SMS off)")
	}
	if in.OptIn == nil {
		fe.Add("optIn", "optIn is required (an empty list turns opting back in by SMS off)")
	}
	if err := fe.Err(); err != nil {
		return err
	}
	k, err := s.optOuts.SetKeywords(r.Context(), companyOf(r), optout.Keywords{Out: *in.OptOut, In: *in.OptIn})
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, keywordsJSON{OptOut: k.Out, OptIn: k.In})
	return nil
}
