package smpp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

// TestSubmitSpansNameConnectorAndBind: each Send inside a sampled span
// opens a submit_sm span, a child of it, naming the connector and the
// bind each part went over; the binds named add up to what each session
// submitted. A Send outside a span opens none.
func TestSubmitSpansNameConnectorAndBind(t *testing.T) {
	srv := startSim(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c := newClient(t, srv.Addr(), nil, withBinds(3), func(cfg *smpp.Config) {
		cfg.Tracer = tp
		cfg.Connector = "east"
	})
	waitBindsUp(t, c, 3)

	const n = 30
	parents := map[string]bool{}
	for i := range n {
		ctx, parent := tp.Tracer("test").Start(context.Background(), "send")
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Send(ctx, delivery.SMS{From: "Herald", To: fmt.Sprintf("4477009%05d", i), Text: fmt.Sprintf("traced %d", i)})
		cancel()
		parent.End()
		require.NoError(t, err)
		parents[parent.SpanContext().SpanID().String()] = true
	}
	_, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900999", Text: "untraced"})
	require.NoError(t, err)

	perBind := make([]uint64, 3)
	submits := 0
	for _, s := range rec.Ended() {
		if s.Name() != "smpp submit_sm" {
			continue
		}
		submits++
		require.True(t, parents[s.Parent().SpanID().String()], "a child of its Send's span")
		attrs := map[attribute.Key]attribute.Value{}
		for _, a := range s.Attributes() {
			attrs[a.Key] = a.Value
		}
		require.Equal(t, "east", attrs["smpp.connector"].AsString())
		require.Equal(t, int64(3), attrs["smpp.binds"].AsInt64())
		binds := attrs["smpp.bind"].AsInt64Slice()
		require.Len(t, binds, 1, "one part, one bind")
		require.Less(t, binds[0], int64(3))
		perBind[binds[0]]++
	}
	require.Equal(t, n, submits, "one span for each traced Send, none for the other")
	st := c.State()
	var total uint64
	for i, ss := range st.Sessions {
		require.LessOrEqual(t, perBind[i], ss.Submits, "bind %d: the spans name no more submits than it carried", i)
		require.GreaterOrEqual(t, perBind[i]+1, ss.Submits, "bind %d: at most the untraced submit is not named", i)
		total += ss.Submits
	}
	require.Equal(t, uint64(n+1), total)
}
