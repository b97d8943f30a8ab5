package smscsim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
)

const headerLen = 16

// maxPDULen bounds command_length: a PDU declaring more is refused after
// its header, before anything is allocated for its body.
const maxPDULen = data.MAX_PDU_LEN

var errFraming = errors.New("invalid command_length")

// frame is one PDU as read: the header, and the whole PDU (header
// included) for gosmpp's decoders.
type frame struct {
	h   pdu.Header
	raw []byte
}

func readFrame(r *bufio.Reader) (frame, error) {
	var hb [headerLen]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return frame{}, err
	}
	h := pdu.ParseHeader(hb)
	if h.CommandLength < headerLen || h.CommandLength > maxPDULen {
		return frame{h: h}, fmt.Errorf("%w: %d", errFraming, h.CommandLength)
	}
	raw := make([]byte, h.CommandLength)
	copy(raw, hb[:])
	if _, err := io.ReadFull(r, raw[headerLen:]); err != nil {
		return frame{}, err
	}
	return frame{h: h, raw: raw}, nil
}

func (f frame) decode() (p pdu.PDU, err error) {
	// gosmpp's decoders assume well-formed input in places (a query_sm
	// with optional parameters writes to a nil map): a PDU they cannot
	// read is an error, never a crash of the session.
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("decode %s: %v", f.h.CommandID, r)
		}
	}()
	p, err = pdu.CreatePDUFromCmdID(f.h.CommandID)
	if err != nil {
		return nil, err
	}
	if err := p.Unmarshal(pdu.NewBuffer(f.raw)); err != nil {
		return nil, fmt.Errorf("decode %s: %w", f.h.CommandID, err)
	}
	return p, nil
}

func (f frame) seq() uint32 { return uint32(f.h.SequenceNumber) }

// headerOnly encodes a PDU without a body (and every response with an
// error status, as SMPP 3.4 has them).
func headerOnly(id data.CommandIDType, status data.CommandStatusType, seq uint32) []byte {
	b := make([]byte, headerLen)
	putHeader(b, len(b), id, status, seq)
	return b
}

// withCString encodes a response whose body is one C-octet string.
func withCString(id data.CommandIDType, status data.CommandStatusType, seq uint32, s string) []byte {
	b := make([]byte, headerLen+len(s)+1)
	putHeader(b, len(b), id, status, seq)
	copy(b[headerLen:], s)
	return b
}

func putHeader(b []byte, n int, id data.CommandIDType, status data.CommandStatusType, seq uint32) {
	binary.BigEndian.PutUint32(b[0:], uint32(n))
	binary.BigEndian.PutUint32(b[4:], uint32(id))
	binary.BigEndian.PutUint32(b[8:], uint32(status))
	binary.BigEndian.PutUint32(b[12:], seq)
}

func encode(p pdu.PDU) []byte {
	b := pdu.NewBuffer(make([]byte, 0, 256))
	p.Marshal(b)
	return b.Bytes()
}
