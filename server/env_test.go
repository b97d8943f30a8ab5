package server_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/inbound"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/survey"
	"github.com/heraldhq/herald/template"
	"github.com/heraldhq/herald/transport/media"
	"github.com/heraldhq/herald/webhook"
)

const adminToken = "test-admin-token"

// appStore is what the services of an env see: the account and campaign
// ports.
type appStore interface {
	accounts.Store
	campaign.Store
}

// envConfig tunes an env.
type envConfig struct {
	limits   campaign.Limits
	now      func() time.Time
	ready    func(context.Context) error
	wrap     func(*memstore.Store) appStore // what the services see; default the memstore
	media    template.MediaProber           // probes media URLs of chat templates; default none
	maxBody  int64
	noVerify bool      // skip the OpenAPI contract checks
	quiet    bool      // discard the logs
	logTo    io.Writer // where the logs go; default the env's buffer
	tune     func(*server.Config)
	idem     idempotency.Config // Store is set to the memstore
	// webhookLoopback allows webhook endpoints on loopback over http.
	webhookLoopback bool
	// providers describes the chat providers; default Herald's only.
	providers accounts.Providers
}

// withWebhookURLs allows webhook endpoints on loopback over http.
func withWebhookURLs(loopback bool) func(*envConfig) {
	return func(c *envConfig) { c.webhookLoopback = loopback }
}

// company is a company set up for a test: active, with an API key, an
// approved SMS sender and a chat service.
type company struct {
	id     messaging.ID
	key    string
	sender int64
	chat   int64
}

// env is a server on a memstore, with one company ready to send.
type env struct {
	t      testing.TB
	store  *memstore.Store
	svc    *campaign.Service
	acc    *accounts.Service
	rec    *recordingStore
	h      http.Handler
	logs   *syncBuffer
	verify *contract
	ids    *messaging.IDGenerator // ids of what tests write to the store directly
	company
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t testing.TB, opts ...func(*envConfig)) *env {
	t.Helper()
	var cfg envConfig
	for _, o := range opts {
		o(&cfg)
	}
	st := memstore.New()
	var store appStore = st
	if cfg.wrap != nil {
		store = cfg.wrap(st)
	}
	rec := &recordingStore{appStore: store, campaigns: map[messaging.ID]int{}, messages: map[messaging.ID]int{}}
	svc := must(campaign.New(campaign.Config{Store: rec, Limits: cfg.limits, Now: cfg.now, Media: cfg.media, OptOuts: st, Providers: cfg.providers}))
	acc := must(accounts.New(accounts.Config{Store: rec, Now: cfg.now, Providers: cfg.providers}))
	e := &env{t: t, store: st, svc: svc, acc: acc, rec: rec, logs: &syncBuffer{}, ids: messaging.NewIDGenerator(nil)}
	logger := loggerTo(e.logs)
	if cfg.logTo != nil {
		logger = loggerTo(cfg.logTo)
	}
	if cfg.quiet {
		logger = slog.New(slog.DiscardHandler)
	}
	var checks []server.Check
	if cfg.ready != nil {
		checks = []server.Check{{Name: "ready", Check: cfg.ready}}
	}
	scfg := server.Config{
		Accounts: acc, Campaigns: svc, Surveys: must(survey.New(survey.Config{Store: st})), AdminToken: adminToken,
		Inbound:  must(inbound.New(inbound.Config{Store: st})),
		OptOuts:  must(optout.New(optout.Config{Store: st})),
		Webhooks: must(webhook.New(webhook.Config{Store: st, Now: cfg.now, URLs: webhook.URLPolicy{AllowLoopbackHTTP: cfg.webhookLoopback}})),
		Logger:   logger, Checks: checks, MaxBodyBytes: cfg.maxBody,
	}
	cfg.idem.Store = st
	scfg.Idempotency = must(idempotency.New(cfg.idem))
	scfg.Routing = must(routing.New(routing.Config{Store: st}))
	if cfg.tune != nil {
		cfg.tune(&scfg)
	}
	e.h = must(server.New(scfg))
	t.Cleanup(svc.Close)
	if !cfg.noVerify {
		e.verify = loadContract(t)
	}
	e.company = e.newCompany(t, "Acme")
	return e
}

