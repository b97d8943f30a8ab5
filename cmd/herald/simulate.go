package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/heraldhq/herald/transport/chatsim"
	"github.com/heraldhq/herald/transport/smscsim"
)

// printStats writes a simulator's final counters as one line: prefix,
// then the counters in JSON, for load programs to read.
func printStats(w io.Writer, prefix string, stats any) error {
	data, err := json.Marshal(stats)
	if err != nil {
		return fmt.Errorf("simulator stats: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s%s\n", prefix, data)
	return err
}

// simulate runs one simulator until ctx ends. When it ends, it writes the
// simulator's counters (printStats).
func simulate(ctx context.Context, which string, args []string, stdout io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("simulate "+which, flag.ContinueOnError)
	fs.SetOutput(stdout)
	switch which {
	case "smsc":
		addr := fs.String("addr", "127.0.0.1:2775", "address to listen on")
		systemID := fs.String("system-id", "", "system_id every bind must carry (empty: any)")
		password := fs.String("password", "", "password every bind must carry (empty: any)")
		delay := fs.Duration("receipt-delay", 0, "time between a submit_sm_resp and its receipt")
		bindRate := fs.Float64("bind-rate", 0, "submit_sm per second each session may send; beyond, ESME_RTHROTTLED (0: no limit)")
		maxBinds := fs.Int("max-binds", 0, "sessions one system_id may bind at once; beyond, ESME_RBINDFAIL (0: no limit)")
		control := fs.String("control", "", "address of the control API (POST /mo sends an SMS from a handset, GET /stats ...);\n"+
			"empty: none. No authentication: use loopback")
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil // the flags were listed
		} else if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		sim := smscsim.New(smscsim.Config{SystemID: *systemID, Password: *password, ReceiptDelay: *delay, Logger: log,
			BindRate: *bindRate, MaxBindsPerSystemID: *maxBinds})
		if err := sim.Start(*addr); err != nil {
			return err
		}
		defer sim.Close()
		fmt.Fprintf(stdout, "SMSC simulator listening on %s (SMPP 3.4); numbers ending 0001/0002/0003 get UNDELIV/EXPIRED/REJECTD receipts\n", sim.Addr())
		if *control != "" {
			ln, err := net.Listen("tcp", *control)
			if err != nil {
				return fmt.Errorf("control API: %w", err)
			}
			srv := &http.Server{Handler: sim.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			fmt.Fprintf(stdout, "control API at http://%s (a handset's SMS: POST /mo {\"from\",\"to\",\"text\"})\n", ln.Addr())
		}
		<-ctx.Done()
		return printStats(stdout, "SMSC simulator stopped: ", sim.Stats())
	case "chat":
		addr := fs.String("addr", "127.0.0.1:8090", "address to listen on")
		token := fs.String("token", "", "X-Auth-Token every request must carry (empty: any)")
		callbackURL := fs.String("callback-url", "", "where callbacks are posted (Herald's /callbacks/chat); empty: none")
		secret := fs.String("callback-secret", "", "key of the callbacks' X-Content-Signature")
		delay := fs.Duration("delivered-delay", 200*time.Millisecond, "time between acceptance and the delivered callback")
		provider := fs.String("provider", "herald", "the provider whose API is simulated:\nherald, vonage, infobip or meta-whatsapp")
		channel := fs.String("channel", "", "the channel simulated (viber or whatsapp; empty: the provider's first); not for herald")
		creds := fs.String("credentials", "", "the service's credentials object (JSON) requests are checked and callbacks signed with;\n"+
			"empty: demo credentials, printed; not for herald, which takes -token and -callback-secret")
		batch := fs.Int("callback-batch", 0, "herald: post batched callbacks of up to this many events a request (0: one event a request)")
		batchWait := fs.Duration("callback-batch-wait", 100*time.Millisecond, "herald, with -callback-batch: how long a due event waits for others")
		rate := fs.Int("rate", 0, "requests a second taken before 429 (0: the simulator's default, 100); not for herald")
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil // the flags were listed
		} else if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		if *provider != "herald" {
			return simulateProvider(ctx, *provider, *addr, *channel, *creds, *callbackURL, *rate, stdout, log)
		}
		sim := chatsim.New(chatsim.Config{Token: *token, CallbackURL: *callbackURL, CallbackSecret: *secret,
			DeliveredDelay: *delay, SeenDelay: *delay, ReplyDelay: *delay, CallbackBatch: *batch, CallbackBatchWait: *batchWait,
			Logger: log})
		if err := sim.Start(*addr); err != nil {
			return err
		}
		defer sim.Close()
		fmt.Fprintf(stdout, "chat provider simulator at %s; numbers ending 0008/0009/0010 are answered with errors 8/9/10\n", sim.URL())
		<-ctx.Done()
		return printStats(stdout, "chat provider simulator stopped: ", sim.Stats())
	}
	return fmt.Errorf("%w: simulate %q: want smsc or chat", errUsage, which)
}

// simulateProvider runs the simulator of a provider other than herald
// until ctx ends. It prints the baseUrl of the chat service that uses it
// (the simulator's URL). Without credentials it makes demo ones and prints them: the chat service
// to test is set up with the same.
func simulateProvider(ctx context.Context, provider, addr, channel, creds, callbackURL string, rate int, stdout io.Writer, log *slog.Logger) error {
	kind, ok := simKindOf(provider)
	if !ok {
		return fmt.Errorf("%w: simulate chat -provider %q: want herald, vonage, infobip or meta-whatsapp", errUsage, provider)
	}
	if channel == "" {
		channel = kind.channel
	}
	raw := json.RawMessage(creds)
	generated := creds == ""
	if generated {
		raw = kind.credentials()
	} else if !json.Valid(raw) {
		return fmt.Errorf("%w: simulate chat -credentials: not JSON", errUsage)
	}
	if rate < 0 {
		return fmt.Errorf("%w: simulate chat -rate %d: want 0 or more", errUsage, rate)
	}
	sim, err := kind.start(ctx, addr, raw, channel, callbackURL, rate, log)
	if err != nil {
		return fmt.Errorf("start the %s simulator: %w", provider, err)
	}
	defer sim.Close()
	fmt.Fprintf(stdout, "%s simulator (%s) at %s; numbers ending 0008/0009/0010 fail: blocked, not on the channel, no suitable device\n",
		provider, channel, sim.URL())
	if generated {
		// Made for this run, to be given to the chat service under test.
		fmt.Fprintf(stdout, "demo credentials: %s\n", raw)
	}
	<-ctx.Done()
	fmt.Fprintf(stdout, "%s simulator stopped\n", provider)
	return nil
}
