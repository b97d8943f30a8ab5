package infobipsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Delays of the reports of one message, each after the previous one.
const (
	deliveredDelay = 50 * time.Millisecond
	seenDelay      = 100 * time.Millisecond
	replyDelay     = 100 * time.Millisecond
	tick           = 20 * time.Millisecond
	maxBatch       = 100
	maxAttempts    = 6
	timeLayout     = "2006-01-02T15:04:05.000-0700"
)

// event is one report of a message, with the reports after it.
type event struct {
	url      string
	kind     string // "dlr", "seen", "mo"
	item     map[string]any
	due      time.Time
	attempts int
	next     *event
	delay    time.Duration // of next, once this one is taken
}

// outcome is the chain of reports of one accepted destination. Reports
// without a webhook address of the message's own go to the default one,
// read when they are due.
func outcome(m message, to, id string, now time.Time) *event {
	var callbackData, dlrURL, seenURL, tracking string
	if w := m.Webhooks; w != nil {
		callbackData = w.CallbackData
		if w.Delivery != nil {
			dlrURL = w.Delivery.URL
		}
		if w.Seen != nil {
			seenURL = w.Seen.URL
		}
	}
	if m.Options != nil {
		tracking = m.Options.TrackingData
	}
	dlr := map[string]any{
		"bulkId": "", "messageId": id, "to": to, "sender": m.Sender, "sentAt": now.UTC().Format(timeLayout),
		"messageCount": 1, "callbackData": callbackData,
		"price": map[string]any{"pricePerMessage": 0, "currency": "EUR"},
	}
	first := &event{url: dlrURL, kind: "dlr", item: dlr, due: now.Add(deliveredDelay)}
	fail := func(errID int, name, desc string) *event {
		dlr["status"] = status{GroupID: 2, GroupName: "UNDELIVERABLE", ID: 9, Name: "UNDELIVERABLE_NOT_DELIVERED",
			Description: "Message sent not delivered"}
		dlr["error"] = reportError{GroupID: 1, GroupName: "HANDSET_ERRORS", ID: errID, Name: name, Description: desc, Permanent: true}
		return first
	}
	switch {
	case strings.HasSuffix(to, "0008"):
		return fail(8, "USER_BLOCKED", "The person blocked the sender")
	case strings.HasSuffix(to, "0009"):
		return fail(9, "NOT_VIBER_USER", "The number has no Viber account")
	case strings.HasSuffix(to, "0010"):
		return fail(10, "NO_SUITABLE_DEVICE", "The person's device cannot show the message")
	}
	dlr["status"] = status{GroupID: 3, GroupName: "DELIVERED", ID: 5, Name: "DELIVERED_TO_HANDSET", Description: "Message delivered to handset"}
	dlr["error"] = reportError{GroupID: 0, GroupName: "OK", ID: 0, Name: "NO_ERROR", Description: "No Error"}
	seenEv := &event{url: seenURL, kind: "seen", item: map[string]any{
		"messageId": id, "from": m.Sender, "to": to, "sentAt": now.UTC().Format(timeLayout),
		"applicationId": "default", "entityId": "",
	}}
	first.next, first.delay = seenEv, seenDelay
	if c := m.Content; c != nil && c.Type == "LIST" && len(c.Options) > 0 {
		pick := int(to[len(to)-1]-'0') % len(c.Options)
		seenEv.next, seenEv.delay = &event{kind: "mo", item: map[string]any{
			"sender": to, "to": m.Sender, "integrationType": "VIBER", "keyword": "",
			"messageId": newID(), "pairedMessageId": id, "callbackData": callbackData,
			"message": map[string]any{"type": "TEXT", "text": c.Options[pick], "trackingData": tracking},
			"price":   map[string]any{"pricePerMessage": 0, "currency": "EUR"},
		}}, replyDelay
	}
	return first
}

// scheduler posts due reports in batches.
type scheduler struct {
	creds  credentials
	log    *slog.Logger
	client *http.Client

	mu      sync.Mutex
	pending []*event
	// defaultURL tells where reports without an address of their own go,
	// read when they are due (the subscription's address may be set
	// late).
	defaultURL func() string
}

func newScheduler(creds credentials, log *slog.Logger) *scheduler {
	return &scheduler{creds: creds, log: log, client: &http.Client{Timeout: 10 * time.Second}}
}

func (s *scheduler) add(e *event) {
	s.mu.Lock()
	s.pending = append(s.pending, e)
	s.mu.Unlock()
}

func (s *scheduler) run(ctx context.Context) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, b := range s.due(now) {
				s.post(ctx, b)
			}
		}
	}
}

// due takes the due events out of pending, grouped by address and kind
// in batches of at most maxBatch.
func (s *scheduler) due(now time.Time) [][]*event {
	def := s.defaultURL() // before s.mu: the server takes its lock, then s.mu
	s.mu.Lock()
	defer s.mu.Unlock()
	groups := map[string][]*event{}
	var order []string
	keep := s.pending[:0]
	for _, e := range s.pending {
		if e.url == "" {
			e.url = def
		}
		if e.due.After(now) || e.url == "" {
			keep = append(keep, e)
			continue
		}
		k := e.kind + " " + e.url
		if len(groups[k]) == 0 {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	s.pending = keep
	var out [][]*event
	for _, k := range order {
		g := groups[k]
		for len(g) > maxBatch {
			out = append(out, g[:maxBatch])
			g = g[maxBatch:]
		}
		out = append(out, g)
	}
	return out
}

// post sends one batch; on success the reports after its events become
// due, on failure the batch is due again later.
func (s *scheduler) post(ctx context.Context, b []*event) {
	items := make([]map[string]any, len(b))
	now := time.Now()
	for i, e := range b {
		switch e.kind {
		case "dlr":
			e.item["doneAt"] = now.UTC().Format(timeLayout)
		case "seen":
			e.item["seenAt"] = now.UTC().Format(timeLayout)
		case "mo":
			e.item["receivedAt"] = now.UTC().Format(timeLayout)
		}
		items[i] = e.item
	}
	body := map[string]any{"results": items}
	if b[0].kind == "mo" {
		body["messageCount"], body["pendingMessageCount"] = len(items), 0
	}
	raw, _ := json.Marshal(body)
	err := s.send(ctx, b[0].url, raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range b {
		if err == nil {
			if e.next != nil {
				e.next.due = time.Now().Add(e.delay)
				s.pending = append(s.pending, e.next)
			}
			continue
		}
		e.attempts++
		if e.attempts >= maxAttempts {
			s.log.Warn("infobip simulator gave up a report", "kind", e.kind, "err", err)
			continue
		}
		e.due = time.Now().Add(time.Duration(1<<e.attempts) * 50 * time.Millisecond)
		s.pending = append(s.pending, e)
	}
}

func (s *scheduler) send(ctx context.Context, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("report request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(s.creds.CallbackUsername, s.creds.CallbackPassword)
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("post report: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("report answered %d", resp.StatusCode)
	}
	return nil
}
