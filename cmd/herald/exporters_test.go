package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// TestTracingExporterChoice: tracing is off without OTEL_TRACES_EXPORTER
// or an OTLP endpoint, and with none; console, otlp and an endpoint alone
// turn it on; an unknown exporter or protocol is an error naming it.
func TestTracingExporterChoice(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		on   bool
		err  string
	}{
		{"nothing set", nil, false, ""},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true, ""},
		{"otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"an endpoint alone", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{"grpc", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{"zipkin", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, `OTEL_TRACES_EXPORTER="zipkin"`},
		{"http/json", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false,
			`OTEL_EXPORTER_OTLP_PROTOCOL="http/json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := newTracing(t.Context(), func(k string) string { return tc.env[k] }, io.Discard, "test")
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			defer func() { _ = tr.shutdown(context.Background()) }()
			require.Equal(t, tc.on, tr.on)
			require.Equal(t, tc.on, tr.tracer() != nil, "the library gets a provider only when tracing is on")
		})
	}
}

// TestTracingOTLPHTTP: with an OTLP endpoint over HTTP, a span reaches
// the collector at /v1/traces, with the service's name.
func TestTracingOTLPHTTP(t *testing.T) {
	var (
		mu   sync.Mutex
		reqs []*coltrace.ExportTraceServiceRequest
	)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		reqs = append(reqs, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	exported(t, func() []*coltrace.ExportTraceServiceRequest {
		mu.Lock()
		defer mu.Unlock()
		return reqs
	})
}

// traceService is a test collector's OTLP trace service over gRPC.
type traceService struct {
	coltrace.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*coltrace.ExportTraceServiceRequest
}

// Export keeps the request.
func (s *traceService) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// TestTracingOTLPGRPC: with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, a span
// reaches the collector's gRPC trace service.
func TestTracingOTLPGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	svc := &traceService{}
	coltrace.RegisterTraceServiceServer(srv, svc)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	exported(t, func() []*coltrace.ExportTraceServiceRequest {
		svc.mu.Lock()
		defer svc.mu.Unlock()
		return svc.reqs
	})
}

// exported builds tracing from the process's environment, ends one span,
// shuts tracing down (which flushes it) and checks that got holds that
// span, from service herald.
func exported(t *testing.T, got func() []*coltrace.ExportTraceServiceRequest) {
	t.Helper()
	tr, err := newTracing(t.Context(), os.Getenv, io.Discard, "test")
	require.NoError(t, err)
	require.True(t, tr.on)
	_, span := tr.provider.Tracer("test").Start(t.Context(), "exported span")
	span.End()
	require.NoError(t, tr.shutdown(t.Context()))

	var names []string
	service := ""
	for _, req := range got() {
		for _, rs := range req.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names = append(names, s.GetName())
				}
			}
		}
	}
	require.Equal(t, []string{"exported span"}, names)
	require.Equal(t, "herald", service)
}
