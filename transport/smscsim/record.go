package smscsim

import (
	"sync"

	"github.com/heraldhq/herald/template"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
)

// Part is one submit_sm the Server received.
type Part struct {
	Seq                uint32 // sequence_number
	SystemID           string // of the session
	From               string
	FromTON, FromNPI   byte
	To                 string
	ToTON, ToNPI       byte
	EsmClass           byte
	DataCoding         byte
	RegisteredDelivery byte
	ValidityPeriod     string // as sent; "" for the SMSC's default
	// Concatenated tells whether the part carried a concatenation header
	// (8-bit reference); Ref, Total and Index are its fields.
	Concatenated bool
	Ref          byte
	Total        byte
	Index        byte
	Data         []byte // the user data without its header
	Text         string // Data decoded on its own (GSM-7 or UCS-2)
	MessageID    string // "" when refused
	Status       uint32 // the command_status answered
}

// Message is a text the Server received: a single part, or the parts of a
// concatenated message joined once they all arrived.
type Message struct {
	From         string
	To           string
	DataCoding   byte
	Text         string // decoded from the joined user data
	Concatenated bool
	Parts        []Part // in part order
}

// partOf describes a received submit_sm.
func partOf(sm *pdu.SubmitSM, seq uint32, systemID, id string, status uint32) Part {
	raw, _ := sm.Message.GetMessageData()
	p := Part{
		Seq:                seq,
		SystemID:           systemID,
		From:               sm.SourceAddr.Address(),
		FromTON:            sm.SourceAddr.Ton(),
		FromNPI:            sm.SourceAddr.Npi(),
		To:                 sm.DestAddr.Address(),
		ToTON:              sm.DestAddr.Ton(),
		ToNPI:              sm.DestAddr.Npi(),
		EsmClass:           sm.EsmClass,
		RegisteredDelivery: sm.RegisteredDelivery,
		ValidityPeriod:     sm.ValidityPeriod,
		Data:               raw,
		MessageID:          id,
		Status:             status,
	}
	if enc := sm.Message.Encoding(); enc != nil {
		p.DataCoding = enc.DataCoding()
	}
	if total, index, ref, ok := sm.Message.UDH().GetConcatInfo(); ok {
		p.Concatenated, p.Ref, p.Total, p.Index = true, ref, total, index
	}
	p.Text = decodeText(p.DataCoding, raw)
	return p
}

// decodeText decodes user data: GSM-7 unpacked for data_coding 0, UTF-16BE
// for 8, bytes as Latin-1 otherwise. Undecodable GSM-7 gives "".
func decodeText(dc byte, b []byte) string {
	switch dc {
	case data.GSM7BITCoding:
		s, _ := template.DecodeGSM7(b)
		return s
	case data.UCS2Coding:
		s, _ := template.DecodeUCS2(b)
		return s
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// recorder keeps received parts and reassembles concatenated texts.
type recorder struct {
	mu       sync.Mutex
	parts    []Part
	messages []Message
	partial  map[concatKey][]Part
}

type concatKey struct {
	systemID, from, to string
	ref, total         byte
}

func (r *recorder) add(p Part) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parts = append(r.parts, p)
	if p.MessageID == "" {
		return
	}
	if !p.Concatenated || p.Total <= 1 {
		r.messages = append(r.messages, Message{From: p.From, To: p.To, DataCoding: p.DataCoding, Text: p.Text, Parts: []Part{p}})
		return
	}
	if p.Index < 1 || p.Index > p.Total {
		return
	}
	if r.partial == nil {
		r.partial = map[concatKey][]Part{}
	}
	k := concatKey{p.SystemID, p.From, p.To, p.Ref, p.Total}
	parts := r.partial[k]
	if parts == nil {
		parts = make([]Part, p.Total)
	}
	parts[p.Index-1] = p
	for _, q := range parts {
		if q.Index == 0 {
			r.partial[k] = parts
			return
		}
	}
	delete(r.partial, k)
	var joined []byte
	for _, q := range parts {
		joined = append(joined, q.Data...)
	}
	r.messages = append(r.messages, Message{
		From: p.From, To: p.To, DataCoding: p.DataCoding,
		Text: decodeText(p.DataCoding, joined), Concatenated: true, Parts: parts,
	})
}

// Parts returns every submit_sm received (Config.Record), in arrival
// order.
func (s *Server) Parts() []Part {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return append([]Part(nil), s.rec.parts...)
}

// Messages returns the texts received (Config.Record), in the order they
// were completed; a concatenated text appears once all its accepted parts
// arrived.
func (s *Server) Messages() []Message {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return append([]Message(nil), s.rec.messages...)
}

// MessagesTo returns the texts received for one destination.
func (s *Server) MessagesTo(to string) []Message {
	var out []Message
	for _, m := range s.Messages() {
		if m.To == to {
			out = append(out, m)
		}
	}
	return out
}
