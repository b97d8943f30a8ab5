package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestLogLinesCarryTheTrace: a line written with the context of a span
// carries its trace_id and span_id; one without a span carries neither.
func TestLogLinesCarryTheTrace(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(traceHandler{slog.NewJSONHandler(&buf, nil)}).With("component", "test")
	ctx, span := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "work")
	log.WarnContext(ctx, "inside")
	span.End()
	log.Warn("outside")

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	var inside, outside map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &inside))
	require.NoError(t, json.Unmarshal(lines[1], &outside))
	require.Equal(t, span.SpanContext().TraceID().String(), inside["trace_id"])
	require.Equal(t, span.SpanContext().SpanID().String(), inside["span_id"])
	require.Equal(t, "test", inside["component"], "the handler's attributes are kept")
	require.NotContains(t, outside, "trace_id")
}
