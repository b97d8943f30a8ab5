package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/console"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/chatroute"
	"github.com/heraldhq/herald/transport/media"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smsroute"
	"github.com/heraldhq/herald/transport/webhookpost"
	"github.com/heraldhq/herald/webhook"
)

// minAdminTokenLen is the length of admin token below which herald serve
// warns: a shorter one can be guessed.
const minAdminTokenLen = 32

// serve runs herald serve until ctx ends, then shuts down in order. tp
// opens the spans of requests and sends; nil when tracing is off.
func serve(ctx context.Context, cfg config, demo bool, stdout io.Writer, log *slog.Logger, tp trace.TracerProvider) (err error) {
	stopping := false
	defer func() { // after everything else is closed
		if stopping {
			log.Info("stopped")
		}
	}()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close()
	baseURL := "http://" + ln.Addr().String()

	var sims *demoSims
	if demo {
		if sims, err = startSims(&cfg, baseURL, log); err != nil {
			return err
		}
		defer sims.close()
	}

	box, err := serveSecrets(cfg, demo, log)
	if err != nil {
		return err
	}
	// With a key, Open encrypts the secrets stored in clear.
	store, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Config{MaxOpenConns: cfg.DBMaxConns, Secrets: box, PartitionSpan: cfg.PartitionSpan})
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	log.Info("database ready", "url", redactURL(cfg.DatabaseURL))
	if err := reportSecrets(ctx, store, box, log); err != nil {
		return err
	}
	if n := len(cfg.AdminToken); n > 0 && n < minAdminTokenLen {
		log.Warn("HERALD_ADMIN_TOKEN is short: use 32 characters or more (openssl rand -hex 16)", "length", n)
	}
	if sims != nil {
		if err := setUpBackup(ctx, store, sims); err != nil {
			return err
		}
	}
	m := newMetrics()
	m.reg.MustRegister(newBacklogCollector(store.Backlog))

	// Readiness: the database is required; the providers are reported (a
	// provider down leaves messages waiting, the API still takes them).
	checks := []server.Check{{Name: "database", Check: store.Ping}}
	hcfg := herald.Config{
		Store: store, Media: media.New(media.Config{Addresses: cfg.WebhookURLs.Egress()}), Logger: log, Observer: m,
		Limits: campaign.Limits{MaxPending: cfg.MaxPending},
		Delivery: delivery.Config{DrainTimeout: cfg.ShutdownTimeout, Instance: cfg.instanceName(os.Hostname),
			ClaimLease: cfg.ClaimLease, ReceiptTimeout: cfg.ReceiptTimeout},
		Retention: cfg.Retention,
		Webhooks:  webhook.Config{URLs: cfg.WebhookURLs},
	}
	poster := webhookpost.New(webhookpost.Config{URLs: cfg.WebhookURLs})
	defer poster.Close()
	hcfg.WebhookPoster = poster
	hcfg.WebhookSender.Observer = m
	var router *smsroute.Router
	// SMS go through the SMPP connectors: the one of the HERALD_SMPP_*
	// variables (named default) and those set up through the admin API,
	// read again every two seconds, so that a change applies without a
	// restart. With none, SMS stay Pending until one is set up.
	var static []routing.Connector
	if cfg.SMPPAddr != "" {
		static = append(static, routing.Connector{Name: routing.DefaultConnector, Addr: cfg.SMPPAddr, SystemID: cfg.SMPPSystemID,
			Password: cfg.SMPPPassword, Window: cfg.SMPPWindow, MaxPerSecond: cfg.SMPPMaxRate, Binds: cfg.SMPPBinds,
			SubmitIDFormat: smsroute.IDFormatName(cfg.SMPPSubmitIDs), ReceiptIDFormat: smsroute.IDFormatName(cfg.SMPPReceiptIDs)})
		hcfg.Delivery.SMSConcurrency = paceConcurrency(cfg.SMPPMaxRate)
	}
	routes, err := routing.New(routing.Config{Store: store})
	if err != nil {
		return err
	}
	stored, err := routes.Connectors(ctx)
	if err != nil {
		return fmt.Errorf("read SMPP connectors: %w", err)
	}
	smsConfigured := len(static)+len(stored) > 0
	if !smsConfigured {
		log.Warn("no SMPP connector (HERALD_SMPP_ADDR is not set, none through the admin API): SMS messages stay Pending until one is set up")
	}
	hcfg.SMS = func(reports delivery.Reporter) (delivery.SMSSender, error) {
		// Sessions bind at once; receipts that come before Herald is
		// built wait for it (herald.Herald.HandleReceipt).
		r, err := smsroute.New(ctx, smsroute.Config{Source: routes, Static: static, Logger: log, Instance: hcfg.Delivery.Instance,
			Dial: smsroute.DialSMPP(smpp.Config{ValidityPeriod: cfg.SMPPValidity, Logger: log, ReceiptHandler: reports.Receipt, Tracer: tp,
				InboundHandler: reports.InboundSMS})})
		router = r
		return r, err
	}
	// Chat messages go through the adapter of their chat service, built
	// by the provider the service names (read again every two seconds,
	// so that a service set up through the admin API is used without a
	// restart); the HERALD_CHAT_* endpoint serves the herald services
	// without an endpoint of their own.
	providers := chatProviders()
	hcfg.Accounts.Providers = providerInfos(providers)
	hcfg.Campaigns.Providers = hcfg.Accounts.Providers // a chat template must be what its service's provider carries
	chatCfg := chatroute.Config{Source: store, Providers: providers, Addresses: cfg.WebhookURLs.Egress(), Logger: log}
	if rg, ok := any(store).(chatprovider.ReplayGuard); ok {
		chatCfg.Replays = rg
	}
	if c, ok := any(store).(chatprovider.Contacts); ok {
		chatCfg.Contacts = c
	}
	if cfg.ChatURL != "" {
		chatCfg.Static = &chatroute.Static{BaseURL: cfg.ChatURL, Token: cfg.ChatToken, CallbackSecret: cfg.ChatCallbackSecret}
	} else {
		log.Warn("HERALD_CHAT_URL is not set: only chat services with an endpoint of their own send")
	}
	var chatRouter *chatroute.Router
	hcfg.Chat = func(reports delivery.Reporter) (delivery.ChatSender, error) {
		chatCfg.Reporter = m.countReports(reports)
		r, err := chatroute.New(ctx, chatCfg)
		if err != nil {
			return nil, fmt.Errorf("chat transport: %w", err)
		}
		chatRouter = r
		return r, nil
	}
	// Direct sends' traces reach their sends in this process's memory.
	var traces *delivery.Traces
	if tp != nil {
		traces = delivery.NewTraces(0)
		hcfg.Delivery.Tracer, hcfg.Delivery.Traces = tp, traces
		hcfg.WebhookSender.Tracer = tp
		hcfg.Campaigns.OnPrepare = preparationSpans(tp, traces)
	}
	h, err := herald.New(hcfg)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			log.Warn("closing Herald", "err", err)
		}
	}()
	if chatRouter != nil {
		// Closed after Herald stopped: its sends in flight need the
		// adapters.
		defer func() {
			if err := chatRouter.Close(); err != nil {
				log.Warn("chat close", "err", err)
			}
		}()
	}
	if router != nil {
		// Closed after Herald stopped (its sends in flight need the
		// sessions) and before the database (receipts go on being stored
		// until the sessions end).
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
			defer cancel()
			if err := router.Close(ctx); err != nil {
				log.Warn("SMPP close", "err", err)
			}
		}()
		m.reg.MustRegister(newSMPPCollector(router))
	}
	if router != nil && smsConfigured {
		checks = append(checks, server.Check{Name: "smsc", Optional: true, Check: func(context.Context) error {
			if !router.Up() {
				// The addresses go to the log only: /readyz answers without a key.
				return &messaging.Error{Code: messaging.Unavailable, Name: messaging.NameServiceUnavailable,
					Message: "no SMPP session is bound", Err: errors.New("no SMPP connector has a bound session")}
			}
			return nil
		}})
	}
	extra := map[string]http.Handler{
		"/metrics":  promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}),
		"/console/": console.Handler("/console/"),
		"/console":  http.RedirectHandler("/console/", http.StatusMovedPermanently),
	}
	if sims != nil {
		// The demo's handsets: POST /demo/smsc/mo sends an SMS to a sender.
		extra["/demo/smsc/"] = http.StripPrefix("/demo/smsc", sims.smsc.ControlHandler())
	}
	if chatRouter != nil && cfg.ChatURL != "" {
		checks = append(checks, server.Check{Name: "chat", Optional: true, Check: chatRouter.Reachable})
	}

	handler, err := server.New(server.Config{
		Herald: h, AdminToken: cfg.AdminToken, Logger: log, Tracer: tp, Traces: traces,
		Checks: checks, Extra: extra, Version: mainVersion(),
	})
	if err != nil {
		return err
	}
	httpSrv := &http.Server{Handler: m.instrument(handler), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}

	// Herald recovers what a stopped process left behind before the API
	// takes requests, then sends until runCtx ends.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Go(func() {
		if err := h.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			errc <- err
		}
	})
	select {
	case <-h.Recovered():
	case err := <-errc:
		wg.Wait()
		return err
	}
	wg.Go(func() {
		if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("HTTP server: %w", err)
		}
	})
	log.Info("herald serving", "addr", ln.Addr().String(), "admin_api", cfg.AdminToken != "",
		"smpp", cfg.SMPPAddr != "", "chat", cfg.ChatURL != "")

	if demo {
		// The demo's simulators run in this process: its banner is printed
		// once the SMPP session is bound, so that /readyz says ok to the
		// first request that follows it.
		if router != nil {
			bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := router.WaitReady(bctx); err != nil {
				log.Warn("demo: the SMPP session is not bound yet", "err", err)
			}
			cancel()
		}
		if err := setUpDemo(ctx, h.Accounts(), store, baseURL, sims, stdout); err != nil {
			stopRun()
			_ = httpSrv.Close()
			wg.Wait()
			return err
		}
	}

	var runErr error
	stopping = true
	select {
	case <-ctx.Done():
		log.Info("stopping")
	case runErr = <-errc:
		log.Error("stopping after a failure", "err", runErr)
	}

	// Stop accepting and finish the requests in flight; then Herald waits
	// for the bulk preparations they started and drains the sends in
	// flight.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := httpSrv.Shutdown(shutCtx); err != nil {
		log.Warn("HTTP shutdown", "err", err)
		_ = httpSrv.Close()
	}
	stopRun()
	wg.Wait()
	return runErr
}

// randomToken returns n random bytes as hexadecimal.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return fmt.Sprintf("%x", b)
}

// redactURL hides the password of a database URL for logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// paceConcurrency is the dispatcher's SMS concurrency under a submit rate
// of perSecond (0: none): the default, or as many SMS as half the send
// deadline lets through at that rate when that is fewer, so that every send
// in flight gets its turn within its deadline (counting two parts a
// message) instead of failing and using up an attempt.
func paceConcurrency(perSecond float64) int {
	if perSecond <= 0 {
		return delivery.DefaultSMSConcurrency
	}
	n := int(perSecond * delivery.DefaultSendTimeout.Seconds() / 4)
	return max(1, min(delivery.DefaultSMSConcurrency, n))
}
