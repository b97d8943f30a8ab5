package smpp

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

// maxPDULen bounds command_length: a PDU declaring more is refused before
// anything is allocated for it, so a hostile or corrupt length cannot make
// the reader allocate more than this per PDU. SMPP 3.4 PDUs are far
// shorter (a submit_sm with a full message_payload stays under 64 KiB).
const maxPDULen = data.MAX_PDU_LEN

// errFraming means the stream cannot be read further: the connection must
// be closed.
var errFraming = errors.New("invalid command_length")

// frame is one PDU read from the wire: its header, its body, and, for the
// commands the client decodes with gosmpp, the decoded PDU.
type frame struct {
	h    pdu.Header
	body []byte
}

// readFrame reads the next PDU's header and body.
func readFrame(r *bufio.Reader) (frame, error) {
	var hb [headerLen]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return frame{}, err
	}
	h := pdu.ParseHeader(hb)
	if h.CommandLength < headerLen || h.CommandLength > maxPDULen {
		return frame{h: h}, fmt.Errorf("%w: %d", errFraming, h.CommandLength)
	}
	buf := make([]byte, h.CommandLength)
	copy(buf, hb[:])
	if _, err := io.ReadFull(r, buf[headerLen:]); err != nil {
		return frame{}, err
	}
	return frame{h: h, body: buf}, nil
}

// decode decodes the frame with gosmpp. The header is part of body, as
// gosmpp's Unmarshal expects.
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
	if err := p.Unmarshal(pdu.NewBuffer(f.body)); err != nil {
		return nil, fmt.Errorf("decode %s: %w", f.h.CommandID, err)
	}
	return p, nil
}

// cString returns the C-octet string at the start of the frame's body (a
// submit_sm_resp's message_id). A missing body, as SMSCs send with an error
// status, gives "".
func (f frame) cString() string {
	b := f.body[headerLen:]
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// encode marshals p into a new frame.
func encode(p pdu.PDU) []byte {
	b := pdu.NewBuffer(make([]byte, 0, 256))
	p.Marshal(b)
	return b.Bytes()
}

// headerOnly encodes a PDU without a body: enquire_link and its response,
// unbind, generic_nack.
func headerOnly(id data.CommandIDType, status data.CommandStatusType, seq uint32) []byte {
	b := make([]byte, headerLen)
	binary.BigEndian.PutUint32(b[0:], headerLen)
	binary.BigEndian.PutUint32(b[4:], uint32(id))
	binary.BigEndian.PutUint32(b[8:], uint32(status))
	binary.BigEndian.PutUint32(b[12:], seq)
	return b
}

// withCString encodes a response whose body is one C-octet string
// (deliver_sm_resp's empty message_id).
func withCString(id data.CommandIDType, status data.CommandStatusType, seq uint32, s string) []byte {
	n := headerLen + len(s) + 1
	b := make([]byte, n)
	binary.BigEndian.PutUint32(b[0:], uint32(n))
	binary.BigEndian.PutUint32(b[4:], uint32(id))
	binary.BigEndian.PutUint32(b[8:], uint32(status))
	binary.BigEndian.PutUint32(b[12:], seq)
	copy(b[headerLen:], s)
	return b
}
