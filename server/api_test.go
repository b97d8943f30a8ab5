package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/survey"
)

func TestHealth(t *testing.T) {
	var readyErr error
	e := newEnv(t, func(c *envConfig) { c.ready = func(context.Context) error { return readyErr } })
	r := e.do("GET", "/healthz", nil, noKey())
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, map[string]any{"status": "ok"}, r.obj())
	r = e.do("GET", "/readyz", nil, noKey())
	require.Equal(t, http.StatusOK, r.Code)
	require.JSONEq(t, `{"status":"ok","checks":[{"name":"ready","status":"ok","required":true}]}`, string(r.Body))
	readyErr = errors.New("database at 10.0.0.7 unreachable")
	r = e.do("GET", "/readyz", nil, noKey())
	require.Equal(t, http.StatusServiceUnavailable, r.Code)
	require.NotContains(t, string(r.Body), "10.0.0.7", "the cause is logged, not answered")
	require.Contains(t, e.logs.String(), "10.0.0.7")
}

func TestReadinessChecks(t *testing.T) {
	type state struct{ database, smsc, chat error }
	cases := []struct {
		name       string
		state      state
		status     int
		body       string
		retryAfter string
	}{
		{"all ok", state{}, 200,
			`{"status":"ok","checks":[{"name":"database","status":"ok","required":true},{"name":"smsc","status":"ok","required":false},{"name":"chat","status":"ok","required":false}]}`, ""},
		{"a provider down is reported, not unready", state{smsc: errors.New("dial tcp 10.0.0.9:2775: connection refused")}, 200,
			`{"status":"degraded","checks":[{"name":"database","status":"ok","required":true},{"name":"smsc","status":"error","required":false,"error":"failed"},{"name":"chat","status":"ok","required":false}]}`, ""},
		{"both providers down", state{smsc: errors.New("unbound"), chat: context.DeadlineExceeded}, 200,
			`{"status":"degraded","checks":[{"name":"database","status":"ok","required":true},{"name":"smsc","status":"error","required":false,"error":"failed"},{"name":"chat","status":"error","required":false,"error":"timed out"}]}`, ""},
		{"database down", state{database: errors.New("pq: password authentication failed for user herald at 10.0.0.7")}, 503,
			`{"status":"unavailable","error":"Service Unavailable","message":"Not ready: database failed","checks":[{"name":"database","status":"error","required":true,"error":"failed"},{"name":"smsc","status":"ok","required":false},{"name":"chat","status":"ok","required":false}]}`, "5"},
		{"database starting, chat down", state{database: messaging.StoreUnavailable(errors.New("pq: the database system is starting up")), chat: errors.New("502 from 10.0.0.8")}, 503,
			`{"status":"unavailable","error":"Service Unavailable","message":"Not ready: database failed","checks":[{"name":"database","status":"error","required":true,"error":"The database is unavailable; retry later"},{"name":"smsc","status":"ok","required":false},{"name":"chat","status":"error","required":false,"error":"failed"}]}`, "5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := &syncBuffer{}
			st := memstore.New()
			checks := []server.Check{
				{Name: "database", Check: func(context.Context) error { return c.state.database }},
				{Name: "smsc", Check: func(context.Context) error { return c.state.smsc }, Optional: true},
				{Name: "chat", Check: func(context.Context) error { return c.state.chat }, Optional: true},
			}
			h := must(server.New(server.Config{Accounts: must(accounts.New(accounts.Config{Store: st})), Campaigns: must(campaign.New(campaign.Config{Store: st})), Surveys: must(survey.New(survey.Config{Store: st})),
				Logger: loggerTo(logs), Checks: checks}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			require.Equal(t, c.status, rec.Code, "body: %s", rec.Body)
			require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			require.JSONEq(t, c.body, rec.Body.String())
			require.Equal(t, c.retryAfter, rec.Header().Get("Retry-After"))
			for _, err := range []error{c.state.database, c.state.smsc, c.state.chat} {
				if err != nil {
					require.Contains(t, logs.String(), err.Error(), "a failed check is logged")
				}
			}
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			require.Equal(t, http.StatusOK, rec.Code, "healthz tells the process is up, whatever the checks")
		})
	}
	t.Run("no checks", func(t *testing.T) {
		e := newEnv(t)
		r := e.do("GET", "/readyz", nil, noKey())
		require.Equal(t, http.StatusOK, r.Code)
		require.JSONEq(t, `{"status":"ok","checks":[]}`, string(r.Body))
	})
	t.Run("the deprecated Ready is a required check named ready", func(t *testing.T) {
		st := memstore.New()
		h := must(server.New(server.Config{Accounts: must(accounts.New(accounts.Config{Store: st})), Campaigns: must(campaign.New(campaign.Config{Store: st})), Surveys: must(survey.New(survey.Config{Store: st})),
			Checks: []server.Check{{Name: "database", Check: func(context.Context) error { return nil }}},
			Ready:  func(context.Context) error { return errors.New("down") }, //nolint:staticcheck // still honoured
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.JSONEq(t, `{"status":"unavailable","error":"Service Unavailable","message":"Not ready: ready failed","checks":[{"name":"database","status":"ok","required":true},{"name":"ready","status":"error","required":true,"error":"failed"}]}`, rec.Body.String())
	})
	t.Run("checks need unique names and functions", func(t *testing.T) {
		st := memstore.New()
		ok := func(context.Context) error { return nil }
		for _, checks := range [][]server.Check{
			{{Name: "", Check: ok}},
			{{Name: "database"}},
			{{Name: "database", Check: ok}, {Name: "database", Check: ok, Optional: true}},
		} {
			_, err := server.New(server.Config{Accounts: must(accounts.New(accounts.Config{Store: st})), Campaigns: must(campaign.New(campaign.Config{Store: st})), Surveys: must(survey.New(survey.Config{Store: st})), Checks: checks})
			require.ErrorContains(t, err, "needs a unique name and a function")
		}
	})
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	inactive, err := e.acc.CreateCompany(context.Background(), "Sleepy")
	require.NoError(t, err)
	inactiveKey, err := e.acc.GenerateAPIKey(context.Background(), inactive.ID)
	require.NoError(t, err)
	revoked := e.newCompany(t, "Rotated")
	_, err = e.acc.GenerateAPIKey(context.Background(), revoked.id)
	require.NoError(t, err)

	cases := []struct {
		name    string
		opt     reqOpt
		status  int
		error   string
		message string
	}{
		{"missing header", noKey(), 401, "Unauthorized", "X-API-Key header is missing or invalid"},
		{"empty header", withKey(""), 401, "Unauthorized", "X-API-Key header is missing or invalid"},
		{"malformed key", withKey("not-a-key"), 401, "Unauthorized", "Invalid or revoked API key"},
		{"unknown key", withKey("om_" + strings.Repeat("A", 32)), 401, "Unauthorized", "Invalid or revoked API key"},
		{"revoked key", withKey(revoked.key), 401, "Unauthorized", "Invalid or revoked API key"},
		{"inactive company", withKey(inactiveKey), 503, "Service Unavailable", ""},
	}
	paths := []struct{ method, path string }{
		{"GET", "/api/v1/templates"}, {"POST", "/api/v1/sms/send"}, {"GET", "/api/v1/campaigns/0190f5c0-0000-7000-8000-000000000000"},
		{"DELETE", "/api/v1/templates/0190f5c0-0000-7000-8000-000000000000"}, {"GET", "/api/v1/survey-results"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range paths {
				var body any
				if p.method == "POST" {
					body = map[string]any{"messageContent": "x", "smsSenderId": e.sender, "recipients": recipients(1)}
				}
				m := requireError(t, e.doT(t, p.method, p.path, body, c.opt), c.status, c.error, "")
				if c.message != "" {
					require.Equal(t, c.message, m["message"])
				}
			}
			require.Equal(t, 0, e.pending(e.id))
			require.Equal(t, written{}, e.written(e.id), "a refused direct send writes nothing")
		})
	}
	r := e.do("GET", "/api/v1/templates", nil)
	require.Equal(t, http.StatusOK, r.Code)
}

func TestUnknownRouteAndWrongMethod(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/api/v1/nothing", 404, ""},
		{"GET", "/api/v2/templates", 404, ""},
		{"GET", "/", 404, ""},
		{"GET", "/api/v1/templates/", 404, ""},
		{"DELETE", "/api/v1/templates", 405, "GET"},
		{"PATCH", "/api/v1/templates/0190f5c0-0000-7000-8000-000000000000", 405, "GET, PUT, DELETE"},
		{"GET", "/api/v1/sms/send", 405, "POST"},
		{"POST", "/healthz", 405, "GET"},
	}
	for _, c := range cases {
		r := e.do(c.method, c.path, nil)
		name := map[int]string{404: "Not Found", 405: "Method Not Allowed"}[c.status]
		requireError(t, r, c.status, name, "")
		require.Equal(t, c.allow, r.Header.Get("Allow"), "%s %s", c.method, c.path)
	}
}

func TestBadQueries(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, path, field string
	}{
		{"pageSize 101", "/api/v1/campaigns?pageSize=101", "pageSize"},
		{"pageSize 0", "/api/v1/campaigns?pageSize=0", "pageSize"},
		{"page not an integer", "/api/v1/campaigns?page=1.5", "page"},
		{"unknown sendingMode", "/api/v1/campaigns?sendingMode=bulk", "sendingMode"},
		{"campaign id not a uuid", "/api/v1/campaigns/xyz", "id"},
		{"messages without phone or user", "/api/v1/messages", ""},
		{"messages with a bad phone", "/api/v1/messages?phoneNumber=12-34", "phoneNumber"},
		{"messages with a bad phone after an unencoded plus", "/api/v1/messages?phoneNumber=+12-34", "phoneNumber"},
		{"messages with two leading spaces", "/api/v1/messages?phoneNumber=%20%20447700900000", "phoneNumber"},
		{"messages with a trailing space", "/api/v1/messages?phoneNumber=447700900000%20", "phoneNumber"},
		{"survey results with a bad phone after an unencoded plus", "/api/v1/survey-results?campaignId=0190f5c0-0000-7000-8000-000000000000&phoneNumber=+12-34", "phoneNumber"},
		{"messages with a bad startDate", "/api/v1/messages?phoneNumber=447700900000&startDate=01/05/2024", "startDate"},
		{"messages with a bad endDate", "/api/v1/messages?phoneNumber=447700900000&endDate=2024-13-01", "endDate"},
		{"messages with endDate before startDate", "/api/v1/messages?phoneNumber=447700900000&startDate=2024-05-02&endDate=2024-05-01", "endDate"},
		{"messages pageSize 101", "/api/v1/messages?phoneNumber=447700900000&pageSize=101", "pageSize"},
		{"survey results without campaign", "/api/v1/survey-results", "campaignId"},
		{"survey results with a bad campaign id", "/api/v1/survey-results?campaignId=42", "campaignId"},
		{"survey results with a bad option index", "/api/v1/survey-results?campaignId=0190f5c0-0000-7000-8000-000000000000&selectedOptionIndex=first", "selectedOptionIndex"},
		{"survey results with a negative option index", "/api/v1/survey-results?campaignId=0190f5c0-0000-7000-8000-000000000000&selectedOptionIndex=-1", "selectedOptionIndex"},
		{"survey results pageSize 101", "/api/v1/survey-results?campaignId=0190f5c0-0000-7000-8000-000000000000&pageSize=101", "pageSize"},
		{"survey results pageSize 0", "/api/v1/survey-results?campaignId=0190f5c0-0000-7000-8000-000000000000&pageSize=0", "pageSize"},
		{"survey results with a bad date", "/api/v1/survey-results?campaignId=0190f5c0-0000-7000-8000-000000000000&startDate=tomorrow", "startDate"},
		{"survey summary with a bad id", "/api/v1/survey-results/nope/summary", "campaignId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, e.doT(t, "GET", c.path, nil), http.StatusBadRequest, "Bad Request", c.field)
		})
	}
}

