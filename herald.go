package herald

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/inbound"
	"github.com/heraldhq/herald/internal/pace"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/phonezone"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/survey"
	"github.com/heraldhq/herald/template"
	"github.com/heraldhq/herald/webhook"
)

// Store is what Herald keeps its data in: the ports of the account and
// campaign use cases, of the dispatcher, of survey answers and of chat
// events, in one value. The adapters of package store (memstore,
// sqlstore) implement it.
type Store interface {
	accounts.Store
	campaign.Store
	delivery.Store
	survey.Store
	delivery.EventStore
	webhook.Store
	webhook.Outbox
	webhook.Purger
	inbound.Store
	optout.Store
	idempotency.Store
	routing.Store
	delivery.RateSource
	accounts.ChatContacts
	accounts.CallbackReplays
}

// SMSTransport makes the SMS sender Herald sends through, given the
// Reporter its delivery receipts and inbound SMS must go to: an SMPP
// client (or router) built with it, or a fake that calls it. Herald builds
// it in New, and takes reports from then on (receipts that come before Run
// are stored all the same).
type SMSTransport func(r delivery.Reporter) (delivery.SMSSender, error)

// ChatTransport makes the chat sender Herald sends through, given the
// Reporter its providers' callbacks must go to. The sender may also serve
// those callbacks: when it is an http.Handler, server.New mounts it at
// /callbacks/chat and /callbacks/chat/{chatServiceId} (transport/chatroute
// does both).
type ChatTransport func(r delivery.Reporter) (delivery.ChatSender, error)

// Config configures Herald. Store is required; every other field has a
// documented zero-value default.
type Config struct {
	// Store holds everything. Required.
	Store Store
	// SMS makes the SMS sender. Nil: SMS messages (fallback SMS
	// included) stay Pending.
	SMS SMSTransport
	// Chat makes the chat sender. Nil: chat messages stay Pending.
	Chat ChatTransport
	// Media probes the media URLs of chat templates. Nil: their form only
	// is checked.
	Media template.MediaProber
	// Logger receives what Herald logs. Default: discard.
	Logger *slog.Logger
	// Observer receives the dispatcher's and the chat callbacks'
	// measurements. Default: none.
	Observer delivery.Observer
	// Limits bound requests and pending capacity. Zero: the defaults of
	// campaign.Limits.
	Limits campaign.Limits
	// Accounts tunes the account use cases (the API key cache). Its Store
	// is set by New.
	Accounts accounts.Config
	// Campaigns tunes the campaign use cases. Its Store, Limits, Media,
	// Logger and OnQueued are set by New, and its Providers when nil (to
	// Accounts.Providers).
	Campaigns campaign.Config
	// Delivery tunes the dispatcher (claim identity and lease, receipt
	// timeout, concurrency, retries, ...). Its Store, SMS, Chat, Logger,
	// Observer and OnChatFailure are set by New: a permanent chat failure
	// whose reason falls back (delivery.NeedsFallback) always falls back
	// to SMS when the message has fallback content.
	Delivery delivery.Config
	// Webhooks tunes the webhook endpoints (which URLs they may have).
	// Its Store is set by New, and its OnChange also refreshes the
	// sender's endpoints.
	Webhooks webhook.Config
	// WebhookPoster sends the requests of webhook events (an HTTP client:
	// transport/webhookpost). Nil: no webhooks; companies cannot register
	// endpoints, and Webhooks returns nil.
	WebhookPoster webhook.Poster
	// WebhookSender tunes the sending of webhook events. Its Store,
	// Poster and Logger are set by New, and Owner when empty (to
	// Delivery.Instance).
	WebhookSender webhook.SenderConfig
	// RecoverEvery is how often campaigns a stopped process left Queuing
	// are looked for while Run runs (besides when it starts). Default 1
	// minute.
	RecoverEvery time.Duration
	// ScheduleEvery is how often Run looks for scheduled campaigns whose
	// time came (besides when it starts). Default half a second, so that a
	// campaign starts within a second of its sendAt.
	ScheduleEvery time.Duration
	// Retention, when positive, is how long the messages and survey
	// answers of a finished campaign (Completed, or Failed) are kept: while
	// Run runs, those of campaigns that finished longer ago are purged in
	// the background, RetentionBatch messages a transaction, each followed
	// by a pause four times as long as it took, so that the purge takes at
	// most about a fifth of the store's write time from delivery and the
	// API. The campaigns and their counters stay. Zero: kept for ever.
	Retention time.Duration
	// RetentionBatch is how many messages (and survey answers) one purge
	// transaction removes. Default 1,000.
	RetentionBatch int
}

