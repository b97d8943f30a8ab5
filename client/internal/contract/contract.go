// Package contract is test support for packages client and client/admin:
// it checks the HTTP exchanges of a client against Herald's OpenAPI
// document (server.OpenAPI) and records which operations answered which
// statuses, so that the tests show that the client sends what the document
// describes, that the server answers what it describes, and that every
// operation was exercised.
package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/heraldhq/herald/server"
)

// Checker validates exchanges; it is safe for concurrent use.
type Checker struct {
	doc    *openapi3.T
	router routers.Router

	mu   sync.Mutex
	seen map[string]map[int]bool // operationId -> statuses
}

var (
	once    sync.Once
	shared  *Checker
	loadErr error
)

// Load returns the process's Checker of the server's document.
func Load() (*Checker, error) {
	once.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromData(server.OpenAPI())
		if err != nil {
			loadErr = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			loadErr = err
			return
		}
		router, err := gorillamux.NewRouter(doc)
		if err != nil {
			loadErr = err
			return
		}
		shared = &Checker{doc: doc, router: router, seen: map[string]map[int]bool{}}
	})
	return shared, loadErr
}

// Transport returns a RoundTripper that sends through rt and reports to
// t, as errors, every exchange that departs from the document: a request
// the server accepted that the document does not allow, or an answer it
// does not describe.
func (c *Checker) Transport(t testing.TB, rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		var reqBody []byte
		if req.GetBody != nil {
			rc, err := req.GetBody()
			if err == nil {
				reqBody, _ = io.ReadAll(rc)
				_ = rc.Close()
			}
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return resp, err
		}
		if msg := c.check(req, reqBody, resp, body); msg != "" {
			t.Errorf("contract: %s", msg)
		}
		return resp, nil
	})
}

// check validates one exchange and records it; it returns what is wrong,
// empty when nothing is.
func (c *Checker) check(req *http.Request, reqBody []byte, resp *http.Response, body []byte) string {
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	// The document's servers are relative: match on the path alone.
	r.URL.Scheme, r.URL.Host, r.Host = "", "", ""
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return ""
		}
		return fmt.Sprintf("%s %s has no documented operation but answered %d", req.Method, req.URL.Path, resp.StatusCode)
	}
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: credentialsPresent}}
	var problems []string
	if resp.StatusCode < 400 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			problems = append(problems, fmt.Sprintf("request %s %s %s: %v", req.Method, req.URL, reqBody, err))
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		problems = append(problems, fmt.Sprintf("response of %s %s: %d %s: %v", req.Method, req.URL, resp.StatusCode, body, err))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	id := route.Operation.OperationID
	if c.seen[id] == nil {
		c.seen[id] = map[int]bool{}
	}
	c.seen[id][resp.StatusCode] = true
	return strings.Join(problems, "; ")
}

// Unexercised lists the operations under prefix ("/api/v1/") that
// answered no success, and those documented with an error answer that
// answered none, through the Transports of this process.
func (c *Checker) Unexercised(prefix string) (noSuccess, noError []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for path, item := range c.doc.Paths.Map() {
		if !strings.HasPrefix(path, prefix) {
			continue
		}
		for _, op := range item.Operations() {
			ok, failed := false, false
			for code := range c.seen[op.OperationID] {
				ok = ok || code < 300
				failed = failed || code >= 400
			}
			if !ok {
				noSuccess = append(noSuccess, op.OperationID)
			}
			documented := false
			for code := range op.Responses.Map() {
				documented = documented || code >= "4"
			}
			if !failed && documented {
				noError = append(noError, op.OperationID)
			}
		}
	}
	sort.Strings(noSuccess)
	sort.Strings(noError)
	return noSuccess, noError
}

// credentialsPresent is the authentication check of request validation:
// the API key in X-API-Key, or the admin token as a bearer token.
func credentialsPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header
	switch in.SecuritySchemeName {
	case "ApiKey":
		if h.Get("X-API-Key") == "" {
			return errors.New("X-API-Key missing")
		}
	case "AdminToken":
		if !strings.HasPrefix(strings.ToLower(h.Get("Authorization")), "bearer ") {
			return errors.New("Authorization: Bearer missing")
		}
	default:
		return errors.New("unknown security scheme " + in.SecuritySchemeName)
	}
	return nil
}

// roundTripper adapts a function to http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
