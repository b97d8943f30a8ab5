package server

import (
	"net/http"

	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/messaging"
)

// tracerName names the server's spans.
const tracerName = "github.com/heraldhq/herald/server"

// statusRecorder keeps the status code a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader keeps code and passes it on.
func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write counts as a 200 when no status was written.
func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b) //nolint:wrapcheck // a ResponseWriter passes errors through as they are
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// traced opens one server span per routed request, named by the route's
// template ("POST /api/v1/sms/send"), continuing the caller's trace when
// the request carries traceparent. Without Config.Tracer it is not
// installed.
func (s *server) traced(next http.Handler) http.Handler {
	tracer := s.tracer.Tracer(tracerName)
	prop := otel.GetTextMapPropagator()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.URL.Path
		if cur := mux.CurrentRoute(r); cur != nil {
			if tpl, err := cur.GetPathTemplate(); err == nil {
				route = tpl
			}
		}
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route)))
		defer span.End()
		if !span.IsRecording() {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(ctx))
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.response.status_code", rec.status))
		if rec.status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(rec.status))
		}
	})
}

// rememberTrace keeps the request's span context for the messages of
// campaign id, so that their sends join the request's trace.
func (s *server) rememberTrace(r *http.Request, id messaging.ID) {
	if s.traces != nil {
		s.traces.Remember(r.Context(), id)
	}
}