// newCompany sets up another company.
func (e *env) newCompany(t testing.TB, name string) company {
	t.Helper()
	ctx := context.Background()
	c, err := e.acc.CreateCompany(ctx, name)
	require.NoError(t, err)
	require.NoError(t, e.acc.SetCompanyActive(ctx, c.ID, true))
	key, err := e.acc.GenerateAPIKey(ctx, c.ID)
	require.NoError(t, err)
	sd, err := e.acc.RegisterSMSSender(ctx, c.ID, "ACME")
	require.NoError(t, err)
	require.NoError(t, e.acc.ApproveSMSSender(ctx, sd.ID))
	cs, err := e.acc.AddChatService(ctx, c.ID, name+" Brand", "svc-"+name)
	require.NoError(t, err)
	return company{id: c.ID, key: key, sender: sd.ID, chat: cs.ID}
}

// response is an answer of the server.
type response struct {
	t      testing.TB
	Code   int
	Header http.Header
	Body   []byte
}

// obj decodes the body as a JSON object.
func (r response) obj() map[string]any {
	r.t.Helper()
	var m map[string]any
	require.NoError(r.t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

// arr decodes the body as a JSON array.
func (r response) arr() []any {
	r.t.Helper()
	var a []any
	require.NoError(r.t, json.Unmarshal(r.Body, &a), "body: %s", r.Body)
	return a
}

// reqOpt changes a request before it is sent.
type reqOpt func(*http.Request)

func withKey(k string) reqOpt { return func(r *http.Request) { r.Header.Set("X-API-Key", k) } }

func noKey() reqOpt { return func(r *http.Request) { r.Header.Del("X-API-Key") } }

func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

// bodyBytes turns a test body into bytes: nil, raw string, or a value to
// encode.
func bodyBytes(t testing.TB, body any) []byte {
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return []byte(b)
	case []byte:
		return b
	}
	out, err := json.Marshal(body)
	require.NoError(t, err)
	return out
}

// do sends a request with the env's key and checks the exchange against
// the OpenAPI document: the response always, the request when the server
// accepted it.
func (e *env) do(method, path string, body any, opts ...reqOpt) response {
	return e.doT(e.t, method, path, body, opts...)
}

func (e *env) doT(t testing.TB, method, path string, body any, opts ...reqOpt) response {
	t.Helper()
	raw := bodyBytes(t, body)
	build := func() *http.Request {
		var rd io.Reader
		if raw != nil {
			rd = bytes.NewReader(raw)
		}
		r := httptest.NewRequest(method, path, rd)
		if raw != nil {
			r.Header.Set("Content-Type", "application/json")
		}
		r.Header.Set("X-API-Key", e.key)
		for _, o := range opts {
			o(r)
		}
		return r
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, build())
	res := response{t: t, Code: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	require.NotEmpty(t, res.Header.Get("X-Request-Id"), "every response carries a request id")
	if e.verify != nil {
		e.verify.check(t, build(), res)
	}
	return res
}

// requireKeys asserts the exact set of keys of a JSON object.
func requireKeys(t testing.TB, m map[string]any, keys ...string) {
	t.Helper()
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	want := append([]string(nil), keys...)
	sort.Strings(want)
	require.Equal(t, want, got)
}

// requireError asserts an error answer: status, error name, and when
// field is not empty that validationErrors has that field.
func requireError(t testing.TB, r response, status int, name, field string) map[string]any {
	t.Helper()
	require.Equal(t, status, r.Code, "body: %s", r.Body)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	m := r.obj()
	require.Equal(t, name, m["error"], "body: %s", r.Body)
	msg, _ := m["message"].(string)
	require.NotEmpty(t, msg)
	if field != "" {
		ve, ok := m["validationErrors"].(map[string]any)
		require.True(t, ok, "validationErrors expected: %s", r.Body)
		require.Contains(t, ve, field, "body: %s", r.Body)
	}
	return m
}

// smsTemplate creates an SMS template and returns its id.
func (e *env) smsTemplate(name, content string, opts ...reqOpt) string {
	e.t.Helper()
	r := e.do("POST", "/api/v1/templates/sms", map[string]any{"name": name, "templateContent": content}, opts...)
	require.Equal(e.t, http.StatusCreated, r.Code, "body: %s", r.Body)
	return r.obj()["id"].(string)
}

// chatTemplate creates a chat SimpleText template and returns its id.
func (e *env) chatTemplate(name, content string, extra map[string]any, opts ...reqOpt) string {
	e.t.Helper()
	body := map[string]any{"name": name, "templateContent": content, "messageType": 1, "chatServiceId": e.chat}
	for k, v := range extra {
		body[k] = v
	}
	r := e.do("POST", "/api/v1/templates/chat", body, opts...)
	require.Equal(e.t, http.StatusCreated, r.Code, "body: %s", r.Body)
	return r.obj()["id"].(string)
}

// transactional creates a transactional campaign and returns its id.
func (e *env) transactional(ch, templateID string) string {
	e.t.Helper()
	r := e.do("POST", "/api/v1/"+ch+"/campaigns", map[string]any{"name": "tx", "templateId": templateID})
	require.Equal(e.t, http.StatusCreated, r.Code, "body: %s", r.Body)
	return r.obj()["campaignId"].(string)
}

// recipients builds a recipients array of n valid numbers.
func recipients(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"phoneNumber": phone(i)}
	}
	return out
}

