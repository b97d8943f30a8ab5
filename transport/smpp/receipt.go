package smpp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/template"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
)

// NormalizeMessageID returns the canonical form of an SMSC message id, so
// that the id of a submit_sm_resp and the one of its receipt compare equal
// however the SMSC pads or cases them: surrounding white space and NULs
// are trimmed; an id of decimal digits loses its leading zeros ("0" stays);
// an id of hexadecimal digits is lower-cased and loses its leading zeros;
// any other id is kept as it is.
func NormalizeMessageID(id string) string {
	id = strings.Trim(id, " \t\r\n\x00")
	if id == "" {
		return ""
	}
	hex := true
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			hex = false
			break
		}
	}
	if !hex {
		return id
	}
	trimmed := strings.TrimLeft(id, "0")
	if trimmed == "" {
		return "0"
	}
	return strings.ToLower(trimmed)
}

// IDFormat is how an SMSC writes the message ids of one kind of PDU, for
// SMSCs that write them differently in the submit_sm_resp and in the
// receipt text (hexadecimal in one, decimal in the other).
type IDFormat int

const (
	// IDAsSent compares ids as they are written, after NormalizeMessageID.
	IDAsSent IDFormat = iota
	// IDDecimal reads ids as decimal numbers.
	IDDecimal
	// IDHex reads ids as hexadecimal numbers.
	IDHex
)

// ParseIDFormat reads an IDFormat from its name: "as-sent" (or ""),
// "decimal" or "hex".
func ParseIDFormat(s string) (IDFormat, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "as-sent":
		return IDAsSent, nil
	case "decimal", "dec":
		return IDDecimal, nil
	case "hex", "hexadecimal":
		return IDHex, nil
	}
	return 0, fmt.Errorf("smpp: unknown message id format %q (want as-sent, decimal or hex)", s)
}

// Canonical returns id in the form both kinds of PDU are compared in: with
// IDDecimal or IDHex, an id that reads as a number in that base becomes
// that number in decimal; any other id is NormalizeMessageID(id).
func (f IDFormat) Canonical(id string) string {
	id = NormalizeMessageID(id)
	var base int
	switch f {
	case IDDecimal:
		base = 10
	case IDHex:
		base = 16
	default:
		return id
	}
	if n, err := strconv.ParseUint(id, base, 64); err == nil {
		return strconv.FormatUint(n, 10)
	}
	return id
}

// Receipt states, as receipts spell them.
const (
	StateEnroute   = "ENROUTE"
	StateDelivered = "DELIVRD"
	StateExpired   = "EXPIRED"
	StateDeleted   = "DELETED"
	StateUndeliv   = "UNDELIV"
	StateAccepted  = "ACCEPTD"
	StateUnknown   = "UNKNOWN"
	StateRejected  = "REJECTD"
)

// messageStates maps the message_state TLV to the receipt text's stat.
var messageStates = [...]string{
	1: StateEnroute, 2: StateDelivered, 3: StateExpired, 4: StateDeleted,
	5: StateUndeliv, 6: StateAccepted, 7: StateUnknown, 8: StateRejected,
}

// normalizeState returns the seven-letter state for the long spellings
// some SMSCs use.
func normalizeState(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	switch s {
	case "DELIVERED":
		return StateDelivered
	case "UNDELIVERABLE", "UNDELIVERED":
		return StateUndeliv
	case "REJECTED":
		return StateRejected
	case "ACCEPTED":
		return StateAccepted
	case "EN_ROUTE":
		return StateEnroute
	}
	return s
}

// ErrNotReceipt means a text carries no receipt id.
var ErrNotReceipt = errors.New("smpp: not a delivery receipt")

// ParseReceiptText parses the text of a delivery receipt in the usual
// format
//
//	id:IIIIIIIIII sub:SSS dlvrd:DDD submit date:YYMMDDhhmm done date:YYMMDDhhmm stat:DDDDDDD err:E text:...
//
// Keys are matched without regard to case and may come in any order; only
// id is required. ProviderID is normalised with NormalizeMessageID, State
// upper-cased (long spellings such as DELIVERED become DELIVRD), Err is
// "000" when absent, and At is the done date (YYMMDDhhmm or YYMMDDhhmmss in
// loc), zero when absent or unreadable. Everything after "text:" is ignored.
func ParseReceiptText(text string, loc *time.Location) (delivery.Receipt, error) {
	if loc == nil {
		loc = time.UTC
	}
	f := receiptFields(text)
	id := NormalizeMessageID(f.values[keyID])
	if !f.has(keyID) || id == "" {
		return delivery.Receipt{}, ErrNotReceipt
	}
	r := delivery.Receipt{
		ProviderID: id,
		State:      normalizeState(f.values[keyStat]),
		Err:        f.values[keyErr],
	}
	if r.Err == "" {
		r.Err = "000"
	}
	if f.has(keyDoneDate) {
		r.At = parseReceiptDate(f.values[keyDoneDate], loc)
	}
	return r, nil
}

// receiptKey is a key of a receipt text: an index into receiptKeys.
type receiptKey int

// The keys of a receipt text, the two-word ones first so that "submit
// date" is not read as an unknown "submit".
const (
	keySubmitDate receiptKey = iota
	keyDoneDate
	keyID
	keySub
	keyDlvrd
	keyStat
	keyErr
	keyText
	receiptKeyCount
)

