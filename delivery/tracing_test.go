package delivery_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
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

// spansNamed returns the ended spans of rec called name.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// attrOf returns the value of attribute key of s, as text.
func attrOf(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

// TestTracedClaimSendAndStatuses: a claim is a span of its own linked to
// the request that created its messages; each send is a child of that
// request, or of its claim when no request of this process kept it (a
// bulk campaign's); a chat status event is a child of its send, linked to
// its callback's request; a status whose send was not kept opens no span;
// a reply is a span of its callback linked to the send it answers.
func TestTracedClaimSendAndStatuses(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	s := memstore.New()
	w := newWorld(t, s)
	traces, sends := delivery.NewTraces(0), delivery.NewTraces(0)
	cfg := fastConfig(s)
	cfg.Chat, cfg.Tracer, cfg.Traces, cfg.Sends = &fakeChat{}, tp, traces, sends
	d, err := delivery.New(cfg)
	require.NoError(t, err)

	c, msgs := w.campaign(spec{channel: messaging.ChannelChat, phones: phones(3, 100), status: messaging.CampaignReady})
	other, untraced := w.campaign(spec{channel: messaging.ChannelChat, phones: phones(1, 200)})
	rctx, request := tp.Tracer("test").Start(t.Context(), "request")
	traces.Remember(rctx, c.ID)
	request.End()
	w.transition(c, messaging.CampaignReady, messaging.CampaignInProgress)
	run(t, d)
	for _, id := range []messaging.ID{c.ID, other.ID} {
		w.waitCampaign(id, "sent", func(c messaging.Campaign) bool { return c.Counts.Sent == c.Planned })
	}

	claims := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	linked := false
	for _, sp := range spansNamed(rec, "delivery.claim Chat") {
		require.False(t, sp.Parent().IsValid(), "a claim is a trace of its own")
		claims[sp.SpanContext().SpanID()] = sp
		for _, l := range sp.Links() {
			linked = linked || l.SpanContext.SpanID() == request.SpanContext().SpanID()
		}
	}
	sendSpans := spansNamed(rec, "delivery.send Chat")
	require.Len(t, sendSpans, len(msgs)+len(untraced), "every send of a sampled trace")
	sendOf := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range sendSpans {
		switch attrOf(sp, "herald.campaign_id") {
		case c.ID.String():
			require.Equal(t, request.SpanContext().SpanID(), sp.Parent().SpanID(), "a kept request's send is its child")
		case other.ID.String():
			claim, ok := claims[sp.Parent().SpanID()]
			require.True(t, ok, "a send outside a kept request is a child of the claim that took it")
			require.Equal(t, claim.SpanContext().TraceID(), sp.SpanContext().TraceID())
		default:
			t.Fatalf("a send of no campaign of the test: %s", attrOf(sp, "herald.campaign_id"))
		}
		sendOf[attrOf(sp, "herald.message_id")] = sp
	}
	require.True(t, linked, "a claim links to the request of the messages it took")

	ev := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: s, Tracer: tp, Sends: sends})
	// A process that did not keep the send (another one, or after the
	// bound) opens no span for its status.
	forgetful := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: s, Tracer: tp, Sends: delivery.NewTraces(0)})
	cctx, callback := tp.Tracer("test").Start(t.Context(), "callback")
	out, err := ev.ChatStatuses(cctx, []delivery.ChatStatus{{MessageID: msgs[0].ID, Status: messaging.StatusDelivered}})
	require.NoError(t, err)
	require.Equal(t, []delivery.ChatEventOutcome{delivery.ChatEventStored}, out)
	out, err = forgetful.ChatStatuses(cctx, []delivery.ChatStatus{{MessageID: untraced[0].ID, Status: messaging.StatusDelivered}})
	callback.End()
	require.NoError(t, err)
	require.Equal(t, []delivery.ChatEventOutcome{delivery.ChatEventStored}, out)
	statuses := spansNamed(rec, "delivery.chat_status Delivered")
	require.Len(t, statuses, 1, "a status whose send was not kept opens no span")
	st := statuses[0]
	send := sendOf[msgs[0].ID.String()]
	require.Equal(t, send.SpanContext().TraceID(), st.SpanContext().TraceID())
	require.Equal(t, send.SpanContext().SpanID(), st.Parent().SpanID())
	require.Equal(t, msgs[0].ID.String(), attrOf(st, "herald.message_id"))
	require.Equal(t, "stored", attrOf(st, "herald.outcome"))
	require.Len(t, st.Links(), 1)
	require.Equal(t, callback.SpanContext().SpanID(), st.Links()[0].SpanContext.SpanID())

	// What a person sends is a span of the callback's request, linked to
	// the send of the message it replies to.
	_, err = ev.ChatInbound(cctx, delivery.ChatInbound{ServiceID: w.chat.ID, Kind: delivery.InboundReply, MessageID: msgs[1].ID,
		Phone: msgs[1].Phone, OptionIndex: 0})
	require.NoError(t, err)
	replies := spansNamed(rec, "delivery.chat_inbound reply")
	require.Len(t, replies, 1)
	require.Equal(t, callback.SpanContext().SpanID(), replies[0].Parent().SpanID())
	require.Equal(t, msgs[1].ID.String(), attrOf(replies[0], "herald.message_id"))
	require.Len(t, replies[0].Links(), 1)
	require.Equal(t, sendOf[msgs[1].ID.String()].SpanContext().SpanID(), replies[0].Links()[0].SpanContext.SpanID())
}
