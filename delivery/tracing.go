package delivery

import (
	"context"
	"sync"
	"time"

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
// sampled request of this process), or else of claim, the span of the
// sampled claim that took it (a bulk campaign's message). Otherwise it
// returns ctx and a nil span: a message outside a sampled trace costs
// one map lookup and no allocation.
func (d *Dispatcher) startSend(ctx context.Context, ch messaging.Channel, m *messaging.Message, claim trace.SpanContext) (context.Context, trace.Span) {
	if d.tracer == nil {
		return ctx, nil
	}
	var sc trace.SpanContext
	ok := false
	if d.cfg.Traces != nil {
		if sc, ok = d.cfg.Traces.Of(m.ID); !ok {
			sc, ok = d.cfg.Traces.Of(m.CampaignID)
		}
	}
	if !ok && claim.IsSampled() {
		sc, ok = claim, true
	}
	if !ok {
		return ctx, nil
	}
	ctx, span := d.tracer.Start(trace.ContextWithRemoteSpanContext(ctx, sc), "delivery.send "+string(ch),
		trace.WithAttributes(attribute.String("herald.message_id", m.ID.String()),
			attribute.String("herald.campaign_id", m.CampaignID.String()),
			attribute.String("herald.channel", string(ch))))
	if ch == messaging.ChannelChat {
		// Its status events come later, as callbacks: they find the
		// send's span here.
		d.cfg.Sends.Remember(ctx, m.ID)
	}
	return ctx, span
}

// withClaim is ctx holding claim, the span context of the claim that took
// a batch of messages, when there is one: what is logged about the
// batch's messages outside their sends carries the claim's trace.
func withClaim(ctx context.Context, claim trace.SpanContext) context.Context {
	if !claim.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, claim)
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

// maxClaimLinks bounds the links of a claim's span: the SDK keeps 128 by
// default.
const maxClaimLinks = 128

// traceClaim records the span of a claim that took messages, started at
// start and ended now, linked to the traces of the requests that created
// them (those Config.Traces kept, each trace once). It is a trace of its
// own, sampled as any root span is, and returns its span context: the
// parent of the sends of messages outside a kept trace. Without a tracer
// it does nothing and returns an empty span context.
func (d *Dispatcher) traceClaim(ctx context.Context, ch messaging.Channel, start time.Time, claimed []messaging.Message) trace.SpanContext {
	if d.tracer == nil {
		return trace.SpanContext{}
	}
	var links []trace.Link
	seen := map[trace.SpanID]bool{}
	for i := range claimed {
		if len(links) == maxClaimLinks {
			break
		}
		sc, ok := d.cfg.Traces.Of(claimed[i].ID)
		if !ok {
			sc, ok = d.cfg.Traces.Of(claimed[i].CampaignID)
		}
		if !ok || seen[sc.SpanID()] {
			continue
		}
		seen[sc.SpanID()] = true
		links = append(links, trace.Link{SpanContext: sc,
			Attributes: []attribute.KeyValue{attribute.String("herald.message_id", claimed[i].ID.String())}})
	}
	_, span := d.tracer.Start(ctx, "delivery.claim "+string(ch),
		trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("herald.channel", string(ch)), attribute.Int("herald.claimed", len(claimed)),
			attribute.String("herald.instance", d.cfg.Instance)))
	span.End()
	return span.SpanContext()
}

// startStatuses opens the span of each status event whose message's
// send Config.Sends kept: a child of the send, in its trace, linked to the
// span of ctx (the callback's request) when there is one. It returns nil
// when there is none to open.
func (e *ChatEvents) startStatuses(ctx context.Context, ss []ChatStatus) []trace.Span {
	if e.tracer == nil || e.sends == nil {
		return nil
	}
	var spans []trace.Span
	caller := trace.SpanContextFromContext(ctx)
	for i, s := range ss {
		sc, ok := e.sends.Of(s.MessageID)
		if !ok {
			continue
		}
		if spans == nil {
			spans = make([]trace.Span, len(ss))
		}
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attribute.String("herald.message_id", s.MessageID.String()),
				attribute.String("herald.status", string(s.Status)), attribute.String("herald.provider_id", s.ProviderID))}
		if caller.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
		}
		if s.Reason != "" {
			opts = append(opts, trace.WithAttributes(attribute.String("herald.reason", string(s.Reason))))
		}
		_, spans[i] = e.tracer.Start(trace.ContextWithRemoteSpanContext(ctx, sc), "delivery.chat_status "+string(s.Status), opts...)
	}
	return spans
}

// endStatuses closes the spans of startStatuses with what became of each
// status event.
func endStatuses(spans []trace.Span, out []ChatEventOutcome, err error) {
	for i, span := range spans {
		if span == nil {
			continue
		}
		switch {
		case err != nil:
			span.RecordError(err)
			span.SetStatus(codes.Error, "not stored")
		case i < len(out):
			span.SetAttributes(attribute.String("herald.outcome", string(out[i])))
		}
		span.End()
	}
}

// startInbound opens the span of what a person sent on a chat channel: a
// child of ctx's span (the callback's request) or a trace of its own,
// linked to the send of the message it replies to when Sends kept it.
func (e *ChatEvents) startInbound(ctx context.Context, in ChatInbound) (context.Context, trace.Span) {
	if e.tracer == nil {
		return ctx, nil
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("herald.inbound_kind", in.Kind), attribute.Int64("herald.chat_service_id", in.ServiceID))}
	if !in.MessageID.IsZero() {
		opts = append(opts, trace.WithAttributes(attribute.String("herald.message_id", in.MessageID.String())))
		if sc, ok := e.sends.Of(in.MessageID); ok {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	return e.tracer.Start(ctx, "delivery.chat_inbound "+in.Kind, opts...)
}

// endInbound closes the span of startInbound with its outcome.
func endInbound(span trace.Span, outcome ChatEventOutcome, err error) {
	if span == nil {
		return
	}
	span.SetAttributes(attribute.String("herald.outcome", string(outcome)))
	if err != nil && outcome == ChatEventError {
		span.RecordError(err)
		span.SetStatus(codes.Error, "not stored")
	}
	span.End()
}
