package smpp

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/delivery"
)

// tracerName names the SMPP client's spans.
const tracerName = "github.com/heraldhq/herald/transport/smpp"

// maxTracedParts bounds the submitted parts whose span a receipt may
// still find.
const maxTracedParts = 16384

// partSpans keeps the span context of the submit of each traced part, by
// the SMSC's message id, for its receipt. It forgets the oldest beyond
// maxTracedParts.
type partSpans struct {
	mu   sync.Mutex
	byID map[string]trace.SpanContext
	ring []string
	next int
}

// add keeps sc for the parts ids.
func (p *partSpans) add(sc trace.SpanContext, ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byID == nil {
		p.byID = make(map[string]trace.SpanContext)
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, ok := p.byID[id]; ok {
			continue
		}
		if len(p.ring) < maxTracedParts {
			p.ring = append(p.ring, id)
		} else {
			delete(p.byID, p.ring[p.next])
			p.ring[p.next] = id
			p.next = (p.next + 1) % maxTracedParts
		}
		p.byID[id] = sc
	}
}

// of returns the span context kept for part id.
func (p *partSpans) of(id string) (trace.SpanContext, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sc, ok := p.byID[id]
	return sc, ok
}

// startSubmit opens the span of a Send's submit_sm PDUs when ctx holds a
// recording span (the message's trace is sampled); else it returns nil
// and costs nothing.
func (c *Client) startSubmit(ctx context.Context, sms delivery.SMS) (context.Context, trace.Span) {
	if c.tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	return c.tracer.Start(ctx, "smpp submit_sm", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("herald.message_id", sms.MessageID.String()),
			attribute.String("smpp.connector", c.cfg.Connector), attribute.String("smpp.smsc", c.cfg.Addr),
			attribute.String("smpp.bind_type", c.cfg.BindType.String()), attribute.Int("smpp.binds", c.cfg.Binds)))
}

// endSubmit closes the span of a Send, with the bind (its index, from 0)
// each part submitted went over. Its parts were kept for their receipts
// as their submit_sm_resp came (conn.finish).
func (c *Client) endSubmit(span trace.Span, res delivery.SMSResult, binds []int, err error) {
	if span == nil {
		return
	}
	if len(binds) > 0 {
		span.SetAttributes(attribute.IntSlice("smpp.bind", binds))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "submit_sm failed")
	} else {
		span.SetAttributes(attribute.StringSlice("smpp.message_ids", res.PartIDs))
	}
	span.End()
}

// startReceipt opens the span of a receipt whose part was submitted in a
// traced Send: a child of that submit, in its trace, and linked to it.
func (c *Client) startReceipt(ctx context.Context, r delivery.Receipt) (context.Context, trace.Span) {
	if c.tracer == nil {
		return ctx, nil
	}
	sc, ok := c.spans.of(r.ProviderID)
	if !ok {
		return ctx, nil
	}
	return c.tracer.Start(trace.ContextWithRemoteSpanContext(ctx, sc), "smpp deliver_sm receipt",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithLinks(trace.Link{SpanContext: sc}),
		trace.WithAttributes(attribute.String("smpp.message_id", r.ProviderID), attribute.String("smpp.state", r.State),
			attribute.String("smpp.connector", c.cfg.Connector)))
}

// startInbound opens the span of a mobile-originated part: a trace of its
// own, sampled as any root span is. It names neither number nor text
// (personal data), only the part's place in its message.
func (c *Client) startInbound(ctx context.Context, p delivery.InboundPart) (context.Context, trace.Span) {
	if c.tracer == nil {
		return ctx, nil
	}
	return c.tracer.Start(ctx, "smpp deliver_sm inbound", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("smpp.connector", c.cfg.Connector), attribute.Int("smpp.part_ref", p.Ref),
			attribute.Int("smpp.part_count", p.Count), attribute.Int("smpp.part_seq", p.Seq)))
}

// endInbound closes the span of startInbound; err is the handler's.
func endInbound(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "not stored")
	}
	span.End()
}
