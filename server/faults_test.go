package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// downStore is a store whose database can be taken away: while err is
// set, the calls below return it, as an adapter does while its database
// restarts.
type downStore struct {
	*memstore.Store
	mu  sync.Mutex
	err error
}

func (s *downStore) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *downStore) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *downStore) CompanyByAPIKeySelector(ctx context.Context, selector string) (messaging.Company, messaging.APIKey, []byte, error) {
	if err := s.failure(); err != nil {
		return messaging.Company{}, messaging.APIKey{}, nil, err
	}
	return s.Store.CompanyByAPIKeySelector(ctx, selector)
}

func (s *downStore) ListTemplates(ctx context.Context, id messaging.ID, p messaging.PageRequest) ([]messaging.Template, int, error) {
	if err := s.failure(); err != nil {
		return nil, 0, err
	}
	return s.Store.ListTemplates(ctx, id, p)
}

func (s *downStore) CreateCampaign(ctx context.Context, c *messaging.Campaign, maxPending int) error {
	if err := s.failure(); err != nil {
		return err
	}
	return s.Store.CreateCampaign(ctx, c, maxPending)
}

func withDownStore(ds **downStore) func(*envConfig) {
	return func(c *envConfig) {
		c.wrap = func(s *memstore.Store) appStore {
			*ds = &downStore{Store: s}
			return *ds
		}
	}
}

func TestStoreUnavailableIs503WithRetryAfter(t *testing.T) {
	var ds *downStore
	e := newEnv(t, withDownStore(&ds))
	sms := e.smsTemplate("t", "hi") // authenticates once: the key is cached from here on
	starting := errors.New("pq: the database system is starting up (10.9.8.7)")
	cases := []struct {
		name       string
		err        error
		retryAfter string
		error      string
		message    string
	}{
		{"store unavailable", messaging.StoreUnavailable(starting), "5", "Service Unavailable", "The database is unavailable; retry later"},
		{"wrapped", fmt.Errorf("list templates: %w", messaging.StoreUnavailable(starting)), "5", "Service Unavailable", "The database is unavailable; retry later"},
		{"fraction rounded up", &messaging.Error{Code: messaging.Unavailable, Name: "Service Unavailable", Message: "soon", RetryAfter: 1500 * time.Millisecond, Err: starting}, "2", "Service Unavailable", "soon"},
		{"under a second is 1", &messaging.Error{Code: messaging.Unavailable, Message: "soon", RetryAfter: 10 * time.Millisecond}, "1", "Service Unavailable", "soon"},
		{"another code with a wait", &messaging.Error{Code: messaging.Internal, Name: "x", Message: "pool exhausted at 10.9.8.7", RetryAfter: 3 * time.Second}, "3", "Service Unavailable", "The service is unavailable; retry later"},
	}
	requests := []struct{ method, path string }{
		{"GET", "/api/v1/templates"},
		{"POST", "/api/v1/sms/campaigns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds.fail(c.err)
			defer ds.fail(nil)
			for _, rq := range requests {
				var body any
				if rq.method == "POST" {
					body = map[string]any{"name": "x", "templateId": sms}
				}
				r := e.doT(t, rq.method, rq.path, body)
				m := requireError(t, r, http.StatusServiceUnavailable, c.error, "")
				require.Equal(t, c.message, m["message"])
				require.Equal(t, c.retryAfter, r.Header.Get("Retry-After"), "%s %s", rq.method, rq.path)
				require.NotContains(t, string(r.Body), "10.9.8.7", "the cause is logged, not answered")
			}
		})
	}
	require.Contains(t, e.logs.String(), "10.9.8.7", "the cause is logged")

	t.Run("authentication while the database restarts", func(t *testing.T) {
		other := e.newCompany(t, "Fresh") // its key is not cached yet
		ds.fail(messaging.StoreUnavailable(starting))
		defer ds.fail(nil)
		r := e.doT(t, "GET", "/api/v1/sms-senders", nil, withKey(other.key))
		requireError(t, r, http.StatusServiceUnavailable, "Service Unavailable", "")
		require.Equal(t, "5", r.Header.Get("Retry-After"))
	})

	t.Run("an error without a wait has no Retry-After", func(t *testing.T) {
		ds.fail(messaging.Errorf(messaging.Unavailable, messaging.NameServiceUnavailable, "not set up"))
		defer ds.fail(nil)
		r := e.doT(t, "GET", "/api/v1/templates", nil)
		requireError(t, r, http.StatusServiceUnavailable, "Service Unavailable", "")
		require.Empty(t, r.Header.Get("Retry-After"))
	})

	r := e.do("GET", "/api/v1/templates", nil)
	require.Equal(t, http.StatusOK, r.Code, "back once the database is: %s", r.Body)
}