// phone returns the i-th test number.
func phone(i int) string { return fmt.Sprintf("+4477009%05d", i) }

// wait waits for the background preparations.
func (e *env) wait() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(e.t, e.svc.Wait(ctx))
}

// pending returns the company's pending count.
func (e *env) pending(id messaging.ID) int {
	e.t.Helper()
	n, err := e.store.PendingCount(context.Background(), id)
	require.NoError(e.t, err)
	return n
}

// campaignCount returns how many visible campaigns the company has; see
// written for hidden ones.
func (e *env) campaignCount(id messaging.ID) int {
	e.t.Helper()
	_, n, err := e.store.ListCampaigns(context.Background(), id, messaging.CampaignFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
	require.NoError(e.t, err)
	return n
}

// recordingStore is the store the service sees: it hands every call on and
// counts, per company, the campaigns and messages it wrote, hidden
// (direct-send) campaigns included, which ListCampaigns leaves out.
type recordingStore struct {
	appStore
	mu        sync.Mutex
	campaigns map[messaging.ID]int
	messages  map[messaging.ID]int
}

func (s *recordingStore) CreateCampaign(ctx context.Context, c *messaging.Campaign, maxPending int) error {
	err := s.appStore.CreateCampaign(ctx, c, maxPending)
	if err == nil {
		s.mu.Lock()
		s.campaigns[c.CompanyID]++
		s.mu.Unlock()
	}
	return err
}

func (s *recordingStore) InsertMessages(ctx context.Context, msgs []*messaging.Message) error {
	err := s.appStore.InsertMessages(ctx, msgs)
	if err == nil {
		s.mu.Lock()
		for _, m := range msgs {
			s.messages[m.CompanyID]++
		}
		s.mu.Unlock()
	}
	return err
}

func (s *recordingStore) AdmitMessages(ctx context.Context, companyID messaging.ID, msgs []*messaging.Message, maxPending int) error {
	err := s.appStore.AdmitMessages(ctx, companyID, msgs, maxPending)
	if err == nil {
		s.mu.Lock()
		s.messages[companyID] += len(msgs)
		s.mu.Unlock()
	}
	return err
}

// written tells how many campaigns, hidden ones included, and messages
// the service has written for the company.
type written struct{ campaigns, messages int }

// written returns what the service has written for the company so far.
func (e *env) written(id messaging.ID) written {
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	return written{e.rec.campaigns[id], e.rec.messages[id]}
}

// messageCount returns how many messages the company has for a number.
func (e *env) messageCount(id messaging.ID, phone string) int {
	e.t.Helper()
	p, _ := messaging.NormalizePhone(phone)
	_, n, err := e.store.ListMessages(context.Background(), id, messaging.MessageFilter{Phone: p, PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
	require.NoError(e.t, err)
	return n
}

// withMediaServer serves the media URLs of chat templates from h, over
// HTTPS on loopback, and has the service probe them with the HTTP prober
// of transport/media (trusting the test server's certificate, and allowed
// to connect to that server alone). It returns
// the option and the server's base URL.
func withMediaServer(t testing.TB, h http.Handler) (func(*envConfig), string) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	// The test server's address and port only: any other service on this
	// machine stays refused, as every non-public address is in production.
	only := egress.Policy{AllowAddrs: []netip.AddrPort{netip.MustParseAddrPort(srv.Listener.Addr().String())}}
	p := media.New(media.Config{RootCAs: roots, Addresses: only, Timeout: 5 * time.Second})
	return func(c *envConfig) { c.media = p }, srv.URL
}

func withLimits(l campaign.Limits) func(*envConfig) { return func(c *envConfig) { c.limits = l } }

func campaignLimits(maxPending, maxRecipients int) campaign.Limits {
	return campaign.Limits{MaxPending: maxPending, MaxRecipients: maxRecipients, RetryAfter: 30 * time.Second}
}

// lastCampaign returns the id of the company's newest visible campaign.
func (e *env) lastCampaign(t testing.TB) string {
	t.Helper()
	cs, _, err := e.store.ListCampaigns(context.Background(), e.id, messaging.CampaignFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 1}})
	require.NoError(t, err)
	require.NotEmpty(t, cs)
	return cs[0].ID.String()
}

// loggerTo returns a JSON logger writing to w.
func loggerTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
