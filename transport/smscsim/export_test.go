package smscsim

import (
	"errors"
	"time"

	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/linxGnu/gosmpp/pdu"
)

// Hooks for the external test package's tests and fuzz targets.

// AcceptSubmit does what a connection does with a decoded submit_sm that
// it accepts with message id id: it describes the part and builds its
// receipt, returned as a deliver_sm (nil when none was asked for).
func AcceptSubmit(f smppwire.Frame, id string, now time.Time, tlvs bool) (Part, []byte, error) {
	p, err := f.Decode()
	if err != nil {
		return Part{}, nil, err
	}
	sm, ok := p.(*pdu.SubmitSM)
	if !ok {
		return Part{}, nil, errors.New("not a submit_sm")
	}
	part := partOf(sm, f.Seq(), "herald", id, 0)
	r := newReceipt(sm, id, "herald", now)
	if r == nil {
		return part, nil, nil
	}
	return part, r.frame(7, tlvs), nil
}

// Reassemble runs parts through the recorder and returns the texts it
// completed.
func Reassemble(parts []Part) []Message {
	var r recorder
	for _, p := range parts {
		r.add(p)
	}
	return r.messages
}
