package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// Sending requests carry up to 200,000 recipients. They are read with a
// streaming tokenizer (jsontext) rather than encoding/json's reflection:
// each recipient is read token by token, straight into a
// campaign.Recipient, and the rest of the body is never held whole. The
// strings of the recipients are not allocated one by one either (see
// texts).

// sendFields are the fields of a sending request beside recipients: each
// key names the pointer its value is decoded into (with encoding/json).
type sendFields map[string]any

// decodeSend reads a sending request as a stream: it walks the top-level
// object, decodes the fields named in fields normally and the recipients
// array element by element, refusing the request with "Too many
// recipients" as soon as the element past the limit appears, without
// reading the rest. direct refuses per-recipient placeholders (direct
// sends take none). Invalid UTF-8 is malformed JSON.
func (s *server) decodeSend(w http.ResponseWriter, r *http.Request, fields sendFields, direct bool) ([]campaign.Recipient, error) {
	return decodeSendBody(s.body(w, r), r.ContentLength, s.campaigns.Limits().MaxRecipients, fields, direct)
}

// decodeSendBody is decodeSend on a body: contentLength is the body's
// announced length (-1: unknown), only used to size the recipients array,
// limit the most recipients allowed. Names of the top-level object match
// as encoding/json matches them: exactly, else without regard to case.
func decodeSendBody(body io.Reader, contentLength int64, limit int, fields sendFields, direct bool) ([]campaign.Recipient, error) {
	// Duplicate names are let through to the checks below: a repeated
	// recipients array is refused by name, other repeats take the last.
	dec := jsontext.NewDecoder(body, jsontext.AllowDuplicateNames(true))
	tok, err := dec.ReadToken()
	if errors.Is(err, io.EOF) {
		return nil, errNoBody()
	}
	if err != nil {
		return nil, decodeError(err, "")
	}
	if tok.Kind() != '{' {
		return nil, badRequest("The request body must be a JSON object")
	}
	var (
		recipients []campaign.Recipient
		seen       bool
	)
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, decodeError(err, "")
		}
		key := tok.String()
		if key == "recipients" || strings.EqualFold(key, "recipients") {
			if seen {
				return nil, invalidField("recipients", "recipients is given more than once")
			}
			seen = true
			if recipients, err = decodeRecipients(dec, direct, contentLength, limit); err != nil {
				return nil, err
			}
			continue
		}
		target, ok := fields.lookup(key)
		if !ok {
			if err := dec.SkipValue(); err != nil {
				return nil, decodeError(err, key)
			}
			continue
		}
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, decodeError(err, key)
		}
		if err := json.Unmarshal(raw, target); err != nil {
			return nil, decodeError(err, key)
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the closing brace
		return nil, decodeError(err, "")
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return nil, decodeError(err, "")
		}
		return nil, badRequest("Malformed JSON: unexpected data after the JSON object")
	}
	if len(recipients) == 0 {
		return nil, invalidField("recipients", "recipients must hold at least one recipient")
	}
	return recipients, nil
}

// lookup returns the target of the field named key: exactly, else
// without regard to case.
func (f sendFields) lookup(key string) (any, bool) {
	if t, ok := f[key]; ok {
		return t, true
	}
	for name, t := range f {
		if strings.EqualFold(name, key) {
			return t, true
		}
	}
	return nil, false
}

// decodeRecipients reads the recipients array at the decoder's position;
// limit is the most recipients allowed.
func decodeRecipients(dec *jsontext.Decoder, direct bool, contentLength int64, limit int) ([]campaign.Recipient, error) {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		return nil, readError(err, "recipients")
	case '[':
	case jsontext.KindInvalid:
		return nil, peekError(dec, "recipients")
	default:
		return nil, notA(dec, "recipients", "recipients must be an array")
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, decodeError(err, "recipients")
	}
	out := make([]campaign.Recipient, 0, recipientsCap(contentLength, limit))
	t := texts{names: make(map[string]string)}
	for i := 0; ; i++ {
		switch dec.PeekKind() {
		case ']':
			if _, err := dec.ReadToken(); err != nil {
				return nil, decodeError(err, "recipients")
			}
			t.flush(out)
			return out, nil
		case jsontext.KindInvalid:
			return nil, peekError(dec, "recipients")
		}
		if i == limit {
			return nil, messaging.Errorf(messaging.Invalid, messaging.NameTooManyRecipients,
				"A request may carry at most %d recipients", limit)
		}
		out = append(out, campaign.Recipient{})
		if err := t.readRecipient(dec, out, i, direct); err != nil {
			return nil, err
		}
		if len(t.text) >= textBatch {
			t.flush(out)
		}
	}
}

// recipientPath is the JSON path of recipients[i], for errors.
func recipientPath(i int) string { return "recipients[" + strconv.Itoa(i) + "]" }