// failingStore fails where a database could, with an error that must not
// reach callers.
type failingStore struct{ *memstore.Store }

func (failingStore) ListTemplates(context.Context, messaging.ID, messaging.PageRequest) ([]messaging.Template, int, error) {
	return nil, 0, errors.New("pq: connection to 10.1.2.3 refused")
}

func TestInternalErrorsAreLoggedNotShown(t *testing.T) {
	e := newEnv(t, func(c *envConfig) { c.wrap = func(s *memstore.Store) appStore { return failingStore{s} } })
	r := e.do("GET", "/api/v1/templates", nil, withHeader("X-Request-Id", "trace-123"))
	require.Equal(t, http.StatusInternalServerError, r.Code)
	require.JSONEq(t, `{"error":"Internal Server Error","message":"An unexpected error occurred"}`, string(r.Body))
	require.Equal(t, "trace-123", r.Header.Get("X-Request-Id"))
	var logged bool
	sc := bufio.NewScanner(strings.NewReader(e.logs.String()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line["msg"] == "internal error" {
			logged = true
			require.Equal(t, "trace-123", line["requestId"])
			require.Contains(t, line["err"], "10.1.2.3")
		}
	}
	require.True(t, logged, "logs: %s", e.logs.String())
}

func TestPanicsAnswer500(t *testing.T) {
	logs := &syncBuffer{}
	st := memstore.New()
	h := must(server.New(server.Config{Accounts: must(accounts.New(accounts.Config{Store: st})), Campaigns: must(campaign.New(campaign.Config{Store: st})), Surveys: must(survey.New(survey.Config{Store: st})),
		Logger: loggerTo(logs), Extra: map[string]http.Handler{"/boom": http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("kaboom") })}}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.JSONEq(t, `{"error":"Internal Server Error","message":"An unexpected error occurred"}`, rec.Body.String())
	require.Contains(t, logs.String(), "kaboom")
}

func TestAccessLog(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/templates/sms?secret=query", map[string]any{"name": "body-secret", "templateContent": "x"})
	require.Equal(t, http.StatusCreated, r.Code)
	id := r.Header.Get("X-Request-Id")
	out := e.logs.String()
	require.NotContains(t, out, e.key, "keys are never logged")
	require.NotContains(t, out, "body-secret", "bodies are never logged")
	require.NotContains(t, out, "secret=query", "queries are not logged")
	var found map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line["msg"] == "http request" && line["requestId"] == id {
			found = line
		}
	}
	require.NotNil(t, found, "logs: %s", out)
	require.Equal(t, "POST", found["method"])
	require.Equal(t, "/api/v1/templates/sms", found["path"])
	require.Equal(t, float64(201), found["status"])
	require.Contains(t, found, "duration")
	require.Equal(t, "DEBUG", found["level"], "requests that went well are logged at debug")
}

