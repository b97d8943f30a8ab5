package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gorilla/mux"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// fieldError is a decoding failure on one field, raised by the custom
// decoders of this package. field is the JSON path of the field.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return e.field + ": " + e.msg }

// joinPath appends a field to a JSON path.
func joinPath(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}

// jsonKind names what a Go type expects in JSON, for error messages.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a valid value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a valid value"
}

// decodeError turns an error of encoding/json (or of this package's
// decoders) met while decoding the value at path prefix into the error
// answered: 400 for malformed JSON and wrong types, 413 for an oversized
// body.
func decodeError(err error, prefix string) error {
	var (
		he      *httpError
		maxErr  *http.MaxBytesError
		synErr  *json.SyntaxError
		jsonErr *jsontext.SyntacticError
		typeErr *json.UnmarshalTypeError
		fErr    *fieldError
		mErr    *messaging.Error
	)
	if te := textError(err, prefix); te != nil {
		return te
	}
	switch {
	case errors.As(err, &he): // the body timed out, or found no room in the budget
		return he
	case errors.As(err, &maxErr):
		return &httpError{status: http.StatusRequestEntityTooLarge, name: nameTooLarge,
			message: fmt.Sprintf("The request body is larger than %d bytes", maxErr.Limit)}
	case errors.As(err, &synErr):
		return badRequest("Malformed JSON at byte %d: %s", synErr.Offset, synErr.Error())
	case errors.As(err, &jsonErr):
		return badRequest("Malformed JSON at byte %d: %v", jsonErr.ByteOffset, jsonErr.Err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("Malformed JSON: the body ends in the middle of a value")
	case errors.Is(err, io.EOF):
		return badRequest("Malformed JSON: the body ends in the middle of a value")
	case errors.As(err, &typeErr):
		path := joinPath(prefix, typeErr.Field)
		if path == "" {
			return badRequest("The request body must be a JSON object")
		}
		return invalidField(path, fmt.Sprintf("%s must be %s", path, jsonKind(typeErr.Type)))
	case errors.As(err, &fErr):
		path := joinPath(prefix, fErr.field)
		return invalidField(path, fErr.msg)
	case errors.As(err, &mErr):
		return err
	}
	return badRequest("The request body could not be read: %v", err)
}

// checkText refuses a JSON body holding a string or a member name that
// is not valid text: invalid UTF-8, or a \u escape of a lone surrogate
// (U+D800 to U+DFFF). encoding/json would replace either with U+FFFD and
// the request would store a text the caller never sent. The answer is a
// 400 naming the field. Other malformations are left to the decoder,
// which reports them as it does.
func checkText(data []byte) error {
	if utf8.Valid(data) && !bytes.Contains(data, []byte(`\u`)) {
		return nil // nothing to find: no escapes, no invalid bytes
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	for {
		if _, err := dec.ReadToken(); err != nil {
			return textError(err, "")
		}
	}
}

// textError is the 400 naming the field of a string of err, an error of
// jsontext, that is not valid text; nil for any other error.
func textError(err error, prefix string) error {
	var synErr *jsontext.SyntacticError
	if !errors.As(err, &synErr) || synErr.Err == nil {
		return nil
	}
	if msg := synErr.Err.Error(); msg != "invalid UTF-8" && !strings.Contains(msg, "surrogate") {
		return nil
	}
	// The pointer is from the start of the body when the decoder read
	// the whole body (the streaming routes), relative to prefix otherwise.
	field := pointerPath(synErr.JSONPointer)
	if !strings.HasPrefix(field, prefix) {
		field = joinPath(prefix, field)
	}
	if field == "" {
		field = "body" // a member name of the body itself
	}
	return invalidField(field, fmt.Sprintf("%s must be valid text: it holds invalid UTF-8 or an escaped lone surrogate (\\ud800 to \\udfff)", field))
}

// pointerPath turns a JSON pointer into the path the API names fields by:
// "/recipients/0/name" is "recipients[0].name".
func pointerPath(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		switch {
		case tok != "" && strings.Trim(tok, "0123456789") == "":
			b.WriteString("[" + tok + "]")
		case b.Len() == 0:
			b.WriteString(tok)
		default:
			b.WriteString("." + tok)
		}
	}
	return b.String()
}

// errNoBody answers a request without the body it needs.
func errNoBody() error { return badRequest("A JSON object is required as the request body") }

// body returns the request body, limited to the route's size by guard.
func (s *server) body(_ http.ResponseWriter, r *http.Request) io.Reader { return r.Body }

// decodeBody decodes the request body, one JSON object, into v. Unknown
// fields are ignored; anything after the object is an error; so is a
// string that is not valid text (checkText).
func (s *server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := io.ReadAll(s.body(w, r))
	if err != nil {
		return decodeError(err, "") // too large (413), too slow (408)
	}
	if err := checkText(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errNoBody()
		}
		return decodeError(err, "")
	}
	return endOfBody(dec)
}