// Retention defaults.
const (
	DefaultRetentionBatch = 1000
	// retentionEvery is how often Run looks for campaigns to purge;
	// retentionPause the least pause between two batches, which is
	// otherwise retentionShare times the last batch's duration.
	retentionEvery = time.Minute
	retentionPause = 20 * time.Millisecond
	retentionShare = 4
)

// Herald is one deployment's messaging platform: the campaign, template,
// account and survey use cases, the dispatcher that sends due messages
// and records what providers report, chat callbacks and survey answers,
// and the recovery of work a stopped process left behind. Build it with
// New, run it with Run.
type Herald struct {
	cfg        Config
	log        *slog.Logger
	accounts   *accounts.Service
	campaigns  *campaign.Service
	surveys    *survey.Service
	webhooks   *webhook.Service
	sender     *webhook.Sender
	inbound    *inbound.Service
	optOuts    *optout.Service
	idem       *idempotency.Service
	routing    *routing.Service
	events     *delivery.ChatEvents
	dispatcher *delivery.Dispatcher
	sms        delivery.SMSSender
	chat       delivery.ChatSender
	reporter   delivery.Reporter
	// built is closed once the dispatcher exists: the SMS transport may
	// hand receipts over as soon as it is made, before.
	built     chan struct{}
	recovered chan struct{} // closed once Run's start-up recovery is done
	running   atomic.Bool
	closeOnce sync.Once
}

