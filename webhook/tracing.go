package webhook

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the sender's spans.
const tracerName = "github.com/heraldhq/herald/webhook"

// startAttempt opens the span of one attempt to endpoint e carrying ds,
// a trace of its own (sampled as any root span is). Without a tracer it
// returns ctx and a nil span.
func (s *Sender) startAttempt(ctx context.Context, e Endpoint, ds []Delivery) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	tries := 0
	for _, d := range ds {
		tries = max(tries, d.Attempts)
	}
	attrs := []attribute.KeyValue{attribute.String("herald.webhook_id", e.ID.String()),
		attribute.String("herald.company_id", e.CompanyID.String()), attribute.Int("herald.events", len(ds)),
		attribute.Int("herald.attempt", tries+1)}
	if len(ds) == 1 {
		ev := ds[0].Event
		attrs = append(attrs, attribute.String("herald.event_id", ev.ID.String()),
			attribute.String("herald.event_type", string(ev.Type)), attribute.String("herald.subject", ev.Subject.String()))
	}
	return s.tracer.Start(ctx, "webhook.deliver", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrs...))
}

// endAttempt closes the span of an attempt with its answer.
func endAttempt(span trace.Span, status int, err error) {
	if span == nil {
		return
	}
	switch {
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, "no answer")
	case status < 200 || status >= 300:
		span.SetStatus(codes.Error, "not delivered")
	}
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	span.End()
}