func TestControlCharactersInQueriesAndPaths(t *testing.T) {
	e := newEnv(t)
	const cid = "0190f5c0-0000-7000-8000-000000000000"
	survey := "/api/v1/survey-results?campaignId=" + cid + "&"
	params := []struct{ base, param, good string }{
		{"/api/v1/campaigns?", "page", "1"},
		{"/api/v1/campaigns?", "pageSize", "10"},
		{"/api/v1/campaigns?", "sendingMode", "Bulk"},
		{"/api/v1/templates?", "page", "1"},
		{"/api/v1/templates?", "pageSize", "10"},
		{"/api/v1/messages?phoneNumber=447700900001&", "externalUserId", "u1"},
		{"/api/v1/messages?externalUserId=u1&", "phoneNumber", "447700900001"},
		{"/api/v1/messages?externalUserId=u1&", "startDate", "2024-05-01"},
		{"/api/v1/messages?externalUserId=u1&", "endDate", "2024-05-01"},
		{"/api/v1/messages?externalUserId=u1&", "page", "1"},
		{"/api/v1/messages?externalUserId=u1&", "pageSize", "10"},
		{"/api/v1/survey-results?", "campaignId", cid},
		{survey, "phoneNumber", "447700900001"},
		{survey, "externalUserId", "u1"},
		{survey, "startDate", "2024-05-01"},
		{survey, "endDate", "2024-05-01"},
		{survey, "selectedOptionIndex", "0"},
		{survey, "page", "1"},
		{survey, "pageSize", "10"},
	}
	for _, p := range params {
		for _, bad := range []string{"%00", "%01", "%1F", "%1B"} {
			// the control character alone, and inside a value that is
			// otherwise good
			for _, v := range []string{bad, p.good[:1] + bad + p.good[1:]} {
				path := p.base + p.param + "=" + v
				t.Run(path, func(t *testing.T) {
					r := e.doT(t, "GET", path, nil)
					m := requireError(t, r, http.StatusBadRequest, "Bad Request", p.param)
					require.Contains(t, m["message"], p.param+" must not contain the control character")
				})
			}
		}
		t.Run(p.base+p.param+" invalid UTF-8", func(t *testing.T) {
			r := e.doT(t, "GET", p.base+p.param+"=%FF"+p.good, nil)
			requireError(t, r, http.StatusBadRequest, "Bad Request", p.param)
		})
	}

	t.Run("tab, line feed and carriage return are text", func(t *testing.T) {
		for _, v := range []string{"a%09b", "a%0Ab", "a%0Db"} {
			r := e.doT(t, "GET", "/api/v1/messages?externalUserId="+v, nil)
			require.Equal(t, http.StatusOK, r.Code, "%s: %s", v, r.Body)
			r = e.doT(t, "GET", survey+"externalUserId="+v, nil)
			require.Equal(t, http.StatusNotFound, r.Code, "an unknown campaign, past the checks: %s", r.Body)
		}
	})

	paths := []struct{ method, path, field string }{
		{"GET", "/api/v1/templates/%00", "id"},
		{"PUT", "/api/v1/templates/0190f5c0-0000-7000-8000-%00", "id"},
		{"DELETE", "/api/v1/templates/%1F", "id"},
		{"GET", "/api/v1/campaigns/%07", "id"},
		{"POST", "/api/v1/campaigns/%00/start", "id"},
		{"POST", "/api/v1/sms/campaigns/%00/messages", "id"},
		{"GET", "/api/v1/survey-results/%00/summary", "campaignId"},
		{"POST", "/admin/v1/companies/%00/activate", "id"},
		{"POST", "/admin/v1/sms-senders/1%00/approve", "smsSenderId"},
	}
	for _, p := range paths {
		t.Run(p.method+" "+p.path, func(t *testing.T) {
			var body any
			if p.method == "POST" || p.method == "PUT" {
				body = map[string]any{"phoneNumber": phone(1), "name": "x"}
			}
			r := e.doT(t, p.method, p.path, body, withHeader("Authorization", "Bearer "+adminToken))
			m := requireError(t, r, http.StatusBadRequest, "Bad Request", p.field)
			require.Contains(t, m["message"], p.field+" must not contain the control character")
		})
	}
}