// endOfBody checks that nothing but white space follows the object.
func endOfBody(dec *json.Decoder) error {
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return decodeError(err, "")
		}
		return badRequest("Malformed JSON: unexpected data after the JSON object")
	}
	return nil
}

// minRecipientBytes is about the smallest JSON a recipient takes:
// {"phoneNumber":"1234567890"} and a comma.
const minRecipientBytes = 30

// recipientsCap guesses how many recipients a body of contentLength bytes
// (-1: unknown) holds, so the array is allocated once rather than grown
// by copying: at most twice what is needed, never past limit.
func recipientsCap(contentLength int64, limit int) int {
	if contentLength <= 0 {
		return 16
	}
	return int(min(contentLength/minRecipientBytes+1, int64(limit)))
}

// placeholderValues are request-level placeholder values. Strings, numbers
// (as written) and booleans are accepted; null values are left out.
type placeholderValues map[string]string

// UnmarshalJSON implements json.Unmarshaler.
func (p *placeholderValues) UnmarshalJSON(b []byte) error {
	m, err := decodePlaceholders(b, "")
	*p = m
	return err
}

// recipientPlaceholders are a recipient's placeholder values.
type recipientPlaceholders map[string]string

// UnmarshalJSON implements json.Unmarshaler.
func (p *recipientPlaceholders) UnmarshalJSON(b []byte) error {
	m, err := decodePlaceholders(b, "placeholders")
	*p = m
	return err
}

// decodePlaceholders decodes a placeholders object in one pass, with the
// rules of texts.readPlaceholders; errors name fields under prefix.
// Invalid UTF-8, which encoding/json lets through, is refused.
func decodePlaceholders(b []byte, prefix string) (map[string]string, error) {
	t := texts{text: make([]byte, 0, len(b)), pending: make([]pendingText, 0, 4)}
	m, err := t.readPlaceholders(jsontext.NewDecoder(bytes.NewBuffer(b), jsontext.AllowDuplicateNames(true)), -1)
	var fErr *fieldError
	switch {
	case errors.As(err, &fErr):
		return nil, &fieldError{field: joinPath(prefix, fErr.field), msg: fErr.msg}
	case err != nil:
		var synErr *jsontext.SyntacticError
		if errors.As(err, &synErr) {
			err = synErr.Err
		}
		return nil, &fieldError{field: prefix, msg: "placeholders are not valid JSON: " + err.Error()}
	}
	t.flush(nil)
	return m, nil
}

// badText tells what is wrong with the text of a query parameter or path
// variable name: a control character or invalid UTF-8 (template.CheckChars,
// the rule of every stored text); "" when nothing. Such text is refused at
// the edge rather than handed to a database that may choke on it.
func badText(name, v string) string {
	if err := template.CheckChars(v); err != nil {
		return fmt.Sprintf("%s %v", name, err)
	}
	return ""
}

// pathVar returns the path variable name, refusing control characters
// and invalid UTF-8.
func pathVar(r *http.Request, name string) (string, error) {
	v := mux.Vars(r)[name]
	if msg := badText(name, v); msg != "" {
		return "", invalidField(name, msg)
	}
	return v, nil
}

