package delivery_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// spanCtx returns a context holding a span context with trace id n,
// sampled or not.
func spanCtx(n byte, sampled bool) context.Context {
	cfg := trace.SpanContextConfig{TraceID: trace.TraceID{n}, SpanID: trace.SpanID{n}}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(cfg))
}

func TestTracesKeepSampledAndForgetOldest(t *testing.T) {
	tr := delivery.NewTraces(2)
	a, b, c, d := messaging.ID{1}, messaging.ID{2}, messaging.ID{3}, messaging.ID{4}
	tr.Remember(spanCtx(9, false), d)
	_, ok := tr.Of(d)
	require.False(t, ok, "an unsampled request is not kept")
	tr.Remember(spanCtx(1, true), a)
	tr.Remember(spanCtx(2, true), b)
	sc, ok := tr.Of(a)
	require.True(t, ok)
	require.Equal(t, trace.TraceID{1}, sc.TraceID())
	tr.Remember(spanCtx(3, true), c)
	_, ok = tr.Of(a)
	require.False(t, ok, "the oldest is forgotten beyond the bound")
	sc, ok = tr.Of(c)
	require.True(t, ok)
	require.Equal(t, trace.TraceID{3}, sc.TraceID())
	var none *delivery.Traces
	none.Remember(spanCtx(1, true), a)
	_, ok = none.Of(a)
	require.False(t, ok, "a nil Traces keeps nothing")
}
