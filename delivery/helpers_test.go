package delivery_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/survey"
)

// store is what the tests need of a store.
type store interface {
	accounts.Store
	campaign.Store
	delivery.Store
	survey.Store
	delivery.EventStore
}

// answers returns the survey answers of st, for ChatEventsConfig.Answers.
func answers(t testing.TB, st survey.Store) *survey.Service {
	t.Helper()
	svc, err := survey.New(survey.Config{Store: st})
	require.NoError(t, err)
	return svc
}

// world is a company set up to send: an approved SMS sender "Herald", an
// approved fallback sender "HeraldFB" and a chat service "acme-brand".
type world struct {
	t        testing.TB
	s        store
	ids      *messaging.IDGenerator
	co       messaging.Company
	sender   messaging.SMSSender
	fallback messaging.SMSSender
	chat     messaging.ChatService
}

func newWorld(t testing.TB, s store) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{t: t, s: s, ids: messaging.NewIDGenerator(nil)}
	now := time.Now().UTC()
	w.co = messaging.Company{ID: w.ids.New(), Name: "Acme " + w.ids.New().String(), Active: true, CreatedAt: now}
	require.NoError(t, s.CreateCompany(ctx, &w.co))
	for _, p := range []*messaging.SMSSender{&w.sender, &w.fallback} {
		name := "Herald"
		if p == &w.fallback {
			name = "HeraldFB"
		}
		*p = messaging.SMSSender{CompanyID: w.co.ID, SenderID: name, CreatedAt: now}
		require.NoError(t, s.CreateSMSSender(ctx, p))
		require.NoError(t, s.ApproveSMSSender(ctx, p.ID))
	}
	w.chat = messaging.ChatService{CompanyID: w.co.ID, BrandName: "Acme", ProviderServiceID: "acme-brand", CreatedAt: now}
	require.NoError(t, s.CreateChatService(ctx, &w.chat))
	return w
}

// spec describes a campaign to create.
type spec struct {
	channel  messaging.Channel
	mode     messaging.SendingMode
	phones   []string
	text     func(i int) string // default "Hello <i>"
	fallback func(i int) string // the SMS fallback text of message i; default none
	status   messaging.CampaignStatus
	msgType  messaging.MessageType
	config   *messaging.ChatConfig
	noSender bool
	expires  func(i int) *time.Time // message i's ExpiresAt; default none
	validFor time.Duration          // the campaign's ValidFor
	window   *messaging.SendWindow  // the campaign's SendWindow
	hidden   bool                   // a direct send's campaign
}

// campaign creates a campaign with one message per phone, in status
// (Ready or InProgress; transactional ones are InProgress).
func (w *world) campaign(sp spec) (messaging.Campaign, []*messaging.Message) {
	w.t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	if sp.mode == "" {
		sp.mode = messaging.ModeBulk
	}
	if sp.status == "" {
		sp.status = messaging.CampaignInProgress
	}
	if sp.msgType == 0 {
		sp.msgType = messaging.TypeSimpleText
	}
	c := messaging.Campaign{ID: w.ids.New(), CompanyID: w.co.ID, Name: "test", Channel: sp.channel, Mode: sp.mode,
		Status: messaging.CampaignQueuing, MessageType: sp.msgType, Config: sp.config, Planned: len(sp.phones),
		CreatedAt: now, UpdatedAt: now, ValidFor: sp.validFor, SendWindow: sp.window, Hidden: sp.hidden}
	if sp.channel == messaging.ChannelSMS && !sp.noSender {
		c.SMSSenderID = w.sender.ID
	}
	if sp.channel == messaging.ChannelChat {
		c.ChatServiceID = w.chat.ID
		c.FallbackSender = w.fallback.ID
	}
	if sp.mode == messaging.ModeTransactional {
		c.Status, c.Planned, c.StartedAt = messaging.CampaignInProgress, 0, &now
	}
	require.NoError(w.t, w.s.CreateCampaign(ctx, &c, 1<<30))
	msgs := make([]*messaging.Message, len(sp.phones))
	for i, p := range sp.phones {
		text := fmt.Sprintf("Hello %d", i)
		if sp.text != nil {
			text = sp.text(i)
		}
		msgs[i] = &messaging.Message{ID: w.ids.New(), CompanyID: w.co.ID, CampaignID: c.ID, Channel: sp.channel, Phone: p,
			Content: text, Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now}
		if sp.fallback != nil {
			msgs[i].FallbackContent = sp.fallback(i)
		}
		if sp.expires != nil {
			msgs[i].ExpiresAt = sp.expires(i)
		}
	}
	if sp.mode == messaging.ModeTransactional {
		if len(msgs) > 0 {
			require.NoError(w.t, w.s.AdmitMessages(ctx, w.co.ID, msgs, 1<<30))
		}
		return w.get(c.ID), msgs
	}
	if len(msgs) > 0 {
		require.NoError(w.t, w.s.InsertMessages(ctx, msgs))
	}
	w.transition(c, messaging.CampaignQueuing, messaging.CampaignReady)
	if sp.status == messaging.CampaignInProgress {
		w.transition(c, messaging.CampaignReady, messaging.CampaignInProgress)
	}
	return w.get(c.ID), msgs
}

