package smppwire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
)

// HeaderLen is the length of a PDU header: command_length, command_id,
// command_status and sequence_number, four octets each.
const HeaderLen = 16

// MaxPDULen bounds command_length: a PDU declaring more is refused before
// anything is allocated for its body, so a hostile or corrupt length
// cannot make a reader allocate more than this per PDU. SMPP 3.4 PDUs are
// far shorter (a submit_sm with a full message_payload stays under
// 64 KiB).
const MaxPDULen = data.MAX_PDU_LEN

// ErrFraming means a command_length outside HeaderLen..MaxPDULen: the
// stream cannot be read further and the connection must be closed.
var ErrFraming = errors.New("invalid command_length")

// Frame is one PDU as read from the wire: its parsed header and the whole
// PDU, header included, as gosmpp's decoders read it.
type Frame struct {
	Header pdu.Header
	Raw    []byte
}

// ReadFrame reads the next PDU from r. A command_length out of bounds is
// ErrFraming, returned with the header (and nothing more) read. As with
// io.ReadFull, a stream that ends between PDUs gives io.EOF and one that
// ends inside a PDU io.ErrUnexpectedEOF.
func ReadFrame(r *bufio.Reader) (Frame, error) {
	var hb [HeaderLen]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return Frame{}, err
	}
	h := pdu.ParseHeader(hb)
	if h.CommandLength < HeaderLen || h.CommandLength > MaxPDULen {
		return Frame{Header: h}, fmt.Errorf("%w: %d", ErrFraming, h.CommandLength)
	}
	raw := make([]byte, h.CommandLength)
	copy(raw, hb[:])
	if _, err := io.ReadFull(r, raw[HeaderLen:]); err != nil {
		return Frame{}, err
	}
	return Frame{Header: h, Raw: raw}, nil
}

// Seq is the frame's sequence_number.
func (f Frame) Seq() uint32 { return uint32(f.Header.SequenceNumber) }

// Decode decodes the frame with gosmpp. A command gosmpp does not know, a
// body it cannot read, or one that makes it panic is an error.
func (f Frame) Decode() (p pdu.PDU, err error) {
	// gosmpp's decoders assume well-formed input in places (a query_sm
	// with optional parameters writes to a nil map): a PDU they cannot
	// read is an error, never a crash of the connection.
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("decode %s: %v", f.Header.CommandID, r)
		}
	}()
	p, err = pdu.CreatePDUFromCmdID(f.Header.CommandID)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", f.Header.CommandID, err)
	}
	if err := p.Unmarshal(pdu.NewBuffer(f.Raw)); err != nil {
		return nil, fmt.Errorf("decode %s: %w", f.Header.CommandID, err)
	}
	return p, nil
}

// CString returns the C-octet string at the start of the frame's body (a
// submit_sm_resp's message_id). A missing body, as SMSCs send with an
// error status, gives "". f must be a frame ReadFrame returned without
// error.
func (f Frame) CString() string {
	b := f.Raw[HeaderLen:]
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Encode marshals p into a new frame.
func Encode(p pdu.PDU) []byte {
	b := pdu.NewBuffer(make([]byte, 0, 256))
	p.Marshal(b)
	return b.Bytes()
}

// HeaderOnly encodes a PDU without a body: enquire_link and its response,
// unbind and its response, generic_nack, and every response with an error
// status, as SMPP 3.4 has them.
func HeaderOnly(id data.CommandIDType, status data.CommandStatusType, seq uint32) []byte {
	b := make([]byte, HeaderLen)
	putHeader(b, id, status, seq)
	return b
}

// WithCString encodes a response whose body is one C-octet string: a
// submit_sm_resp's message_id, a bind response's system_id, a
// deliver_sm_resp's empty message_id.
func WithCString(id data.CommandIDType, status data.CommandStatusType, seq uint32, s string) []byte {
	b := make([]byte, HeaderLen+len(s)+1)
	putHeader(b, id, status, seq)
	copy(b[HeaderLen:], s)
	return b
}

// putHeader writes a header declaring len(b) octets at the start of b.
func putHeader(b []byte, id data.CommandIDType, status data.CommandStatusType, seq uint32) {
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)))
	binary.BigEndian.PutUint32(b[4:], uint32(id))
	binary.BigEndian.PutUint32(b[8:], uint32(status))
	binary.BigEndian.PutUint32(b[12:], seq)
}
