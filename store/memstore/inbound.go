package memstore

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/webhook"
)

// inboundKey names the parts of one inbound message.
type inboundKey struct {
	phone, dest string
	ref, count  int
}

// inboundState holds the parts of the messages of several parts received
// in the last day (waiting for the others, or assembled) and the messages
// stored, in the order stored.
type inboundState struct {
	parts    map[inboundKey]map[int]delivery.InboundPart
	messages []messaging.InboundMessage
}

// RecordInboundPart implements inbound.Store.
func (s *Store) RecordInboundPart(ctx context.Context, p delivery.InboundPart, id messaging.ID) (*messaging.InboundMessage, error) {
	if err := s.lock(ctx, "record an inbound part"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	text, parts := p.Text, 1
	if p.Count > 1 {
		if s.inbound.parts == nil {
			s.inbound.parts = map[inboundKey]map[int]delivery.InboundPart{}
		}
		for k, ps := range s.inbound.parts {
			for seq, q := range ps {
				if q.At.Before(p.At.Add(-24 * time.Hour)) {
					delete(ps, seq)
				}
			}
			if len(ps) == 0 {
				delete(s.inbound.parts, k)
			}
		}
		k := inboundKey{p.From, p.To, p.Ref, p.Count}
		ps := s.inbound.parts[k]
		if len(ps) >= p.Count {
			// Assembled already: the same part again is the SMSC
			// resending it; another text, a new message reusing the
			// reference.
			if q, ok := ps[p.Seq]; ok && q.Text == p.Text {
				return nil, nil
			}
			ps = nil
		}
		if ps == nil {
			ps = map[int]delivery.InboundPart{}
			s.inbound.parts[k] = ps
		}
		if _, ok := ps[p.Seq]; ok {
			return nil, nil
		}
		ps[p.Seq] = p
		if len(ps) < p.Count {
			return nil, nil
		}
		var b strings.Builder
		for seq := 1; seq <= p.Count; seq++ {
			b.WriteString(ps[seq].Text)
		}
		// The parts stay, so that one sent again is recognised, until
		// they are a day old.
		text, parts = b.String(), p.Count
	}
	m := messaging.InboundMessage{ID: id, Phone: p.From, To: p.To, Text: text, Parts: parts, ReceivedAt: p.At}
	var best int64
	for sid, sd := range s.senders {
		if sd.Approved && sd.SenderID == p.To && (m.CompanyID.IsZero() || sid < best) {
			m.CompanyID, best = sd.CompanyID, sid
		}
	}
	s.inbound.messages = append(s.inbound.messages, m)
	if !m.CompanyID.IsZero() {
		s.applyKeyword(&m)
		if eps := s.subscribers(m.CompanyID, webhook.MessageInbound); len(eps) > 0 {
			s.emit(webhook.InboundEvent(s.outbox.ids.New(), &m, time.Now()), eps)
		}
	}
	return &m, nil
}

// ListInbound implements inbound.Store.
func (s *Store) ListInbound(ctx context.Context, companyID messaging.ID, f messaging.InboundFilter) ([]messaging.InboundMessage, int, error) {
	if err := s.lock(ctx, "list inbound messages"); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var all []messaging.InboundMessage
	for i := len(s.inbound.messages) - 1; i >= 0; i-- {
		m := s.inbound.messages[i]
		if m.CompanyID == companyID && (f.Phone == "" || m.Phone == f.Phone) {
			all = append(all, m)
		}
	}
	slices.SortStableFunc(all, func(a, b messaging.InboundMessage) int { return bytes.Compare(b.ID[:], a.ID[:]) })
	from := min(f.Offset(), len(all))
	return all[from:min(from+f.PageSize, len(all))], len(all), nil
}

// applyKeyword opts the sender of m out, or back in, when its text is a
// keyword (optout.Classify), with the message.
func (s *Store) applyKeyword(m *messaging.InboundMessage) {
	k := optOutKey{m.CompanyID, m.Phone, optout.All}
	switch optout.Classify(m.Text, s.keywordsOf(m.CompanyID)) {
	case optout.OptOutAction:
		if _, ok := s.optOuts[k]; !ok {
			if s.optOuts == nil {
				s.optOuts = map[optOutKey]optout.OptOut{}
			}
			s.optOuts[k] = optout.OptOut{CompanyID: m.CompanyID, Phone: m.Phone, Scope: optout.All, Source: optout.FromKeyword, CreatedAt: m.ReceivedAt}
			s.emitOptOut(m.CompanyID, m.Phone, optout.All, optout.FromKeyword, true, m.ReceivedAt)
			s.failPendingOf(m.CompanyID, m.Phone, optout.All, m.ReceivedAt)
		}
	case optout.OptInAction:
		if _, ok := s.optOuts[k]; ok {
			delete(s.optOuts, k)
			s.emitOptOut(m.CompanyID, m.Phone, optout.All, optout.FromKeyword, false, m.ReceivedAt)
		}
	}
}
