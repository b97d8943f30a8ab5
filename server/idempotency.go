package server

import (
	"bytes"
	"io"
	"net/http"

	"github.com/heraldhq/herald/idempotency"
)

// idempotencyHeader names the request header of a key, and replayedHeader
// the answer header that marks a replayed answer.
const (
	idempotencyHeader = "Idempotency-Key"
	replayedHeader    = "Idempotent-Replayed"
)

// idempotent runs a POST that carries an Idempotency-Key once per key of
// the company: the same key with the same method, path and body gets the
// first answer again (with Idempotent-Replayed: true), the same key with
// another request a 422, and a request while the first is still running
// waits for its answer (409 after a while). The body is read whole first
// (within the route's limit) to be hashed.
func (s *server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys, present := r.Header[idempotencyHeader]
		if s.idem == nil || r.Method != http.MethodPost || !present {
			next.ServeHTTP(w, r)
			return
		}
		key := keys[0]
		if err := idempotency.CheckKey(key); err != nil {
			s.writeError(w, r, err)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			s.writeError(w, r, decodeError(err, ""))
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		req := idempotency.Request{CompanyID: companyOf(r), Key: key, Hash: idempotency.Digest(r.Method, r.URL.Path, body)}
		out, err := s.idem.Begin(r.Context(), req)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if out.Replay != nil {
			if out.Replay.ContentType != "" {
				w.Header().Set("Content-Type", out.Replay.ContentType)
			}
			w.Header().Set(replayedHeader, "true")
			w.WriteHeader(out.Replay.Status)
			_, _ = w.Write(out.Replay.Body)
			return
		}
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		resp := idempotency.Response{Status: rec.status, ContentType: rec.header.Get("Content-Type"), Body: rec.body.Bytes()}
		if err := s.idem.Finish(r.Context(), req, resp); err != nil {
			// The request did its work: its answer is given all the same;
			// a retry with the key waits, then runs again once the key is
			// taken as abandoned.
			s.log.ErrorContext(r.Context(), "keeping the answer of an idempotency key", "err", err)
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(resp.Body)
	})
}

// recorder keeps an answer to give it once its key recorded it.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = status, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.body.Write(b)
}
