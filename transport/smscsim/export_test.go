package smscsim

import (
	"bufio"
	"errors"
	"time"

	"github.com/linxGnu/gosmpp/pdu"
)

// Hooks into the wire layer for the external test package's fuzz targets.

// MaxPDULen is the longest command_length readFrame accepts.
const MaxPDULen = maxPDULen

// ErrFraming is the error of a command_length readFrame refuses.
var ErrFraming = errFraming

// ReadFrame reads one PDU as a connection does: its header and its bytes,
// header included.
func ReadFrame(r *bufio.Reader) (pdu.Header, []byte, error) {
	f, err := readFrame(r)
	return f.h, f.raw, err
}

// DecodeFrame decodes the bytes of a PDU ReadFrame returned.
func DecodeFrame(h pdu.Header, b []byte) (pdu.PDU, error) {
	return frame{h: h, raw: b}.decode()
}

// AcceptSubmit does what a connection does with a decoded submit_sm that
// it accepts with message id id: it describes the part and builds its
// receipt, returned as a deliver_sm (nil when none was asked for).
func AcceptSubmit(h pdu.Header, b []byte, id string, now time.Time, tlvs bool) (Part, []byte, error) {
	p, err := frame{h: h, raw: b}.decode()
	if err != nil {
		return Part{}, nil, err
	}
	sm, ok := p.(*pdu.SubmitSM)
	if !ok {
		return Part{}, nil, errors.New("not a submit_sm")
	}
	part := partOf(sm, uint32(h.SequenceNumber), "herald", id, 0)
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
