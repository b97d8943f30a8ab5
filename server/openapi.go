package server

import (
	_ "embed"
	"io"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of the public API.
//
//go:embed openapi/openapi.json
var openAPIDocument string

// OpenAPI returns a copy of the OpenAPI 3.1 document of the public API, as
// served at GET /api/v1/openapi.json.
func OpenAPI() []byte { return []byte(openAPIDocument) }

// openAPI answers GET /api/v1/openapi.json (no key needed).
func (s *server) openAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, openAPIDocument)
}