func TestRequestIDs(t *testing.T) {
	e := newEnv(t)
	a := e.do("GET", "/healthz", nil).Header.Get("X-Request-Id")
	b := e.do("GET", "/healthz", nil).Header.Get("X-Request-Id")
	require.NotEqual(t, a, b)
	require.Equal(t, "abc-123", e.do("GET", "/healthz", nil, withHeader("X-Request-Id", "abc-123")).Header.Get("X-Request-Id"))
	bad := e.do("GET", "/healthz", nil, withHeader("X-Request-Id", "has spaces\tand tabs")).Header.Get("X-Request-Id")
	require.NotContains(t, bad, " ", "an unusable id is replaced")
}

func TestExtraHandlers(t *testing.T) {
	st := memstore.New()
	hit := ""
	mk := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = name; w.WriteHeader(http.StatusTeapot) })
	}
	h := must(server.New(server.Config{Accounts: must(accounts.New(accounts.Config{Store: st})), Campaigns: must(campaign.New(campaign.Config{Store: st})), Surveys: must(survey.New(survey.Config{Store: st})),
		Extra: map[string]http.Handler{"/metrics": mk("metrics"), "/callbacks/": mk("callbacks")}}))
	for path, want := range map[string]string{"/metrics": "metrics", "/callbacks/chat": "callbacks"} {
		hit = ""
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader("{}")))
		require.Equal(t, http.StatusTeapot, rec.Code, path)
		require.Equal(t, want, hit)
	}
	// No admin token: every admin path says the admin API is off, in the
	// API's error format, whatever the method.
	for _, req := range [][2]string{{"GET", "/admin/v1/companies"}, {"POST", "/admin/v1/companies"}, {"GET", "/admin/v1"}, {"GET", "/admin/v1/whoami"}, {"DELETE", "/admin/v1/routes/1"}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(req[0], req[1], strings.NewReader("{}")))
		require.Equal(t, http.StatusNotFound, rec.Code, "no admin token: the admin API is off")
		var body map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
		require.Equal(t, "Admin API Disabled", body["error"], "%v", req)
		require.Contains(t, body["message"], "HERALD_ADMIN_TOKEN")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/admin/v1x", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Contains(t, rec.Body.String(), `"Not Found"`, "only the admin API's paths")
}

func TestNewNeedsTheServices(t *testing.T) {
	_, err := server.New(server.Config{})
	require.ErrorContains(t, err, "Campaigns and Config.Surveys are required")
}

// TestNewFromHerald: a server built from a Herald alone serves its use
// cases.
func TestNewFromHerald(t *testing.T) {
	h, err := herald.New(herald.Config{Store: memstore.New()})
	require.NoError(t, err)
	defer h.Close(context.Background())
	handler, err := server.New(server.Config{Herald: h, AdminToken: "op"})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/admin/v1/companies", strings.NewReader(`{"name":"Acme"}`))
	req.Header.Set("Authorization", "Bearer op")
	req.Header.Set("Content-Type", "application/json")
	handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var out struct{ ID messaging.ID }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	co, err := h.Accounts().GetCompany(t.Context(), out.ID)
	require.NoError(t, err, "the company is Herald's")
	require.Equal(t, "Acme", co.Name)
}