// readRecipient reads recipients[i] into out[i]. Names match as
// encoding/json matches them: exactly, else without regard to case;
// unknown ones are skipped. As with encoding/json, a null value leaves a
// field as it was, and of a name given twice the last value counts
// (placeholders: null drops the object).
func (t *texts) readRecipient(dec *jsontext.Decoder, out []campaign.Recipient, i int, direct bool) error {
	switch dec.PeekKind() {
	case '{':
	case 'n':
		_, err := dec.ReadToken()
		return readError(err, recipientPath(i))
	case jsontext.KindInvalid:
		return peekError(dec, recipientPath(i))
	default:
		return notA(dec, recipientPath(i), recipientPath(i)+" must be an object")
	}
	if _, err := dec.ReadToken(); err != nil {
		return decodeError(err, recipientPath(i))
	}
	for dec.PeekKind() != '}' {
		name, err := t.readName(dec)
		if err != nil {
			return decodeError(err, recipientPath(i))
		}
		switch {
		case string(name) == "phoneNumber" || bytes.EqualFold(name, []byte("phoneNumber")):
			err = t.readString(dec, pendingText{i: i, field: phoneField}, i, ".phoneNumber")
		case string(name) == "externalUserId" || bytes.EqualFold(name, []byte("externalUserId")):
			err = t.readString(dec, pendingText{i: i, field: externalIDField}, i, ".externalUserId")
		case string(name) == "placeholders" || bytes.EqualFold(name, []byte("placeholders")):
			k := dec.PeekKind()
			if k == jsontext.KindInvalid {
				return peekError(dec, recipientPath(i)+".placeholders")
			}
			if direct && k != 'n' {
				f := recipientPath(i) + ".placeholders"
				return invalidField(f, f+": direct sends take no placeholders")
			}
			// A second placeholders object replaces the first: the values
			// of the first, still pending, are dropped.
			t.dropPlaceholders(out, i)
			if _, err = t.readPlaceholders(dec, i); err != nil {
				return decodeError(err, recipientPath(i)+".placeholders")
			}
		default:
			if err := dec.SkipValue(); err != nil {
				return decodeError(err, recipientPath(i))
			}
		}
		if err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil { // }
		return decodeError(err, recipientPath(i))
	}
	return nil
}

// readString reads a string value bound for to, a field of recipients[i];
// null leaves the field as it is. Anything else is an error on the
// field recipientPath(i)+name.
func (t *texts) readString(dec *jsontext.Decoder, to pendingText, i int, name string) error {
	switch dec.PeekKind() {
	case '"':
		raw, err := dec.ReadValue()
		if err == nil {
			err = t.add(raw, to)
		}
		if err != nil {
			return decodeError(err, recipientPath(i)+name)
		}
		return nil
	case 'n':
		_, err := dec.ReadToken()
		return readError(err, recipientPath(i)+name)
	case jsontext.KindInvalid:
		return peekError(dec, recipientPath(i)+name)
	}
	field := recipientPath(i) + name
	return notA(dec, field, field+" must be a string")
}

// dropPlaceholders forgets the placeholder values of recipient i read so
// far: those pending, which are the last of t.pending (the recipient
// being read), and those flushed (none: flushes come between recipients).
func (t *texts) dropPlaceholders(out []campaign.Recipient, i int) {
	for j := len(t.pending) - 1; j >= 0 && t.pending[j].i == i; j-- {
		if t.pending[j].ph {
			t.pending[j].dead = true
		}
	}
	out[i].Placeholders = nil
}

// readPlaceholders reads a placeholders object: strings, numbers (as
// written) and booleans; null values are left out, and of a name given
// twice the last value counts (null too); nil for null. Its values are
// set on the next flush: into the map it returns when recipient is
// negative (the request's values), else into the Placeholders of
// recipients[recipient] (and the map is nil). An error is of jsontext, or
// a *fieldError whose field is relative to the object.
func (t *texts) readPlaceholders(dec *jsontext.Decoder, recipient int) (map[string]string, error) {
	switch dec.PeekKind() {
	case '{':
	case 'n', jsontext.KindInvalid: // null; or the error the token holds
		_, err := dec.ReadToken()
		return nil, err
	default:
		if err := dec.SkipValue(); err != nil {
			return nil, err
		}
		return nil, &fieldError{msg: "placeholders must be an object of names to values"}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	var m map[string]string
	to := pendingText{i: recipient, ph: true}
	if recipient < 0 {
		m = make(map[string]string, 1)
		to = pendingText{m: m}
	}
	for dec.PeekKind() != '}' {
		name, err := t.readName(dec)
		if err != nil {
			return nil, err
		}
		k := t.intern(name)
		switch dec.PeekKind() {
		case '"', 't', 'f', '0': // a number as written
			raw, err := dec.ReadValue()
			if err == nil {
				to.name = k
				err = t.add(raw, to)
			}
			if err != nil {
				return nil, err
			}
		case 'n': // no value, also in place of an earlier one
			if _, err := dec.ReadToken(); err != nil {
				return nil, err
			}
			to.name, to.start = k, -1
			t.pending = append(t.pending, to)
			to.start = 0
		case jsontext.KindInvalid:
			_, err := dec.ReadToken()
			return nil, err
		default:
			if err := dec.SkipValue(); err != nil {
				return nil, err
			}
			return nil, &fieldError{field: k, msg: "placeholder " + k + " must be a string, a number or a boolean"}
		}
	}
	if _, err := dec.ReadToken(); err != nil { // }
		return nil, err
	}
	return m, nil
}

// textBatch is about how many bytes of text texts gathers before it
// makes them a string: a few hundred recipients' worth.
const textBatch = 16 << 10

// texts reads the strings of recipients without allocating each: their
// bytes are appended to text, and every textBatch bytes (and at the end)
// flush makes text one string and sets each value to its part of it.
// Placeholder names, which repeat from one recipient to the next, are
// made strings once. The strings of a batch share its memory, which stays
// in use while any of them is.
type texts struct {
	text    []byte
	pending []pendingText
	names   map[string]string // placeholder names seen, each its own value; nil: none kept
	scratch []byte            // a name being unescaped
}

// maxNames bounds the placeholder names texts keeps for reuse.
const maxNames = 1024

// textField names a string field of a recipient.
type textField uint8

const (
	phoneField textField = iota
	externalIDField
)

// pendingText is a value waiting for flush, text[start:end]: the value of
// the placeholder name of m when m is set, or of out[i].Placeholders when
// ph is set (none when start is -1; dead: a placeholders object replaced
// since), else the field of out[i].
type pendingText struct {
	m          map[string]string
	name       string
	i          int
	field      textField
	ph, dead   bool
	start, end int
}

// add appends the value raw (a string, unquoted, or a literal as written)
// to the batch, bound for p (start and end are set here).
func (t *texts) add(raw jsontext.Value, p pendingText) error {
	p.start = len(t.text)
	switch {
	case raw[0] != '"':
		t.text = append(t.text, raw...)
	case bytes.IndexByte(raw, '\\') < 0:
		t.text = append(t.text, raw[1:len(raw)-1]...)
	default:
		var err error
		if t.text, err = jsontext.AppendUnquote(t.text, raw); err != nil {
			return err
		}
	}
	p.end = len(t.text)
	t.pending = append(t.pending, p)
	return nil
}

// flush makes the batch one string and sets the values waiting for it, in
// the order they were read (so that of a name given twice the last
// counts). out holds the recipients (nil when there are none).
func (t *texts) flush(out []campaign.Recipient) {
	if len(t.pending) == 0 {
		return
	}
	s := string(t.text)
	for _, p := range t.pending {
		switch {
		case p.dead:
		case p.m != nil && p.start < 0:
			delete(p.m, p.name)
		case p.m != nil:
			p.m[p.name] = s[p.start:p.end]
		case p.ph && p.start < 0:
			out[p.i].Placeholders.Delete(p.name)
		case p.ph:
			out[p.i].Placeholders.Set(p.name, s[p.start:p.end])
		case p.field == phoneField:
			out[p.i].Phone = s[p.start:p.end]
		default:
			out[p.i].ExternalUserID = s[p.start:p.end]
		}
	}
	clear(t.pending) // let go of the maps
	t.text, t.pending = t.text[:0], t.pending[:0]
}

// readName reads an object name, unescaped; it is valid until the next
// read.
func (t *texts) readName(dec *jsontext.Decoder) ([]byte, error) {
	raw, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	t.scratch, err = jsontext.AppendUnquote(t.scratch[:0], raw)
	return t.scratch, err
}

// intern returns name as a string: when names is set, the same string for
// the same name (up to maxNames names).
func (t *texts) intern(name []byte) string {
	if s, ok := t.names[string(name)]; ok {
		return s
	}
	s := string(name)
	if t.names != nil && len(t.names) < maxNames {
		t.names[s] = s
	}
	return s
}

// peekError is the error behind a PeekKind of KindInvalid, for the value
// at field.
func peekError(dec *jsontext.Decoder, field string) error {
	if _, err := dec.ReadToken(); err != nil {
		return decodeError(err, field)
	}
	return badRequest("Malformed JSON at %s", field) // not reached: PeekKind saw an error
}

// notA skips the value at field, of the wrong kind, and answers msg (or
// what went wrong while skipping it).
func notA(dec *jsontext.Decoder, field, msg string) error {
	if err := dec.SkipValue(); err != nil {
		return decodeError(err, field)
	}
	return invalidField(field, msg)
}

// readError is decodeError for an error that may be nil.
func readError(err error, field string) error {
	if err == nil {
		return nil
	}
	return decodeError(err, field)
}
