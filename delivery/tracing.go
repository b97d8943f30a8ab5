package delivery

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/messaging"
)

// tracerName names the dispatcher's spans.
const tracerName = "github.com/heraldhq/herald/delivery"

// Traces keeps, in this process's memory, the span context of the request
// that created each message, by message id or by campaign id (a direct
// send's campaign holds its request's messages), so that the dispatcher's spans of the message
// join the request's trace. Only sampled span contexts are kept. It holds
// the latest Max of them: an older one is forgotten, and its message is
// then sent in a trace of its own. A message sent by another process
// sharing the store starts a trace of its own too. Safe for concurrent
// use; the zero value keeps nothing: use NewTraces.
type Traces struct {
	mu   sync.Mutex
	max  int
	byID map[messaging.ID]trace.SpanContext
	ring []messaging.ID // in the order kept, to forget the oldest
	next int
}

// NewTraces returns a Traces keeping the span contexts of up to max
// messages (65536 when max <= 0).
func NewTraces(max int) *Traces {
	if max <= 0 {
		max = 65536
	}
	return &Traces{max: max, byID: make(map[messaging.ID]trace.SpanContext), ring: make([]messaging.ID, 0, min(max, 1024))}
}

// Remember keeps the span context of ctx for ids (messages or campaigns)
// when it is sampled; otherwise it does nothing.
func (t *Traces) Remember(ctx context.Context, ids ...messaging.ID) {
	sc := trace.SpanContextFromContext(ctx)
	if t == nil || t.max == 0 || !sc.IsSampled() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		if _, ok := t.byID[id]; ok {
			continue
		}
		if len(t.ring) < t.max {
			t.ring = append(t.ring, id)
		} else {
			delete(t.byID, t.ring[t.next])
			t.ring[t.next] = id
			t.next = (t.next + 1) % t.max
		}
		t.byID[id] = sc
	}
}

// Of returns the span context kept for id, if any.
func (t *Traces) Of(id messaging.ID) (trace.SpanContext, bool) {
	if t == nil {
		return trace.SpanContext{}, false
	}
	t.mu.Lock()
	sc, ok := t.byID[id]
	t.mu.Unlock()
	return sc, ok
}

// startSend opens the span of one message's send, a child of the span of
// the request that created the message, when Config.Traces kept it (a
// sampled request of this process). Otherwise it returns ctx and a nil
// span: a message outside a sampled trace costs one map lookup and no
// allocation.
func (d *Dispatcher) startSend(ctx context.Context, ch messaging.Channel, m *messaging.Message) (context.Context, trace.Span) {
	if d.tracer == nil || d.cfg.Traces == nil {
		return ctx, nil
	}
	sc, ok := d.cfg.Traces.Of(m.ID)
	if !ok {
		sc, ok = d.cfg.Traces.Of(m.CampaignID)
	}
	if !ok {
		return ctx, nil
	}
	ctx, span := d.tracer.Start(trace.ContextWithRemoteSpanContext(ctx, sc), "delivery.send "+string(ch),
		trace.WithAttributes(attribute.String("herald.message_id", m.ID.String()),
			attribute.String("herald.campaign_id", m.CampaignID.String()),
			attribute.String("herald.channel", string(ch))))
	return ctx, span
}

// endSend closes the span of a send with its result.
func endSend(span trace.Span, result string) {
	if span == nil {
		return
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.String("herald.result", result))
		if result == resultFailed {
			span.SetStatus(codes.Error, result)
		}
	}
	span.End()
}
