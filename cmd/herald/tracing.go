package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// tracing is the tracer provider herald serve built from the OTEL_*
// variables, and the way to flush it on exit.
type tracing struct {
	provider trace.TracerProvider
	shutdown func(context.Context) error
	// on is false when no exporter was chosen: the provider is the no-op
	// one and spans cost next to nothing.
	on bool
}

// newTracing builds the tracer provider the standard OpenTelemetry
// variables ask for. Tracing is off unless OTEL_TRACES_EXPORTER names an
// exporter or an OTLP endpoint is set. The sampler follows
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (read by the SDK), the
// service name OTEL_SERVICE_NAME (herald by default). console writes the
// spans as JSON lines to console.
func newTracing(ctx context.Context, getenv func(string) string, console io.Writer, version string) (*tracing, error) {
	off := &tracing{provider: noop.NewTracerProvider(), shutdown: func(context.Context) error { return nil }}
	kind := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	endpoint := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	if kind == "" && endpoint {
		kind = "otlp"
	}
	var exp sdktrace.SpanExporter
	var err error
	switch kind {
	case "", "none":
		return off, nil
	case "console":
		exp, err = stdouttrace.New(stdouttrace.WithWriter(console))
	case "otlp":
		proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		if proto == "" {
			proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		}
		switch proto {
		case "", "http/protobuf":
			exp, err = otlptracehttp.New(ctx)
		case "grpc":
			exp, err = otlptracegrpc.New(ctx)
		default:
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want http/protobuf or grpc", proto)
		}
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp, console or none", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing exporter %s: %w", kind, err)
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "herald"
	}
	// The variables (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME) win over
	// the defaults given here.
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName(name), semconv.ServiceVersion(version)),
		resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &tracing{provider: tp, shutdown: tp.Shutdown, on: true}, nil
}

// tracer is the provider to give the library's packages: nil when
// tracing is off, so that they skip their spans altogether.
func (t *tracing) tracer() trace.TracerProvider {
	if !t.on {
		return nil
	}
	return t.provider
}

// install makes t the process's tracer provider and W3C trace context
// (traceparent, tracestate) with baggage its propagation format.
func (t *tracing) install() {
	otel.SetTracerProvider(t.provider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
}

// traceHandler adds trace_id and span_id to the log lines written inside
// a recording span.
type traceHandler struct{ slog.Handler }

// Handle adds the span's ids, when ctx holds a valid one, then passes the
// record on.
func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	if err := h.Handler.Handle(ctx, r); err != nil {
		return fmt.Errorf("log with trace: %w", err)
	}
	return nil
}

// WithAttrs keeps the wrapper around the handler with attrs.
func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the wrapper around the handler with a group.
func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

// preparationSpans is herald serve's campaign.Config.OnPrepare: one span
// for each preparation of a campaign's messages, a child of the request
// that asked for it, ended when the messages are written. A direct send's
// request is kept in traces before its messages become due: the
// dispatcher may claim them before the request is answered.
func preparationSpans(tp trace.TracerProvider, traces *delivery.Traces) func(ctx context.Context, c messaging.Campaign, messages int) func(error) {
	tracer := tp.Tracer("github.com/heraldhq/herald/campaign")
	return func(ctx context.Context, c messaging.Campaign, messages int) func(error) {
		if c.Hidden {
			traces.Remember(ctx, c.ID)
		}
		_, span := tracer.Start(ctx, "campaign.prepare", trace.WithAttributes(attribute.String("herald.campaign_id", c.ID.String()),
			attribute.String("herald.company_id", c.CompanyID.String()), attribute.String("herald.channel", string(c.Channel)),
			attribute.String("herald.campaign_mode", string(c.Mode)), attribute.Int("herald.messages", messages)))
		if !span.IsRecording() {
			span.End()
			return nil
		}
		return func(err error) {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, "preparation failed")
			}
			span.End()
		}
	}
}
