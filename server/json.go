package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// timeLayout is how times are answered: RFC 3339, UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// timestamp is a time answered in timeLayout.
type timestamp time.Time

// MarshalJSON implements json.Marshaler.
func (t timestamp) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(timeLayout)+2)
	b = append(b, '"')
	b = time.Time(t).UTC().AppendFormat(b, timeLayout)
	return append(b, '"'), nil
}

// ts converts a time.
func ts(t time.Time) timestamp { return timestamp(t) }

// tsOrNull converts an optional time; nil and the zero time answer null.
func tsOrNull(t *time.Time) *timestamp {
	if t == nil || t.IsZero() {
		return nil
	}
	v := timestamp(*t)
	return &v
}

// strOrNull answers an empty string as null.
func strOrNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// idOrNull answers a zero integer id as null.
func idOrNull(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// maxPooledBuffer is the largest response buffer kept for reuse.
const maxPooledBuffer = 64 << 10

// writeJSON answers v as JSON with status. Encoding errors cannot be
// answered any more once the status is out, so v is encoded first: a value
// that fails to encode is a 500.
func (s *server) writeJSON(w http.ResponseWriter, status int, v any) {
	buf, _ := s.bufs.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuffer { // large list answers are not kept
			s.bufs.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		buf.WriteString(`{"error":"Internal Server Error","message":"An unexpected error occurred"}` + "\n")
		status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