// receiptKeys are the spellings of the receiptKey values, lower-case.
var receiptKeys = [receiptKeyCount]string{"submit date", "done date", "id", "sub", "dlvrd", "stat", "err", "text"}

// receiptText holds the values of a receipt text by key; the values are
// substrings of the text, so reading one allocates nothing.
type receiptText struct {
	values [receiptKeyCount]string
	seen   uint16 // bit k: key k was present
}

func (f *receiptText) has(k receiptKey) bool { return f.seen&(1<<k) != 0 }

// receiptFields splits a receipt text into its key:value pairs, keys
// matched without regard to ASCII case; the first of a repeated key
// counts. A value runs to the next white space; text runs to the end.
func receiptFields(s string) receiptText {
	var out receiptText
	i := 0
	for i < len(s) {
		// skip white space between pairs
		if isReceiptSpace(s[i]) {
			i++
			continue
		}
		key := receiptKey(-1)
		for k, name := range receiptKeys {
			if hasPrefixASCIIFold(s[i:], name) {
				rest := strings.TrimLeft(s[i+len(name):], " ")
				if strings.HasPrefix(rest, ":") {
					key = receiptKey(k)
					i = len(s) - len(rest) + 1
					break
				}
			}
		}
		if key < 0 {
			// an unknown token: skip it
			for i < len(s) && s[i] != ' ' {
				i++
			}
			continue
		}
		if key == keyText {
			out.values[key], out.seen = s[i:], out.seen|1<<key
			break
		}
		j := i
		for j < len(s) && !isReceiptSpace(s[j]) {
			j++
		}
		if !out.has(key) {
			out.values[key], out.seen = s[i:j], out.seen|1<<key
		}
		i = j
	}
	return out
}

// isReceiptSpace reports whether c separates the pairs of a receipt text.
func isReceiptSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// hasPrefixASCIIFold reports whether s begins with the lower-case ASCII
// prefix, ASCII letters of s compared without regard to case (and no other
// folding: bytes outside A-Z must equal the prefix's).
func hasPrefixASCIIFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// parseReceiptDate reads YYMMDDhhmm or YYMMDDhhmmss; the zero time when it
// cannot.
func parseReceiptDate(s string, loc *time.Location) time.Time {
	layout := ""
	switch len(s) {
	case 10:
		layout = "0601021504"
	case 12:
		layout = "060102150405"
	default:
		return time.Time{}
	}
	t, err := time.ParseInLocation(layout, s, loc)
	if err != nil {
		return time.Time{}
	}
	return t
}

// isReceipt reports whether an esm_class marks a deliver_sm as a delivery
// receipt or an intermediate delivery notification.
func isReceipt(esmClass byte) bool {
	switch esmClass & 0x3C {
	case data.SM_SMSC_DLV_RCPT_TYPE, 0x20:
		return true
	}
	return false
}

// deliverText returns the user data of a deliver_sm: message_payload when
// present, else short_message, decoded as UCS-2 for data_coding 8 and read
// byte for byte otherwise (receipt texts are ASCII).
func deliverText(d *pdu.DeliverSM) string {
	raw, _ := d.Message.GetMessageData()
	if f, ok := d.OptionalParameters[pdu.TagMessagePayload]; ok && len(f.Data) > 0 {
		raw = f.Data
	}
	if enc := d.Message.Encoding(); enc != nil && enc.DataCoding() == data.UCS2Coding {
		if s, err := template.DecodeUCS2(raw); err == nil {
			return s
		}
	}
	return string(raw)
}

// receiptOf builds the Receipt of a deliver_sm receipt: the
// receipted_message_id and message_state TLVs win over the text.
//
// The text's id is read in textIDs; the receipted_message_id TLV, which
// repeats the submit_sm_resp's id, in submitIDs.
func receiptOf(d *pdu.DeliverSM, loc *time.Location, now time.Time, submitIDs, textIDs IDFormat) (delivery.Receipt, error) {
	text := deliverText(d)
	r, textErr := ParseReceiptText(text, loc)
	r.ProviderID = textIDs.Canonical(r.ProviderID)
	if f, ok := d.OptionalParameters[pdu.TagReceiptedMessageID]; ok {
		if id := submitIDs.Canonical(f.String()); id != "" {
			r.ProviderID = id
		}
	}
	// network_error_code: a network type octet, then the network's error
	// code; it stands for err when the text has none.
	if f, ok := d.OptionalParameters[pdu.TagNetworkErrorCode]; ok && len(f.Data) == 3 && (r.Err == "" || r.Err == "000") {
		if code := int(f.Data[1])<<8 | int(f.Data[2]); code != 0 {
			r.Err = fmt.Sprintf("%03d", code)
		}
	}
	if f, ok := d.OptionalParameters[pdu.TagMessageStateOption]; ok && len(f.Data) == 1 {
		if st := int(f.Data[0]); st < len(messageStates) && messageStates[st] != "" {
			r.State = messageStates[st]
		}
	}
	if r.ProviderID == "" {
		if textErr == nil {
			textErr = ErrNotReceipt
		}
		return delivery.Receipt{}, fmt.Errorf("receipt without a message id (%q): %w", text, textErr)
	}
	if r.Err == "" {
		r.Err = "000"
	}
	if r.State == "" {
		r.State = StateUnknown
	}
	if r.At.IsZero() {
		r.At = now
	}
	return r, nil
}
