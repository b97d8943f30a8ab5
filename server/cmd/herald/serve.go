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
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/server"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/survey"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/media"
	"github.com/heraldhq/herald/transport/smpp"
)

// recoverEvery is how often campaigns left Queuing by a stopped process
// are looked for, besides at start.
const recoverEvery = time.Minute

// serve runs herald serve until ctx ends, then shuts down in order.
func serve(ctx context.Context, cfg config, demo bool, stdout io.Writer, log *slog.Logger) (err error) {
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

	store, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Config{MaxOpenConns: cfg.DBMaxConns})
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	log.Info("database ready", "url", redactURL(cfg.DatabaseURL))
	if n, err := store.ReconcilePending(ctx); err != nil {
		return fmt.Errorf("reconcile pending counts: %w", err)
	} else if n > 0 {
		log.Warn("pending counts reconciled after an unclean stop", "companies", n)
	}

	// The dispatcher, made below, is woken when messages become due.
	var wake atomic.Pointer[delivery.Dispatcher]
	svc := campaign.New(campaign.Config{
		Store:  store,
		Limits: campaign.Limits{MaxPending: cfg.MaxPending},
		Media:  media.New(media.Config{}),
		Logger: log,
		OnQueued: func() {
			if d := wake.Load(); d != nil {
				d.Wake()
			}
		},
	})
	defer svc.Close()
	if n, err := svc.RecoverPreparations(ctx, 0); err != nil {
		return err
	} else if n > 0 {
		log.Warn("campaigns whose preparation was interrupted were failed", "campaigns", n)
	}
	surveys := survey.New(survey.Config{Store: store})
	m := newMetrics()
	m.reg.MustRegister(newBacklogCollector(store.Backlog))

	// The transports and the dispatcher. The SMPP session binds at once and
	// the SMSC may deliver receipts right after the bind, before the
	// dispatcher that stores them exists: they wait for it.
	// Readiness: the database is required; the providers are reported (a
	// provider down leaves messages waiting, the API still takes them).
	checks := []server.Check{{Name: "database", Check: store.Ping}}
	var d *delivery.Dispatcher
	dReady := make(chan struct{})
	dcfg := delivery.Config{Store: store, Logger: log, Observer: m, DrainTimeout: cfg.ShutdownTimeout,
		Instance: cfg.instanceName(os.Hostname), ClaimLease: cfg.ClaimLease, ReceiptTimeout: cfg.ReceiptTimeout}
	if cfg.SMPPAddr != "" {
		smsClient, err := smpp.New(smpp.Config{
			Addr: cfg.SMPPAddr, SystemID: cfg.SMPPSystemID, Password: cfg.SMPPPassword,
			Window: cfg.SMPPWindow, MaxPerSecond: cfg.SMPPMaxRate, ValidityPeriod: cfg.SMPPValidity, Logger: log,
			SubmitIDFormat: cfg.SMPPSubmitIDs, ReceiptIDFormat: cfg.SMPPReceiptIDs,
			ReceiptHandler: func(ctx context.Context, r delivery.Receipt) error {
				select {
				case <-dReady:
					return d.HandleReceipt(ctx, r)
				case <-ctx.Done():
					return ctx.Err()
				}
			},
		})
		if err != nil {
			return fmt.Errorf("SMPP transport: %w", err)
		}
		// Closed after the dispatcher stopped (its sends in flight need the
		// session) and before the database (receipts go on being stored
		// until the session ends).
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
			defer cancel()
			if err := smsClient.Close(ctx); err != nil {
				log.Warn("SMPP close", "err", err)
			}
		}()
		dcfg.SMS = smsClient
		dcfg.SMSConcurrency = paceConcurrency(cfg.SMPPMaxRate)
		checks = append(checks, server.Check{Name: "smsc", Optional: true, Check: func(context.Context) error {
			if !smsClient.Stats().Bound {
				// The address goes to the log only: /readyz answers without a key.
				return &messaging.Error{Code: messaging.Unavailable, Name: messaging.NameServiceUnavailable,
					Message: "no SMPP session is bound", Err: fmt.Errorf("SMSC %s", cfg.SMPPAddr)}
			}
			return nil
		}})
		m.reg.MustRegister(newSMPPCollector(smsClient))
	} else {
		log.Warn("HERALD_SMPP_ADDR is not set: SMS messages stay Pending")
	}
	extra := map[string]http.Handler{
		"/metrics": promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}),
	}
	var chatClient *chat.Client
	if cfg.ChatURL != "" {
		chatClient, err = chat.New(chat.Config{BaseURL: cfg.ChatURL, Token: cfg.ChatToken})
		if err != nil {
			return fmt.Errorf("chat transport: %w", err)
		}
		defer chatClient.Close()
		dcfg.Chat = chatClient
		checks = append(checks, server.Check{Name: "chat", Optional: true, Check: chatClient.Reachable})
		events := newChatEvents(store, m, log)
		dcfg.OnChatFailure = events.OnChatFailure
		extra["/callbacks/chat"] = chat.CallbackHandler(chat.CallbackConfig{
			Secret: cfg.ChatCallbackSecret, Handler: events.Handle, Logger: log,
		})
	} else {
		log.Warn("HERALD_CHAT_URL is not set: chat messages stay Pending")
	}
	if d, err = delivery.New(dcfg); err != nil {
		return fmt.Errorf("dispatcher: %w", err)
	}
	close(dReady)
	wake.Store(d)

	handler := server.New(server.Config{
		Campaigns: svc, Surveys: surveys, AdminToken: cfg.AdminToken, Logger: log,
		Checks: checks, Extra: extra,
	})
	httpSrv := &http.Server{Handler: m.instrument(handler), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}

	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Add(3)
	go func() {
		defer wg.Done()
		if err := d.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			errc <- fmt.Errorf("dispatcher: %w", err)
		}
	}()
	go func() {
		defer wg.Done()
		if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("HTTP server: %w", err)
		}
	}()
	go func() {
		defer wg.Done()
		t := time.NewTicker(recoverEvery)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
				if _, err := svc.RecoverPreparations(runCtx, 0); err != nil && runCtx.Err() == nil {
					log.Error("recovering interrupted preparations", "err", err)
				}
			}
		}
	}()
	log.Info("herald serving", "addr", ln.Addr().String(), "admin_api", cfg.AdminToken != "",
		"smpp", cfg.SMPPAddr != "", "chat", cfg.ChatURL != "")

	if demo {
		if err := setUpDemo(ctx, svc, store, baseURL, sims, stdout); err != nil {
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

	// Stop accepting and finish the requests in flight, then the bulk
	// preparations they started, then the sends in flight.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := httpSrv.Shutdown(shutCtx); err != nil {
		log.Warn("HTTP shutdown", "err", err)
		_ = httpSrv.Close()
	}
	if err := svc.Wait(shutCtx); err != nil {
		log.Warn("preparations still running at shutdown are abandoned", "err", err)
	}
	stopRun() // the dispatcher drains what is in flight
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
