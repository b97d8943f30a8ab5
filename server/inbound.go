package server

import (
	"net/http"

	"github.com/heraldhq/herald/messaging"
)

// inboundJSON is one entry of GET /inbound.
type inboundJSON struct {
	ID          messaging.ID `json:"id"`
	PhoneNumber string       `json:"phoneNumber"`
	To          string       `json:"to"`
	Text        string       `json:"text"`
	Parts       int          `json:"parts"`
	ReceivedAt  timestamp    `json:"receivedAt"`
}

// listInbound answers GET /inbound: the SMS people sent to the company's
// senders, latest first.
func (s *server) listInbound(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	f := messaging.InboundFilter{Phone: q.phone("phoneNumber"), PageRequest: q.page()}
	if err := q.err(); err != nil {
		return err
	}
	ms, total, err := s.inbound.List(r.Context(), companyOf(r), f)
	if err != nil {
		return err
	}
	out := make([]inboundJSON, len(ms))
	for i, m := range ms {
		out[i] = inboundJSON{ID: m.ID, PhoneNumber: m.Phone, To: m.To, Text: m.Text, Parts: m.Parts, ReceivedAt: ts(m.ReceivedAt)}
	}
	s.writeJSON(w, http.StatusOK, struct {
		Messages []inboundJSON `json:"messages"`
		pageJSON
	}{out, pageOut(f.PageRequest, total)})
	return nil
}