// pathID parses the UUID path variable name.
func pathID(r *http.Request, name string) (messaging.ID, error) {
	v, err := pathVar(r, name)
	if err != nil {
		return messaging.NilID, err
	}
	id, err := messaging.ParseID(v)
	if err != nil {
		return messaging.NilID, invalidField(name, fmt.Sprintf("%s %q is not a valid UUID", name, v))
	}
	return id, nil
}

// bodyID parses a UUID given in a request body field.
func bodyID(fe *messaging.FieldErrors, field, v string) messaging.ID {
	if v == "" {
		fe.Add(field, "%s is required", field)
		return messaging.NilID
	}
	id, err := messaging.ParseID(v)
	if err != nil {
		fe.Add(field, "%s %q is not a valid UUID", field, v)
	}
	return id
}

// query reads query parameters, collecting what is wrong field by field.
type query struct {
	v  url.Values
	fe messaging.FieldErrors
}

func newQuery(r *http.Request) *query { return &query{v: r.URL.Query()} }

// get returns a parameter, empty when absent. A value with a control
// character or invalid UTF-8 is an error on the parameter, and reads as
// absent.
func (q *query) get(name string) string {
	s := q.v.Get(name)
	if msg := badText(name, s); msg != "" {
		q.fe.Add(name, "%s", msg)
		return ""
	}
	return s
}

// str returns a parameter, empty when absent.
func (q *query) str(name string) string { return q.get(name) }

// phone returns a phone number parameter, empty when absent. A '+' left
// unencoded in a query string is decoded as a space (?phoneNumber=+4477...
// reads " 4477..."), so one leading space stands for '+'; the number is
// checked by the service as usual.
func (q *query) phone(name string) string {
	s := q.get(name)
	if strings.HasPrefix(s, " ") {
		return "+" + s[1:]
	}
	return s
}

// intOr parses an integer parameter, def when absent.
func (q *query) intOr(name string, def int) int {
	s := q.get(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		q.fe.Add(name, "%s must be an integer", name)
		return def
	}
	return n
}

// page parses page and pageSize with the API's defaults and limits.
func (q *query) page() messaging.PageRequest {
	p := messaging.PageRequest{Page: q.intOr("page", 1), PageSize: q.intOr("pageSize", messaging.DefaultPageSize)}
	if _, bad := q.fe["page"]; !bad && p.Page < 1 {
		q.fe.Add("page", "page must be at least 1")
	}
	if _, bad := q.fe["pageSize"]; !bad && (p.PageSize < 1 || p.PageSize > messaging.MaxPageSize) {
		q.fe.Add("pageSize", "pageSize must be between 1 and %d", messaging.MaxPageSize)
	}
	return p
}

// id parses an optional UUID parameter.
func (q *query) id(name string) messaging.ID {
	s := q.get(name)
	if s == "" {
		return messaging.NilID
	}
	id, err := messaging.ParseID(s)
	if err != nil {
		q.fe.Add(name, "%s %q is not a valid UUID", name, s)
	}
	return id
}

// date parses a time parameter: RFC 3339, or a date YYYY-MM-DD (UTC). A
// date stands for its first instant, or its last when endOfDay.
func (q *query) date(name string, endOfDay bool) time.Time {
	s := q.get(name)
	if s == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if endOfDay {
			t = t.AddDate(0, 0, 1).Add(-time.Nanosecond)
		}
		return t
	}
	q.fe.Add(name, "%s must be an RFC 3339 time (2024-05-01T10:00:00Z) or a date (2024-05-01)", name)
	return time.Time{}
}

// err returns the collected errors as one 400.
func (q *query) err() error {
	if len(q.fe) == 0 {
		return nil
	}
	return &messaging.Error{Code: messaging.Invalid, Name: messaging.NameBadRequest,
		Message: fieldsMessage(q.fe), Fields: q.fe}
}