// New builds Herald from cfg: the use cases, the SMS sender (cfg.SMS), the
// chat events with their SMS fallback, and the dispatcher, wired together:
// messages that become due wake the dispatcher, receipts go to it,
// permanent chat failures fall back to SMS. Nothing runs until Run.
func New(cfg Config) (*Herald, error) {
	if cfg.Store == nil {
		return nil, errors.New("herald: Config.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RecoverEvery <= 0 {
		cfg.RecoverEvery = time.Minute
	}
	if cfg.ScheduleEvery <= 0 {
		cfg.ScheduleEvery = 500 * time.Millisecond
	}
	if cfg.RetentionBatch <= 0 {
		cfg.RetentionBatch = DefaultRetentionBatch
	}
	if cfg.Delivery.Instance == "" {
		// One name for this process's claims and webhook leases.
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		cfg.Delivery.Instance = "herald-" + hex.EncodeToString(b[:])
	}
	h := &Herald{cfg: cfg, log: cfg.Logger, built: make(chan struct{}), recovered: make(chan struct{})}

	acfg := cfg.Accounts
	acfg.Store = cfg.Store
	if acfg.Logger == nil {
		acfg.Logger = cfg.Logger
	}
	var err error
	if h.accounts, err = accounts.New(acfg); err != nil {
		return nil, fmt.Errorf("herald: %w", err)
	}
	ccfg := cfg.Campaigns
	ccfg.Store, ccfg.Limits, ccfg.Media, ccfg.Logger = cfg.Store, cfg.Limits, cfg.Media, cfg.Logger
	ccfg.OptOuts = cfg.Store
	if ccfg.Providers == nil {
		// The same providers as the chat services may name.
		ccfg.Providers = cfg.Accounts.Providers
	}
	ccfg.OnQueued = h.wake
	ccfg.OnHalted = h.halt
	if h.campaigns, err = campaign.New(ccfg); err != nil {
		return nil, fmt.Errorf("herald: %w", err)
	}
	if h.surveys, err = survey.New(survey.Config{Store: cfg.Store, Logger: cfg.Logger}); err != nil {
		h.campaigns.Close()
		return nil, fmt.Errorf("herald: %w", err)
	}
	if cfg.WebhookPoster != nil {
		scfg := cfg.WebhookSender
		scfg.Store, scfg.Poster, scfg.Logger = cfg.Store, cfg.WebhookPoster, cfg.Logger
		if scfg.Owner == "" {
			scfg.Owner = cfg.Delivery.Instance
		}
		if h.sender, err = webhook.NewSender(scfg); err != nil {
			h.campaigns.Close()
			return nil, fmt.Errorf("herald: %w", err)
		}
		wcfg := cfg.Webhooks
		wcfg.Store = cfg.Store
		if on := wcfg.OnChange; on != nil {
			wcfg.OnChange = func() { on(); h.sender.Refresh() }
		} else {
			wcfg.OnChange = h.sender.Refresh
		}
		if h.webhooks, err = webhook.New(wcfg); err != nil {
			h.campaigns.Close()
			return nil, fmt.Errorf("herald: %w", err)
		}
	}
	if h.optOuts, err = optout.New(optout.Config{Store: cfg.Store}); err != nil {
		h.campaigns.Close()
		return nil, fmt.Errorf("herald: %w", err)
	}
	if h.idem, err = idempotency.New(idempotency.Config{Store: cfg.Store}); err != nil {
		h.campaigns.Close()
		return nil, fmt.Errorf("herald: %w", err)
	}
	if h.routing, err = routing.New(routing.Config{Store: cfg.Store}); err != nil {
		h.campaigns.Close()
		return nil, fmt.Errorf("herald: %w", err)
	}
	if h.inbound, err = inbound.New(inbound.Config{Store: cfg.Store, Logger: cfg.Logger, Answers: h.surveys.AnswerBySMS}); err != nil {
		h.campaigns.Close()
		return nil, fmt.Errorf("herald: %w", err)
	}
	if cfg.Delivery.Tracer != nil && cfg.Delivery.Sends == nil {
		// Chat status events join their send's trace in this process.
		cfg.Delivery.Sends = delivery.NewTraces(0)
	}
	ecfg := delivery.ChatEventsConfig{Store: cfg.Store, Answers: h.surveys, Logger: cfg.Logger, Observer: cfg.Observer,
		Subscriptions: h.chatSubscription, Tracer: cfg.Delivery.Tracer, Sends: cfg.Delivery.Sends}
	if rec, ok := cfg.Store.(delivery.ChatContactRecorder); ok {
		// The last contact of each person with each service: the
		// customer window of the channels that keep one.
		ecfg.Contacts = rec
	}
	h.events = delivery.NewChatEvents(ecfg)
	// One Reporter for every transport: receipts to the dispatcher,
	// inbound SMS to the inbound service, chat reports to the chat events.
	h.reporter = delivery.Reports{Receipts: h.HandleReceipt, Inbound: h.HandleInbound, Chat: h.events}

	dcfg := cfg.Delivery
	dcfg.Store, dcfg.Logger, dcfg.Observer = cfg.Store, cfg.Logger, cfg.Observer
	dcfg.OnChatFailure = h.events.OnChatFailure
	if dcfg.Rates == nil {
		// Companies' rates, set through the admin API.
		dcfg.Rates = cfg.Store
	}
	if dcfg.Zones == nil {
		// Send windows keep to each recipient's time, told from the number.
		dcfg.Zones = &phonezone.Finder{}
	}
	if cfg.SMS != nil {
		var sms delivery.SMSSender
		sms, err = cfg.SMS(h.reporter)
		if err != nil {
			h.campaigns.Close()
			return nil, fmt.Errorf("herald: SMS transport: %w", err)
		}
		h.sms, dcfg.SMS = sms, sms
	}
	if cfg.Chat != nil {
		var chat delivery.ChatSender
		if chat, err = cfg.Chat(h.reporter); err != nil {
			h.campaigns.Close()
			closeSMS(h.sms)
			return nil, fmt.Errorf("herald: chat transport: %w", err)
		}
		h.chat, dcfg.Chat = chat, chat
	}
	d, err := delivery.New(dcfg)
	if err != nil {
		h.campaigns.Close()
		closeSMS(h.sms)
		if c, ok := h.chat.(interface{ Close() error }); ok {
			_ = c.Close()
		}
		return nil, fmt.Errorf("herald: %w", err)
	}
	h.dispatcher = d
	close(h.built)
	return h, nil
}

// closeSMS closes an SMS sender that New made and cannot use.
func closeSMS(sms delivery.SMSSender) {
	if c, ok := sms.(interface{ Close(context.Context) error }); ok {
		_ = c.Close(context.Background())
	}
}

// wake makes the dispatcher look for due messages at once.
func (h *Herald) wake() {
	select {
	case <-h.built:
		h.dispatcher.Wake()
	default: // nothing can be due before New returned
	}
}

// halt withdraws a paused or cancelled campaign's messages that the
// dispatcher claimed and has not submitted yet.
func (h *Herald) halt(ctx context.Context, campaignID messaging.ID, cancelled bool) {
	select {
	case <-h.built:
		h.dispatcher.Halt(ctx, campaignID, cancelled)
	default: // nothing is claimed before New returned
	}
}

// Accounts returns the account use cases: companies, API keys and
// authentication, SMS senders and chat services.
func (h *Herald) Accounts() *accounts.Service { return h.accounts }

// Campaigns returns the template, campaign and sending use cases.
func (h *Herald) Campaigns() *campaign.Service { return h.campaigns }

// Webhooks returns the webhook endpoints of companies: registration,
// listing, removal and secret rotation; nil without a WebhookPoster.
func (h *Herald) Webhooks() *webhook.Service { return h.webhooks }

// chatSubscription applies InboundUnsubscribed and InboundSubscribed to
// the opt-out list of the company owning the service: the company the
// chat router gave, else the one of the service the provider names
// (Sender); an unknown service changes nothing.
func (h *Herald) chatSubscription(ctx context.Context, in delivery.ChatInbound) (bool, error) {
	company := in.CompanyID
	if company.IsZero() {
		if in.Sender == "" {
			h.log.InfoContext(ctx, "chat subscription report without its service", "service", in.ServiceID)
			return false, nil
		}
		cs, err := h.cfg.Store.ChatServiceByProviderID(ctx, in.Sender)
		if messaging.IsCode(err, messaging.NotFound) {
			h.log.InfoContext(ctx, "chat subscription report for an unknown service", "service", in.Sender)
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("chat subscription: %w", err)
		}
		company = cs.CompanyID
	}
	return h.optOuts.SetChat(ctx, company, in.Phone, in.Kind == delivery.InboundUnsubscribed, in.At)
}

// Routing returns the SMPP connectors and routes.
func (h *Herald) Routing() *routing.Service { return h.routing }

// Idempotency returns the idempotency keys of the companies' requests.
func (h *Herald) Idempotency() *idempotency.Service { return h.idem }

// OptOuts returns the companies' opt-out lists.
func (h *Herald) OptOuts() *optout.Service { return h.optOuts }

// Inbound returns the SMS people sent to the senders.
func (h *Herald) Inbound() *inbound.Service { return h.inbound }

// HandleInbound stores a part of an SMS a person sent (the SMPP adapter's
// InboundHandler): the adapter acknowledges it once this returned nil.
func (h *Herald) HandleInbound(ctx context.Context, p delivery.InboundPart) error {
	return h.inbound.Receive(ctx, p)
}

// Surveys returns the survey results and their summary.
func (h *Herald) Surveys() *survey.Service { return h.surveys }

// HandleReceipt stores an SMS delivery receipt: the ReceiptHandler of the
// SMS transport New made (an SMS adapter built some other way gives its
// receipts here). It returns once the receipt is stored.
func (h *Herald) HandleReceipt(ctx context.Context, r delivery.Receipt) error {
	select {
	case <-h.built:
	case <-ctx.Done():
		return fmt.Errorf("herald: receipt: %w", ctx.Err())
	}
	return h.dispatcher.HandleReceipt(ctx, r)
}

// Reporter returns the one Reporter of what providers report back: SMS
// receipts (HandleReceipt), inbound SMS (HandleInbound), chat statuses and
// what people send on chat channels (survey answers, opt-outs, contacts).
// New hands it to the transports it builds; a transport built some other
// way reports here.
func (h *Herald) Reporter() delivery.Reporter { return h.reporter }

// ChatSender returns the chat sender New made from Config.Chat; nil
// without one. server.New mounts it at /callbacks/chat when it serves the
// providers' callbacks (an http.Handler).
func (h *Herald) ChatSender() delivery.ChatSender { return h.chat }

// SMSSender returns the SMS sender New made from Config.SMS; nil without
// one.
func (h *Herald) SMSSender() delivery.SMSSender { return h.sms }

// Run recovers what a stopped process left behind (it recounts pending
// capacity and fails the campaigns whose preparation was interrupted),
// then sends due messages, records what providers report and hears the
// key changes of other processes (accounts.Service.Run) until ctx ends,
// looking for interrupted preparations every Config.RecoverEvery.
// When ctx ends it waits for the bulk preparations under way (up to
// Config.Delivery.DrainTimeout), then lets the dispatcher drain its sends
// in flight, and returns. It may be called once.
func (h *Herald) Run(ctx context.Context) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("herald: Run called twice")
	}
	if n, err := h.cfg.Store.ReconcilePending(ctx); err != nil {
		return fmt.Errorf("herald: reconcile pending counts: %w", err)
	} else if n > 0 {
		h.log.Warn("pending counts reconciled after an unclean stop", "companies", n)
	}
	if err := h.recoverPreparations(ctx); err != nil {
		return err
	}
	close(h.recovered)

	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = h.dispatcher.Run(runCtx) })
	if h.cfg.Retention > 0 {
		wg.Go(func() { h.retain(runCtx) })
	}
	if h.sender != nil {
		wg.Go(func() { _ = h.sender.Run(runCtx) })
	}
	wg.Go(func() { h.startScheduled(runCtx) })
	wg.Go(func() { h.purgeKeys(runCtx) })
	wg.Go(func() { _ = h.accounts.Run(runCtx) }) // other processes' key changes
	t := time.NewTicker(h.cfg.RecoverEvery)
	defer t.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-t.C:
			if err := h.recoverPreparations(ctx); err != nil && ctx.Err() == nil {
				h.log.Error("recovering interrupted preparations", "err", err)
			}
		}
	}
	drain := h.cfg.Delivery.DrainTimeout
	if drain <= 0 {
		drain = delivery.DefaultDrainTimeout
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	if err := h.campaigns.Wait(wctx); err != nil {
		h.log.Warn("preparations still running at shutdown are abandoned", "err", err)
	}
	cancel()
	stop()
	wg.Wait()
	if runErr != nil {
		return fmt.Errorf("herald: dispatcher: %w", runErr)
	}
	return nil
}

