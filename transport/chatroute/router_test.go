package chatroute_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/chatroute"
	"github.com/heraldhq/herald/transport/chatsim"
)

// source is a Source whose services the test changes.
type source struct {
	mu   sync.Mutex
	list []messaging.ChatService
	err  error
}

func (s *source) ChatServices(context.Context) ([]messaging.ChatService, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]messaging.ChatService(nil), s.list...), s.err
}

func (s *source) set(list ...messaging.ChatService) {
	s.mu.Lock()
	s.list = list
	s.mu.Unlock()
}

// fakeAdapter records what it sends and answers callbacks with an inbound
// text naming another service and company, which the router must
// overwrite.
type fakeAdapter struct {
	s      chatprovider.Settings
	sent   chan delivery.ChatSend
	closed atomic.Bool
}

func (a *fakeAdapter) SendChat(_ context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	a.sent <- m
	return delivery.ChatAccepted{ProviderID: a.s.Sender + "-" + m.MessageID.String()}, nil
}

func (a *fakeAdapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, err := a.s.Reporter.ChatInbound(r.Context(), delivery.ChatInbound{Kind: delivery.InboundText, ServiceID: 999,
		CompanyID: messaging.NewIDGenerator(nil).New(), Phone: "447700900001", Text: a.s.Sender})
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (a *fakeAdapter) Close() error { a.closed.Store(true); return nil }

// fakeProvider builds fakeAdapters and remembers them.
type fakeProvider struct {
	mu    sync.Mutex
	built []*fakeAdapter
}

func (p *fakeProvider) provider() chatprovider.Provider {
	return chatprovider.Provider{Name: "fake", BaseURL: "https://fake.example", Channels: []string{chatprovider.ChannelWhatsApp},
		New: func(_ context.Context, s chatprovider.Settings) (chatprovider.Adapter, error) {
			var c struct{ Key string }
			if err := json.Unmarshal(s.Credentials, &c); err != nil || c.Key == "" {
				return nil, messaging.Invalidf("credentials.key", "credentials.key is required")
			}
			a := &fakeAdapter{s: s, sent: make(chan delivery.ChatSend, 8)}
			p.mu.Lock()
			p.built = append(p.built, a)
			p.mu.Unlock()
			return a, nil
		}}
}

func (p *fakeProvider) adapters() []*fakeAdapter {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*fakeAdapter(nil), p.built...)
}

// inbound is a Reporter recording the chat inbound reports.
type inbound struct {
	mu  sync.Mutex
	got []delivery.ChatInbound
}

func (*inbound) Receipt(context.Context, delivery.Receipt) error        { return errors.New("no") }
func (*inbound) InboundSMS(context.Context, delivery.InboundPart) error { return errors.New("no") }
func (*inbound) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	return make([]delivery.ChatEventOutcome, len(ss)), nil
}

func (r *inbound) ChatInbound(_ context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, in)
	return delivery.ChatEventStored, nil
}

func (r *inbound) last() delivery.ChatInbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[len(r.got)-1]
}

func post(t *testing.T, h http.Handler, path string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}")))
	return rec.Code
}

