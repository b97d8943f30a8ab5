package chatprovider

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// InjectTrace writes the W3C trace context of the span ctx holds (the
// traceparent header, and tracestate when it has one) into h, so that the
// provider's side of the request can join the send's trace. Without a
// span in ctx (tracing off, or a send outside a sampled trace) it writes
// nothing and costs one lookup. Every adapter calls it on its send
// requests.
func InjectTrace(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}