// Recovered is closed once Run has recovered what a stopped process left
// behind, before it sends anything: a server starts taking requests then,
// so that admissions see the recounted pending capacity.
func (h *Herald) Recovered() <-chan struct{} { return h.recovered }

// recoverPreparations fails the campaigns a stopped process left Queuing.
func (h *Herald) recoverPreparations(ctx context.Context) error {
	n, err := h.campaigns.RecoverPreparations(ctx, 0)
	if err != nil {
		return fmt.Errorf("herald: recover interrupted preparations: %w", err)
	}
	if n > 0 {
		h.log.Warn("campaigns whose preparation was interrupted were failed", "campaigns", n)
	}
	return nil
}

// Close waits, until ctx ends, for the bulk preparations still running
// (Run waits for them itself when its context ends), then releases what
// New made but the transports and the store, which the caller closes:
// preparations left are abandoned (a restart fails their campaigns). Call
// it after Run returned; it returns ctx's error when it gave up waiting.
func (h *Herald) Close(ctx context.Context) error {
	err := h.campaigns.Wait(ctx)
	h.closeOnce.Do(h.campaigns.Close)
	if err != nil {
		return fmt.Errorf("herald: close: %w", err)
	}
	return nil
}

// startScheduled starts, until ctx ends, the scheduled campaigns whose
// time came: at once (a restart that spanned a campaign's time starts it
// now), then every Config.ScheduleEvery. A store error is logged and the
// next round tries again.
func (h *Herald) startScheduled(ctx context.Context) {
	t := time.NewTicker(h.cfg.ScheduleEvery)
	defer t.Stop()
	for {
		n, err := h.campaigns.StartDue(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			h.log.Error("starting scheduled campaigns", "err", err)
		case n > 0:
			h.log.Info("scheduled campaigns started", "campaigns", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// keysEvery is how often Run removes the idempotency keys past their
// window, and keysBatch how many one transaction removes.
const (
	keysEvery = time.Hour
	keysBatch = 1000
)

// purgeKeys removes, until ctx ends, the idempotency keys past their
// window: at once, then every keysEvery.
func (h *Herald) purgeKeys(ctx context.Context) {
	t := time.NewTicker(keysEvery)
	defer t.Stop()
	for {
		if _, err := h.idem.Purge(ctx, keysBatch); err != nil && ctx.Err() == nil {
			h.log.Error("purging idempotency keys", "err", err)
		}
		h.purgeReplays(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// purgeReplays removes the chat callback keys past their time
// (accounts.CallbackReplays), keysBatch a transaction, until none is left,
// ctx ends or the store fails (logged; the next round tries again).
func (h *Herald) purgeReplays(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := h.cfg.Store.PurgeReplays(ctx, time.Now().UTC(), keysBatch)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Error("purging chat callback keys", "err", err)
			}
			return
		}
		if n < keysBatch {
			return
		}
	}
}

// retain purges, until ctx ends, the messages and survey answers of the
// campaigns that finished more than Config.Retention ago: at once, then
// every retentionEvery.
func (h *Herald) retain(ctx context.Context) {
	t := time.NewTicker(retentionEvery)
	defer t.Stop()
	for {
		h.purge(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// purge purges batch after batch until no campaign is due, ctx ends or the
// store fails (logged; the next round tries again), paced by
// retentionPause and retentionShare.
func (h *Herald) purge(ctx context.Context) {
	pace.Batches(ctx, retentionPause, retentionShare, func() bool {
		now := time.Now().UTC()
		out, err := h.cfg.Store.PurgeFinished(ctx, campaign.Purge{FinishedBefore: now.Add(-h.cfg.Retention), Limit: h.cfg.RetentionBatch, Now: now})
		switch {
		case ctx.Err() != nil:
			return false
		case err != nil:
			h.log.Warn("retention: purging finished campaigns", "err", err)
			return false
		case out.Campaign.IsZero():
			return false
		case out.Done:
			h.log.Info("retention: campaign purged", "campaign", out.Campaign)
		}
		return true
	})
}