// The router sends each message through its service's adapter, built by
// the provider the service names with the service's settings; callbacks
// reach the adapter of the service their path names, and what they
// report is attributed to that service and its company; a service that
// changes gets a new adapter and the old one is closed; unknown services
// and providers fail for good.
func TestRouterRoutesByService(t *testing.T) {
	ctx := t.Context()
	co1, co2 := messaging.NewIDGenerator(nil).New(), messaging.NewIDGenerator(nil).New()
	src := &source{}
	src.set(
		messaging.ChatService{ID: 1, CompanyID: co1, ProviderServiceID: "s-one", Provider: "fake", Channel: "whatsapp", Credentials: json.RawMessage(`{"key":"k1"}`)},
		messaging.ChatService{ID: 2, CompanyID: co2, ProviderServiceID: "s-two", Provider: "fake", Channel: "whatsapp", BaseURL: "https://eu.fake.example",
			Credentials: json.RawMessage(`{"key":"k2"}`)},
		messaging.ChatService{ID: 3, CompanyID: co2, ProviderServiceID: "s-three", Provider: "nobody"},
		messaging.ChatService{ID: 4, CompanyID: co2, ProviderServiceID: "s-four", Provider: "fake", Credentials: json.RawMessage(`{}`)},
	)
	fp := &fakeProvider{}
	rep := &inbound{}
	r, err := chatroute.New(ctx, chatroute.Config{Source: src, Providers: []chatprovider.Provider{fp.provider()}, Reporter: rep,
		CallbackBase: "https://herald.example/", Reload: 20 * time.Millisecond, CloseDelay: 10 * time.Millisecond})
	require.NoError(t, err)
	defer r.Close()

	built := fp.adapters()
	require.Len(t, built, 2, "services 3 (unknown provider) and 4 (refused credentials) have none")
	byID := map[int64]*fakeAdapter{}
	for _, a := range built {
		byID[a.s.ServiceID] = a
	}
	require.Equal(t, "https://fake.example", byID[1].s.BaseURL, "the provider's endpoint by default")
	require.Equal(t, "https://eu.fake.example", byID[2].s.BaseURL)
	require.Equal(t, "https://herald.example/callbacks/chat/2", byID[2].s.CallbackURL)
	require.Equal(t, co2, byID[2].s.CompanyID)
	require.Equal(t, "whatsapp", byID[2].s.Channel)

	id := messaging.NewIDGenerator(nil).New()
	res, err := r.SendChat(ctx, delivery.ChatSend{MessageID: id, ServiceID: 2, To: "447700900001", Ref: 1})
	require.NoError(t, err)
	require.Equal(t, "s-two-"+id.String(), res.ProviderID)
	require.Equal(t, "s-two", (<-byID[2].sent).Sender, "the service's sender when the send names none")
	require.Empty(t, byID[1].sent)

	for _, sid := range []int64{3, 4, 77} {
		_, err = r.SendChat(ctx, delivery.ChatSend{MessageID: id, ServiceID: sid, To: "447700900001", Ref: 1})
		var se *delivery.SendError
		require.ErrorAs(t, err, &se, "service %d", sid)
		require.True(t, se.Permanent)
		require.Equal(t, delivery.ReasonServiceRefused, se.Reason)
	}

	require.Equal(t, http.StatusOK, post(t, r, "/callbacks/chat/1"))
	got := rep.last()
	require.Equal(t, "s-one", got.Text, "the adapter of service 1 took it")
	require.Equal(t, int64(1), got.ServiceID, "attributed to the service of the path")
	require.Equal(t, co1, got.CompanyID)
	for _, path := range []string{"/callbacks/chat/77", "/callbacks/chat/x", "/callbacks/chat", "/callbacks/chat/3"} {
		require.Equal(t, http.StatusNotFound, post(t, r, path), path)
	}

	// Service 1 gets new credentials: a new adapter; the old one closes.
	src.set(
		messaging.ChatService{ID: 1, CompanyID: co1, ProviderServiceID: "s-one", Provider: "fake", Channel: "whatsapp", Credentials: json.RawMessage(`{"key":"k1b"}`)},
		messaging.ChatService{ID: 2, CompanyID: co2, ProviderServiceID: "s-two", Provider: "fake", Channel: "whatsapp", BaseURL: "https://eu.fake.example",
			Credentials: json.RawMessage(`{"key":"k2"}`)},
	)
	require.Eventually(t, func() bool { return len(fp.adapters()) == 3 && byID[1].closed.Load() }, 5*time.Second, 5*time.Millisecond)
	require.False(t, byID[2].closed.Load(), "an unchanged service keeps its adapter")
	ready, broken := r.Services()
	require.Equal(t, 2, ready)
	require.Zero(t, broken)

	require.NoError(t, r.Close())
	for _, a := range fp.adapters() {
		require.True(t, a.closed.Load())
	}
}

// A service created after the last read is found by its first send,
// without waiting for the next one.
func TestRouterReadsAnUnknownServiceAtOnce(t *testing.T) {
	ctx := t.Context()
	src := &source{}
	fp := &fakeProvider{}
	r, err := chatroute.New(ctx, chatroute.Config{Source: src, Providers: []chatprovider.Provider{fp.provider()}, Reporter: &inbound{},
		Reload: time.Hour})
	require.NoError(t, err)
	defer r.Close()
	src.set(messaging.ChatService{ID: 5, CompanyID: messaging.NewIDGenerator(nil).New(), ProviderServiceID: "new", Provider: "fake",
		Credentials: json.RawMessage(`{"key":"k"}`)})
	_, err = r.SendChat(ctx, delivery.ChatSend{MessageID: messaging.NewIDGenerator(nil).New(), ServiceID: 5, To: "1", Ref: 1})
	require.NoError(t, err)
}

