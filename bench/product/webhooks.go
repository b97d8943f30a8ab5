package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// receiver is the webhook endpoint of a run with -webhooks on: it runs in
// this process, checks each request's signature and counts the events.
type receiver struct {
	srv *http.Server
	url string

	mu       sync.Mutex
	secret   string
	events   int
	bad      int
	final    map[string]bool // messages whose Delivered or Failed event came
	last     time.Time       // when the last event came
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
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	secret := r.secret
	r.mu.Unlock()
	if webhook.Verify(secret, req.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.DefaultTolerance) != nil {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			MessageID string `json:"messageId"`
			Status    string `json:"status"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	now := time.Now()
	r.mu.Lock()
	r.events++
	r.last = now
	if ev.Type == string(webhook.MessageStatus) && (ev.Data.Status == "Delivered" || ev.Data.Status == "Failed") && !r.final[ev.Data.MessageID] {
		r.final[ev.Data.MessageID] = true
		if len(r.final) == r.want {
			r.allFinal = now
		}
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// register registers the receiver for every event type and keeps its
// secret.
func (r *receiver) register(ctx context.Context, api interface {
	API(ctx context.Context, method, path string, body any, want int, out any) error
}) error {
	var hook struct{ Secret string }
	err := api.API(ctx, "POST", "/webhooks", map[string]any{"url": r.url,
		"events": []string{"message.status", "campaign.status", "survey.answered"}}, http.StatusCreated, &hook)
	if err != nil {
		return fmt.Errorf("register the webhook: %w", err)
	}
	r.mu.Lock()
	r.secret = hook.Secret
	r.mu.Unlock()
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
