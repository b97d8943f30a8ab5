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

	"github.com/heraldhq/herald/campaign"
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

func (s *downStore) CompanyByAPIKeySelector(ctx context.Context, selector string) (messaging.Company, []byte, error) {
	if err := s.failure(); err != nil {
		return messaging.Company{}, nil, err
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
		c.wrap = func(s *memstore.Store) campaign.Store {
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