// The deployment's own endpoint (HERALD_CHAT_*) sends the messages of the
// herald services without an endpoint of their own, and serves
// /callbacks/chat; without it those messages wait (a transient failure
// with a Retry-After).
func TestRouterStaticService(t *testing.T) {
	ctx := t.Context()
	sim := chatsim.New(chatsim.Config{Token: "tok", Record: true})
	require.NoError(t, sim.Start("127.0.0.1:0"))
	defer sim.Close()
	src := &source{}
	src.set(messaging.ChatService{ID: 7, CompanyID: messaging.NewIDGenerator(nil).New(), ProviderServiceID: "legacy"})
	rep := &inbound{}
	r, err := chatroute.New(ctx, chatroute.Config{Source: src, Providers: []chatprovider.Provider{chat.Provider()}, Reporter: rep,
		Static: &chatroute.Static{BaseURL: sim.URL(), Token: "tok", CallbackSecret: "cb"}})
	require.NoError(t, err)
	defer r.Close()
	res, err := r.SendChat(ctx, delivery.ChatSend{MessageID: messaging.NewIDGenerator(nil).New(), ServiceID: 7, Sender: "legacy",
		To: "998901234567", Ref: 42, Type: messaging.TypeSimpleText, Text: "hi"})
	require.NoError(t, err)
	require.NotEmpty(t, res.ProviderID)
	require.Len(t, sim.Received("998901234567"), 1)

	for i, path := range []string{"/callbacks/chat", "/callbacks/chat/7"} {
		body := fmt.Sprintf(`{"event":"subscribed","service_id":"legacy","phone_number":"998901234567","timestamp":%d}`, 1731234567890+i)
		post := func() int {
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			req.Header.Set(chat.SignatureHeader, chat.Sign("cb", []byte(body)))
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			return rec.Code
		}
		require.Equal(t, http.StatusOK, post(), path)
		require.Equal(t, "legacy", rep.last().Sender)
		require.Equal(t, http.StatusUnauthorized, post(), "%s: the same callback again is a replay", path)
	}

	none, err := chatroute.New(ctx, chatroute.Config{Source: src, Providers: []chatprovider.Provider{chat.Provider()}, Reporter: rep})
	require.NoError(t, err)
	defer none.Close()
	_, err = none.SendChat(ctx, delivery.ChatSend{MessageID: messaging.NewIDGenerator(nil).New(), ServiceID: 7, To: "998901234567", Ref: 43,
		Type: messaging.TypeSimpleText, Text: "hi"})
	var se *delivery.SendError
	require.ErrorAs(t, err, &se)
	require.False(t, se.Permanent)
	require.Positive(t, se.RetryAfter)
	require.Equal(t, http.StatusNotFound, post(t, none, "/callbacks/chat"))
}

// The requests of stored services go through the egress guard: a baseUrl
// on this machine is refused unless the operator allows loopback.
func TestRouterDialsThroughTheGuard(t *testing.T) {
	ctx := t.Context()
	sim := chatsim.New(chatsim.Config{Token: "tok", Record: true})
	require.NoError(t, sim.Start("127.0.0.1:0"))
	defer sim.Close()
	src := &source{}
	src.set(messaging.ChatService{ID: 8, CompanyID: messaging.NewIDGenerator(nil).New(), ProviderServiceID: "own", BaseURL: sim.URL(),
		Credentials: json.RawMessage(`{"token":"tok","callbackSecret":"cb"}`)})
	send := func(r *chatroute.Router) error {
		_, err := r.SendChat(ctx, delivery.ChatSend{MessageID: messaging.NewIDGenerator(nil).New(), ServiceID: 8, Sender: "own",
			To: "998901234567", Ref: 44, Type: messaging.TypeSimpleText, Text: "hi"})
		return err
	}
	guarded, err := chatroute.New(ctx, chatroute.Config{Source: src, Providers: []chatprovider.Provider{chat.Provider()}, Reporter: &inbound{}})
	require.NoError(t, err)
	defer guarded.Close()
	require.Error(t, send(guarded))
	require.Empty(t, sim.Received("998901234567"), "nothing reached the loopback address")

	open, err := chatroute.New(ctx, chatroute.Config{Source: src, Providers: []chatprovider.Provider{chat.Provider()}, Reporter: &inbound{},
		Addresses: egress.Policy{AllowLoopback: true}})
	require.NoError(t, err)
	defer open.Close()
	require.NoError(t, send(open))
	require.Len(t, sim.Received("998901234567"), 1)
}

