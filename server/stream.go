package server

import (
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
// campaign.Recipient, and the rest of the body is never held whole.

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
	// Duplicate names are let through to the checks below: a repeated
	// recipients array is refused by name, other repeats take the last.
	dec := jsontext.NewDecoder(s.body(w, r), jsontext.AllowDuplicateNames(true))
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
		if key == "recipients" {
			if seen {
				return nil, invalidField("recipients", "recipients is given more than once")
			}
			seen = true
			if recipients, err = s.decodeRecipients(dec, direct, r.ContentLength); err != nil {
				return nil, err
			}
			continue
		}
		target, ok := fields[key]
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

// decodeRecipients reads the recipients array at the decoder's position.
func (s *server) decodeRecipients(dec *jsontext.Decoder, direct bool, contentLength int64) ([]campaign.Recipient, error) {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		return nil, readError(err, "recipients")
	case '[':
	case jsontext.KindInvalid:
		_, err := dec.ReadToken()
		return nil, decodeError(err, "recipients")
	default:
		if err := dec.SkipValue(); err != nil {
			return nil, decodeError(err, "recipients")
		}
		return nil, invalidField("recipients", "recipients must be an array")
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, decodeError(err, "recipients")
	}
	limit := s.campaigns.Limits().MaxRecipients
	out := make([]campaign.Recipient, 0, recipientsCap(contentLength, limit))
	for i := 0; dec.PeekKind() != ']'; i++ {
		if i == limit {
			return nil, messaging.Errorf(messaging.Invalid, messaging.NameTooManyRecipients,
				"A request may carry at most %d recipients", limit)
		}
		rc, err := decodeRecipient(dec, i, direct)
		if err != nil {
			return nil, err
		}
		out = append(out, rc)
	}
	if _, err := dec.ReadToken(); err != nil { // ]
		return nil, decodeError(err, "recipients")
	}
	return out, nil
}

// decodeRecipient reads recipients[i]. Names match as encoding/json
// matches them: exactly, else without regard to case; unknown ones are
// skipped; null values leave a field empty.
func decodeRecipient(dec *jsontext.Decoder, i int, direct bool) (campaign.Recipient, error) {
	var rc campaign.Recipient
	path := func() string { return "recipients[" + strconv.Itoa(i) + "]" }
	switch dec.PeekKind() {
	case '{':
	case 'n':
		_, err := dec.ReadToken()
		return rc, readError(err, path())
	case jsontext.KindInvalid:
		_, err := dec.ReadToken()
		return rc, decodeError(err, path())
	default:
		if err := dec.SkipValue(); err != nil {
			return rc, decodeError(err, path())
		}
		return rc, invalidField(path(), path()+" must be an object")
	}
	if _, err := dec.ReadToken(); err != nil {
		return rc, decodeError(err, path())
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return rc, decodeError(err, path())
		}
		name := tok.String()
		switch {
		case name == "phoneNumber" || strings.EqualFold(name, "phoneNumber"):
			rc.Phone, err = readString(dec, path, ".phoneNumber")
		case name == "externalUserId" || strings.EqualFold(name, "externalUserId"):
			rc.ExternalUserID, err = readString(dec, path, ".externalUserId")
		case name == "placeholders" || strings.EqualFold(name, "placeholders"):
			if direct && dec.PeekKind() != 'n' {
				f := path() + ".placeholders"
				return rc, invalidField(f, f+": direct sends take no placeholders")
			}
			rc.Placeholders, err = readPlaceholders(dec, path)
		default:
			if err := dec.SkipValue(); err != nil {
				return rc, decodeError(err, path())
			}
		}
		if err != nil {
			return rc, err
		}
	}
	if _, err := dec.ReadToken(); err != nil { // }
		return rc, decodeError(err, path())
	}
	return rc, nil
}

// readString reads a string value, "" for null; anything else is an
// error on the field path()+name (built only then).
func readString(dec *jsontext.Decoder, path func() string, name string) (string, error) {
	field := func() string { return path() + name }
	switch dec.PeekKind() {
	case '"', 'n':
		tok, err := dec.ReadToken()
		if err != nil {
			return "", decodeError(err, field())
		}
		if tok.Kind() == 'n' {
			return "", nil
		}
		return tok.String(), nil
	case jsontext.KindInvalid:
		_, err := dec.ReadToken()
		return "", decodeError(err, field())
	}
	if err := dec.SkipValue(); err != nil {
		return "", decodeError(err, field())
	}
	return "", invalidField(field(), field()+" must be a string")
}

// readPlaceholders reads a recipient's placeholders object, with the rules
// of decodePlaceholders: strings, numbers (as written) and booleans; null
// values are left out; nil for null.
func readPlaceholders(dec *jsontext.Decoder, path func() string) (map[string]string, error) {
	field := func() string { return path() + ".placeholders" } // built on errors only
	switch dec.PeekKind() {
	case '{':
	case 'n':
		_, err := dec.ReadToken()
		return nil, readError(err, field())
	case jsontext.KindInvalid:
		_, err := dec.ReadToken()
		return nil, decodeError(err, field())
	default:
		if err := dec.SkipValue(); err != nil {
			return nil, decodeError(err, field())
		}
		return nil, invalidField(field(), "placeholders must be an object of names to values")
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, decodeError(err, field())
	}
	m := make(map[string]string, 1)
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, decodeError(err, field())
		}
		k := tok.String()
		switch dec.PeekKind() {
		case '"', 't', 'f':
			v, err := dec.ReadToken()
			if err != nil {
				return nil, decodeError(err, field()+"."+k)
			}
			m[k] = v.String()
		case '0':
			v, err := dec.ReadValue() // the number as written
			if err != nil {
				return nil, decodeError(err, field()+"."+k)
			}
			m[k] = string(v)
		case 'n':
			if _, err := dec.ReadToken(); err != nil {
				return nil, decodeError(err, field()+"."+k)
			}
		case jsontext.KindInvalid:
			_, err := dec.ReadToken()
			return nil, decodeError(err, field()+"."+k)
		default:
			if err := dec.SkipValue(); err != nil {
				return nil, decodeError(err, field()+"."+k)
			}
			return nil, invalidField(field()+"."+k, "placeholder "+k+" must be a string, a number or a boolean")
		}
	}
	if _, err := dec.ReadToken(); err != nil { // }
		return nil, decodeError(err, field())
	}
	return m, nil
}

// readError is decodeError for an error that may be nil.
func readError(err error, field string) error {
	if err == nil {
		return nil
	}
	return decodeError(err, field)
}
