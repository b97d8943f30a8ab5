package smpp

import (
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/linxGnu/gosmpp/pdu"
)

// Hooks for the external test package's tests and fuzz targets.

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
		if out[i], err = submitFrame(uint32(i+1), sms.From, sms.To, p.enc, pt, "", Config{}.addressing()); err != nil {
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
