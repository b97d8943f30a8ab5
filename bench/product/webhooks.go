package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/heraldhq/herald/webhook"
	"github.com/heraldhq/herald/webhook/webhooktest"
)

// receiver is the webhook endpoint of a run with -webhooks on: it runs in
// this process, checks each signature (webhooktest.Receiver) and counts
// the events.
type receiver struct {
	*webhooktest.Receiver
	srv *http.Server
	url string

	mu       sync.Mutex
	events   int
	final    map[string]bool // messages whose Delivered or Failed event came
	allFinal time.Time       // when the last message's final event came
	want     int
}

// startReceiver listens on loopback for events.
func startReceiver(want int) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/events", final: make(map[string]bool, want), want: want}
	r.Receiver = webhooktest.NewReceiver(r.take)
	r.srv = &http.Server{Handler: r.Receiver, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// take counts an event, and a message's final status.
func (r *receiver) take(e webhooktest.Event) {
	var d struct{ MessageID, Status string }
	if e.Type == string(webhook.MessageStatus) {
		_ = json.Unmarshal(e.Data, &d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	if (d.Status == "Delivered" || d.Status == "Failed") && !r.final[d.MessageID] {
		r.final[d.MessageID] = true
		if len(r.final) == r.want {
			r.allFinal = e.Received
		}
	}
}

// register registers the receiver for every event type, with batches of
// up to batch events waiting at most wait when batch is positive, and
// keeps its secret.
func (r *receiver) register(ctx context.Context, api interface {
	API(ctx context.Context, method, path string, body any, want int, out any) error
}, batch int, wait time.Duration) error {
	var hook struct{ Secret string }
	in := map[string]any{"url": r.url, "events": []string{"message.status", "campaign.status", "survey.answered"}}
	if batch > 0 {
		in["batch"] = map[string]any{"maxEvents": batch, "maxWaitMs": wait.Milliseconds()}
	}
	err := api.API(ctx, "POST", "/webhooks", in, http.StatusCreated, &hook)
	if err != nil {
		return fmt.Errorf("register the webhook: %w", err)
	}
	r.SetSecret(hook.Secret)
	return nil
}

// waitAll waits until every message's final event came, and returns when
// the last one did.
func (r *receiver) waitAll(ctx context.Context, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		r.mu.Lock()
		done, at, got := !r.allFinal.IsZero(), r.allFinal, len(r.final)
		r.mu.Unlock()
		if done {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("receiver: %d of %d messages' final events after %v", got, r.want, timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (r *receiver) stop() { _ = r.srv.Close() }