// While the deployment's endpoint is the only one that sends, the router
// passes on its bound: one message at a time while its provider does not
// answer; once a service has an adapter of its own, no bound.
func TestRouterSendLimitOfTheStaticService(t *testing.T) {
	ctx := t.Context()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer down.Close()
	src := &source{}
	src.set(messaging.ChatService{ID: 7, CompanyID: messaging.NewIDGenerator(nil).New(), ProviderServiceID: "legacy"})
	fp := &fakeProvider{}
	r, err := chatroute.New(ctx, chatroute.Config{Source: src, Providers: []chatprovider.Provider{chat.Provider(), fp.provider()}, Reporter: &inbound{},
		Static: &chatroute.Static{BaseURL: down.URL, Token: "tok", CallbackSecret: "cb"}, Reload: 10 * time.Millisecond})
	require.NoError(t, err)
	defer r.Close()
	require.Zero(t, r.SendLimit(), "no bound while the provider answers")
	_, err = r.SendChat(ctx, delivery.ChatSend{MessageID: messaging.NewIDGenerator(nil).New(), ServiceID: 7, Sender: "legacy",
		To: "998901234567", Ref: 42, Type: messaging.TypeSimpleText, Text: "hi"})
	require.Error(t, err)
	require.Equal(t, 1, r.SendLimit(), "one at a time while it does not")

	src.set(messaging.ChatService{ID: 7, CompanyID: messaging.NewIDGenerator(nil).New(), ProviderServiceID: "legacy"},
		messaging.ChatService{ID: 8, CompanyID: messaging.NewIDGenerator(nil).New(), ProviderServiceID: "own", Provider: "fake",
			Credentials: json.RawMessage(`{"key":"k"}`)})
	require.Eventually(t, func() bool { return r.SendLimit() == 0 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, r.WaitReady(ctx))
}

// statuses is a Reporter recording the chat statuses it takes.
type statuses struct {
	inbound
	got []delivery.ChatStatus
}

func (r *statuses) ChatStatuses(_ context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	r.got = append(r.got, ss...)
	out := make([]delivery.ChatEventOutcome, len(ss))
	for i := range out {
		out[i] = delivery.ChatEventStored
	}
	return out, nil
}

// A stored service's callbacks move its company's messages only: every
// status it reports names the service's company, whatever the callback
// said, and the store leaves another company's message as it is.
func TestRouterStatusesOfTheServicesCompany(t *testing.T) {
	ctx := t.Context()
	ids := messaging.NewIDGenerator(nil)
	co1, co2 := ids.New(), ids.New()
	own, other := ids.New(), ids.New()
	src := &source{}
	src.set(messaging.ChatService{ID: 1, CompanyID: co1, ProviderServiceID: "s", Provider: "fake", Credentials: json.RawMessage(`{"key":"k"}`)})
	fp := &fakeProvider{}
	rep := &statuses{}
	r, err := chatroute.New(ctx, chatroute.Config{Source: src, Providers: []chatprovider.Provider{fp.provider()}, Reporter: rep})
	require.NoError(t, err)
	defer r.Close()
	a := fp.adapters()[0]
	_, err = a.s.Reporter.ChatStatuses(ctx, []delivery.ChatStatus{
		{MessageID: other, Status: messaging.StatusDelivered, CompanyID: co2},
		{MessageID: own, Status: messaging.StatusDelivered},
	})
	require.NoError(t, err)
	require.Len(t, rep.got, 2)
	for _, st := range rep.got {
		require.Equal(t, co1, st.CompanyID, "status of %s", st.MessageID)
	}
}

// The router's own client keeps a connection for every send in flight:
// when delivery.DefaultChatConcurrency sends to one host end together and
// as many follow, the second round dials no connection. Before, the
// client kept 256 idle a host, and dialled the rest again each round.
func TestRouterKeepsAConnectionForEverySendInFlight(t *testing.T) {
	ctx := t.Context()
	const inFlight = delivery.DefaultChatConcurrency
	var dialled atomic.Int64
	var arrived sync.WaitGroup
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialled.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	fp := &fakeProvider{}
	src := &source{}
	src.set(messaging.ChatService{ID: 3, CompanyID: messaging.NewIDGenerator(nil).New(), Provider: "fake", ProviderServiceID: "s",
		Credentials: json.RawMessage(`{"key":"k"}`)})
	r, err := chatroute.New(ctx, chatroute.Config{Source: src, Providers: []chatprovider.Provider{fp.provider()}, Reporter: &inbound{},
		Addresses: egress.Policy{AllowLoopback: true}})
	require.NoError(t, err)
	defer r.Close()
	_, err = r.SendChat(ctx, delivery.ChatSend{MessageID: messaging.NewIDGenerator(nil).New(), ServiceID: 3, Sender: "s",
		To: "998901234567", Type: messaging.TypeSimpleText, Text: "hi"})
	require.NoError(t, err)
	<-fp.adapters()[0].sent
	client := fp.adapters()[0].s.Client
	require.NotNil(t, client)

	round := func() {
		arrived.Add(inFlight)
		var done sync.WaitGroup
		for range inFlight {
			done.Go(func() {
				res, err := client.Get(srv.URL)
				if assert.NoError(t, err) {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			})
		}
		arrived.Wait() // every request holds a connection at once
		close(release)
		done.Wait()
	}
	round()
	require.EqualValues(t, inFlight, dialled.Load(), "the first round dials a connection a request")
	release = make(chan struct{})
	round()
	require.EqualValues(t, inFlight, dialled.Load(), "the second round reuses them all")
}
