// Command webhookreceiver is a Herald webhook endpoint for trying events
// out: it checks each request's signature with the endpoint's secret,
// prints each event on one line (one a request, or several in a batch's
// {"events": [...]}), and answers 204 (401 when the signature
// does not verify, so Herald tries again later).
//
//	go run ./examples/webhookreceiver -addr 127.0.0.1:9000 -secret whsec_...
//
// Register it with POST /api/v1/webhooks, url http://127.0.0.1:9000/events
// (plain http to this machine is allowed in demo mode, or with
// HERALD_WEBHOOK_ALLOW=loopback). The secret is in the registration's
// answer; until it is given, the receiver prints requests as unverified.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/heraldhq/herald/webhook"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "host:port to listen on")
	secret := flag.String("secret", os.Getenv("HERALD_WEBHOOK_SECRET"), "the endpoint's signing secret (default $HERALD_WEBHOOK_SECRET)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s/events\n", ln.Addr())
	if err := serve(ctx, ln, *secret, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// serve answers Herald's requests on ln until ctx ends, printing one
// line per event to out.
func serve(ctx context.Context, ln net.Listener, secret string, out io.Writer) error {
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		verdict := "unverified (no -secret)"
		if secret != "" {
			if err := webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.DefaultTolerance); err != nil {
				mu.Lock()
				fmt.Fprintf(out, "refused: %v\n", err)
				mu.Unlock()
				http.Error(w, "bad signature", http.StatusUnauthorized)
				return
			}
			verdict = "verified"
		}
		// One event, or a batch ({"events": [...]}) of an endpoint
		// registered with batch settings: the same events, in order.
		evs, err := webhook.ParseEvents(body)
		if err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, ev := range evs {
			fmt.Fprintf(out, "%s %s %s %s\n", verdict, ev.ID, ev.Type, ev.Data)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