func (w *world) transition(c messaging.Campaign, from, to messaging.CampaignStatus) {
	w.t.Helper()
	require.NoError(w.t, w.s.TransitionCampaign(context.Background(), messaging.CampaignTransition{CompanyID: w.co.ID, CampaignID: c.ID, From: []messaging.CampaignStatus{from}, To: to, At: time.Now().UTC()}))
}

func (w *world) get(id messaging.ID) messaging.Campaign {
	w.t.Helper()
	c, err := w.s.GetCampaign(context.Background(), w.co.ID, id)
	require.NoError(w.t, err)
	return c
}

func (w *world) message(id messaging.ID) messaging.Message {
	w.t.Helper()
	m, err := w.s.GetMessage(context.Background(), w.co.ID, id)
	require.NoError(w.t, err)
	return m
}

// waitFor polls cond until it holds, failing the test after a generous
// limit (a hung dispatcher, not a slow one).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitCampaign waits until the campaign's counters satisfy cond and
// returns it.
func (w *world) waitCampaign(id messaging.ID, what string, cond func(c messaging.Campaign) bool) messaging.Campaign {
	w.t.Helper()
	var c messaging.Campaign
	waitFor(w.t, what, func() bool { c = w.get(id); return cond(c) })
	return c
}

// settled reports whether every message of c is final (Delivered, Seen or
// Failed), fallback SMS included.
func settled(c messaging.Campaign) bool {
	return c.Counts.Total() == c.Counts.Delivered+c.Counts.Seen+c.Counts.Failed &&
		c.FallbackCounts.Total() == c.FallbackCounts.Delivered+c.FallbackCounts.Seen+c.FallbackCounts.Failed
}

// run starts d.Run and returns a function that stops it and waits for it.
func run(t testing.TB, d *delivery.Dispatcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

// fastConfig is a dispatcher configuration for tests: short polls, short
// backoffs.
func fastConfig(s delivery.Store) delivery.Config {
	return delivery.Config{
		Store:            s,
		PollInterval:     5 * time.Millisecond,
		CompleteInterval: 5 * time.Millisecond,
		RetryBackoff:     messaging.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond},
		Logger:           testLogger(),
	}
}

// testLogger logs to stderr with -v and HERALD_TEST_LOG=1, else nowhere.
func testLogger() *slog.Logger {
	if os.Getenv("HERALD_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// phones returns n numbers, the last four digits of number i being i
// (plus first).
func phones(n, first int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("4479000%05d", first+i)
	}
	return out
}

// messagesOf returns the messages of campaign id.
func (w *world) messagesOf(id messaging.ID) []messaging.Message {
	w.t.Helper()
	ms, _, err := w.s.ListMessages(context.Background(), w.co.ID, messaging.MessageFilter{CampaignID: id, PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
	require.NoError(w.t, err)
	return ms
}

// handle hands one report, a delivery.ChatStatus or a
// delivery.ChatInbound, to ev and returns its outcome.
func handle(ctx context.Context, ev *delivery.ChatEvents, r any) (delivery.ChatEventOutcome, error) {
	switch r := r.(type) {
	case delivery.ChatStatus:
		out, err := ev.ChatStatuses(ctx, []delivery.ChatStatus{r})
		if err != nil {
			return delivery.ChatEventError, err
		}
		return out[0], nil
	case delivery.ChatInbound:
		return ev.ChatInbound(ctx, r)
	}
	panic(fmt.Sprintf("not a report: %T", r))
}
