package smpp

import (
	"bufio"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/linxGnu/gosmpp/pdu"
)

// Hooks into the wire layer for the external test package's fuzz targets.

// MaxPDULen is the longest command_length readFrame accepts.
const MaxPDULen = maxPDULen

// ErrFraming is the error of a command_length readFrame refuses.
var ErrFraming = errFraming

// ReadFrame reads one PDU as the session does: its header and its bytes,
// header included.
func ReadFrame(r *bufio.Reader) (pdu.Header, []byte, error) {
	f, err := readFrame(r)
	return f.h, f.body, err
}

// DecodeFrame decodes the bytes of a PDU ReadFrame returned.
func DecodeFrame(h pdu.Header, b []byte) (pdu.PDU, error) {
	return frame{h: h, body: b}.decode()
}

// FrameCString is the message_id of a submit_sm_resp as the session reads
// it.
func FrameCString(h pdu.Header, b []byte) string {
	return frame{h: h, body: b}.cString()
}

// Encode marshals p as the session does.
func Encode(p pdu.PDU) []byte { return encode(p) }

// SubmitFrames encodes sms as Send does, one submit_sm per part, with
// sequence numbers from 1.
func SubmitFrames(sms delivery.SMS) ([][]byte, error) {
	c := &Client{}
	p, err := c.prepare(sms)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(p.parts))
	for i, pt := range p.parts {
		if out[i], err = submitFrame(uint32(i+1), sms.From, sms.To, p.enc, pt, ""); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReceiptOf reads a deliver_sm receipt as the session does, with ids as
// sent and dates in UTC.
func ReceiptOf(d *pdu.DeliverSM, now time.Time) (delivery.Receipt, error) {
	return receiptOf(d, time.UTC, now, IDAsSent, IDAsSent)
}

// IsReceipt tells whether the session reads a deliver_sm with this
// esm_class as a receipt.
func IsReceipt(esmClass byte) bool { return isReceipt(esmClass) }

// RelativeValidity is the validity_period a Client with ValidityPeriod d
// sends.
func RelativeValidity(d time.Duration) string { return relativeValidity(d) }
