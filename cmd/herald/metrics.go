package main

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/smsroute"
)

// metrics implements delivery.Observer with Prometheus collectors, on a
// registry of its own that /metrics serves.
type metrics struct {
	reg        *prometheus.Registry
	messages   *prometheus.CounterVec
	sendTime   *prometheus.HistogramVec
	delivered  *prometheus.HistogramVec
	inFlight   *prometheus.GaugeVec
	capacity   *prometheus.GaugeVec
	receipts   *prometheus.CounterVec
	queueDepth *prometheus.GaugeVec
	batchTime  *prometheus.HistogramVec
	batchSize  *prometheus.HistogramVec
	batchErrs  *prometheus.CounterVec

	chatEvents *prometheus.CounterVec

	webhookEvents *prometheus.CounterVec
	webhookTime   prometheus.Histogram
	webhookLag    prometheus.Histogram

	httpRequests *prometheus.CounterVec
	httpTime     *prometheus.HistogramVec
	httpInFlight prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_messages_total",
			Help: "Messages moved to a status by the dispatcher or by chat callbacks, by channel and status; each move once.",
		}, []string{"channel", "status"}),
		sendTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_submit_duration_seconds",
			Help:    "Time of one send to a provider (SMPP submit until every part was answered; chat send request), by channel and result.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"channel", "result"}),
		delivered: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_delivery_latency_seconds",
			Help: "Time from a message's Sent to its Delivered as the provider reported it (an SMS's last delivery receipt), by channel; once per message.",
			// 0.05 s to 3.6 h.
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 19),
		}, []string{"channel"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_window_in_use",
			Help: "Sends outstanding now (claimed and not recorded yet), by channel.",
		}, []string{"channel"}),
		capacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_window_size",
			Help: "Most sends outstanding at once, by channel.",
		}, []string{"channel"}),
		receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_receipts_total",
			Help: "SMSC delivery receipts handled, by state and outcome.",
		}, []string{"state", "outcome"}),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_queue_depth",
			Help: "Items waiting for a store transaction, by dispatcher queue.",
		}, []string{"queue"}),
		batchTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_store_batch_duration_seconds",
			Help:    "Time of one store call of the dispatcher, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"op"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_store_batch_size",
			Help:    "Items carried by one store call of the dispatcher, by operation.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}, []string{"op"}),
		batchErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_store_batch_errors_total",
			Help: "Failed store calls of the dispatcher, by operation.",
		}, []string{"op"}),
		chatEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_chat_callbacks_total",
			Help: "Chat provider callbacks handled, by kind (status, reply), status (delivered, seen, expired, failed) and outcome (stored: it moved a message or recorded an answer; ignored: it changed nothing, for an unknown message, another channel's, or a late or repeated event; refused: an answer outside the options, answered 400; error: not stored, answered 500).",
		}, []string{"kind", "status", "outcome"}),
		webhookEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_webhook_events_total",
			Help: "Webhook events carried by requests to endpoints, by result (delivered; retry: to be sent again; gave_up).",
		}, []string{"result"}),
		webhookTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_webhook_request_duration_seconds",
			Help:    "Time an endpoint took to answer one webhook request (one event, or a batch).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		webhookLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_webhook_lag_seconds",
			Help:    "Time from a webhook event's creation to the answer that delivered it (the oldest event of a batch).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 20),
		}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_http_requests_total",
			Help: "HTTP requests answered, by part of the server (api, admin, callbacks, health, metrics, other), method and status code.",
		}, []string{"handler", "method", "code"}),
		httpTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by part of the server and method.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"handler", "method"}),
		httpInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "herald_http_requests_in_flight",
			Help: "HTTP requests being answered now.",
		}),
	}
	m.reg.MustRegister(m.messages, m.sendTime, m.delivered, m.inFlight, m.capacity, m.receipts, m.queueDepth,
		m.batchTime, m.batchSize, m.batchErrs, m.chatEvents, m.webhookEvents, m.webhookTime, m.webhookLag,
		m.httpRequests, m.httpTime, m.httpInFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Messages implements delivery.Observer.
func (m *metrics) Messages(ch messaging.Channel, status messaging.MessageStatus, n int) {
	m.messages.WithLabelValues(string(ch), string(status)).Add(float64(n))
}

// Send implements delivery.Observer.
func (m *metrics) Send(ch messaging.Channel, d time.Duration, result string) {
	m.sendTime.WithLabelValues(string(ch), result).Observe(d.Seconds())
}

// Delivered implements delivery.Observer.
func (m *metrics) Delivered(ch messaging.Channel, after time.Duration) {
	m.delivered.WithLabelValues(string(ch)).Observe(after.Seconds())
}

// InFlight implements delivery.Observer.
func (m *metrics) InFlight(ch messaging.Channel, n, capacity int) {
	m.inFlight.WithLabelValues(string(ch)).Set(float64(n))
	m.capacity.WithLabelValues(string(ch)).Set(float64(capacity))
}

// Receipt implements delivery.Observer.
func (m *metrics) Receipt(state string, outcome delivery.ReceiptOutcome) {
	m.receipts.WithLabelValues(state, outcome.String()).Inc()
}

// QueueDepth implements delivery.Observer.
func (m *metrics) QueueDepth(queue string, n int) {
	m.queueDepth.WithLabelValues(queue).Set(float64(n))
}

// WebhookAttempt implements webhook.Observer.
func (m *metrics) WebhookAttempt(delivered, retry, gaveUp int, latency, lag time.Duration) {
	m.webhookTime.Observe(latency.Seconds())
	for _, c := range []struct {
		result string
		n      int
	}{{"delivered", delivered}, {"retry", retry}, {"gave_up", gaveUp}} {
		if c.n > 0 {
			m.webhookEvents.WithLabelValues(c.result).Add(float64(c.n))
		}
	}
	if delivered > 0 {
		m.webhookLag.Observe(lag.Seconds())
	}
}

// Batch implements delivery.Observer.
func (m *metrics) Batch(op string, size int, d time.Duration, err error) {
	m.batchTime.WithLabelValues(op).Observe(d.Seconds())
	m.batchSize.WithLabelValues(op).Observe(float64(size))
	if err != nil {
		m.batchErrs.WithLabelValues(op).Inc()
	}
}

// chatEvent counts one chat provider report, kind "status" (status
// "delivered", "seen", "expired" or "failed"), "reply" or "other".
// Labels only take known values: a provider's strings could grow the
// series without bound.
func (m *metrics) chatEvent(kind, status string, outcome delivery.ChatEventOutcome) {
	m.chatEvents.WithLabelValues(kind, status, string(outcome)).Inc()
}

// countReports returns r, counting the chat reports that go through it.
func (m *metrics) countReports(r delivery.Reporter) delivery.Reporter {
	return &countingReporter{Reporter: r, m: m}
}

// countingReporter counts the chat reports of a Reporter (chatEvent).
type countingReporter struct {
	delivery.Reporter
	m *metrics
}

// ChatStatuses implements delivery.Reporter.
func (c *countingReporter) ChatStatuses(ctx context.Context, ss []delivery.ChatStatus) ([]delivery.ChatEventOutcome, error) {
	out, err := c.Reporter.ChatStatuses(ctx, ss)
	c.countStatuses(ss, nil, out, err)
	return out, err
}

// ChatStatusesOnce implements delivery.OnceReporter; the reports taken
// before (seen) are not counted. ok is false when the Reporter it wraps
// is no OnceReporter.
func (c *countingReporter) ChatStatusesOnce(ctx context.Context, guard any, keys []delivery.ReplayKey,
	ss []delivery.ChatStatus, keyOf []int) ([]bool, []delivery.ChatEventOutcome, bool, error) {
	or, ok := c.Reporter.(delivery.OnceReporter)
	if !ok {
		return nil, nil, false, nil
	}
	seen, out, ok, err := or.ChatStatusesOnce(ctx, guard, keys, ss, keyOf)
	if ok {
		taken := make([]bool, len(ss)) // the reports whose key was seen
		for i := range ss {
			k := i
			if keyOf != nil {
				k = keyOf[i]
			}
			taken[i] = k < len(seen) && seen[k]
		}
		c.countStatuses(ss, taken, out, err)
	}
	return seen, out, ok, err
}

// countStatuses counts the outcome of each status report, but for those
// taken before (taken[i]).
func (c *countingReporter) countStatuses(ss []delivery.ChatStatus, taken []bool, out []delivery.ChatEventOutcome, err error) {
	for i, s := range ss {
		if err == nil && i < len(taken) && taken[i] {
			continue
		}
		o := delivery.ChatEventError
		if err == nil && i < len(out) {
			o = out[i]
		}
		status := "other"
		switch {
		case s.Status == messaging.StatusDelivered:
			status = "delivered"
		case s.Status == messaging.StatusSeen:
			status = "seen"
		case s.Status == messaging.StatusFailed && s.Reason == delivery.ReasonExpired:
			status = "expired"
		case s.Status == messaging.StatusFailed:
			status = "failed"
		}
		c.m.chatEvent("status", status, o)
	}
}

// ChatInbound implements delivery.Reporter.
func (c *countingReporter) ChatInbound(ctx context.Context, in delivery.ChatInbound) (delivery.ChatEventOutcome, error) {
	out, err := c.Reporter.ChatInbound(ctx, in)
	kind := "other"
	if in.Kind == delivery.InboundReply {
		kind = "reply"
	}
	c.m.chatEvent(kind, "", out)
	return out, err
}

// handlerGroupNames are the parts of the server HTTP metrics tell apart:
// a label per path would grow without bound with the ids in paths.
func handlerGroupNames() []string {
	return []string{"api", "admin", "callbacks", "health", "metrics", "other"}
}

// handlerGroup names the part of the server a request path belongs to.
func handlerGroup(path string) string {
	switch {
	case strings.HasPrefix(path, "/api/"):
		return "api"
	case strings.HasPrefix(path, "/admin/"):
		return "admin"
	case strings.HasPrefix(path, "/callbacks/"):
		return "callbacks"
	case path == "/healthz" || path == "/readyz":
		return "health"
	case path == "/metrics":
		return "metrics"
	}
	return "other"
}

// instrument counts and times the requests h answers.
func (m *metrics) instrument(h http.Handler) http.Handler {
	byGroup := map[string]http.Handler{}
	for _, g := range handlerGroupNames() {
		labels := prometheus.Labels{"handler": g}
		byGroup[g] = promhttp.InstrumentHandlerDuration(m.httpTime.MustCurryWith(labels),
			promhttp.InstrumentHandlerCounter(m.httpRequests.MustCurryWith(labels), h))
	}
	return promhttp.InstrumentHandlerInFlight(m.httpInFlight, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		byGroup[handlerGroup(r.URL.Path)].ServeHTTP(w, r)
	}))
}

// smppCollector exports the SMPP session's counters.
type smppCollector struct {
	router                                    *smsroute.Router
	bound, binds, rebinds, bindFail, throttle *prometheus.Desc
	window, submits, submitErrs               *prometheus.Desc
	// By connector.
	connHealthy, connBinds, connBindsUp, connWindow, connSubmits, connErrors *prometheus.Desc
	// By route, connector and result.
	routeSMS *prometheus.Desc
}

// backlogCollector reports the dispatcher's backlog, read from the store
// at each scrape (delivery.Store.Backlog).
type backlogCollector struct {
	backlog func(ctx context.Context) (map[messaging.Channel]int, error)
	desc    *prometheus.Desc
	errs    prometheus.Counter
}

func newBacklogCollector(backlog func(ctx context.Context) (map[messaging.Channel]int, error)) *backlogCollector {
	return &backlogCollector{
		backlog: backlog,
		desc: prometheus.NewDesc("herald_backlog_messages",
			"Messages of InProgress campaigns not handed to a provider yet (Pending or Sending), by channel; fallback SMS count as SMS.",
			[]string{"channel"}, nil),
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_backlog_read_errors_total",
			Help: "Scrapes whose backlog could not be read from the store.",
		}),
	}
}

// Describe implements prometheus.Collector.
func (b *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.desc
	b.errs.Describe(ch)
}

// Collect implements prometheus.Collector: both channels, 0 when none
// wait; nothing but the error count when the store cannot be read within
// two seconds.
func (b *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := b.backlog(ctx)
	if err != nil {
		b.errs.Inc()
	} else {
		for _, c := range []messaging.Channel{messaging.ChannelSMS, messaging.ChannelChat} {
			ch <- prometheus.MustNewConstMetric(b.desc, prometheus.GaugeValue, float64(n[c]), string(c))
		}
	}
	b.errs.Collect(ch)
}

func newSMPPCollector(r *smsroute.Router) *smppCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	c := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"connector"}, nil)
	}
	return &smppCollector{
		router:      r,
		bound:       d("herald_smpp_bound", "1 when the SMPP session is bound."),
		binds:       d("herald_smpp_binds_total", "Successful SMPP binds, the first included."),
		rebinds:     d("herald_smpp_reconnects_total", "Successful SMPP binds after a lost session."),
		bindFail:    d("herald_smpp_bind_failures_total", "Failed dials or refused binds."),
		throttle:    d("herald_smpp_throttled_total", "submit_sm answered ESME_RTHROTTLED or ESME_RMSGQFUL."),
		window:      d("herald_smpp_window_in_use", "submit_sm outstanding now."),
		submits:     d("herald_smpp_submits_total", "submit_sm written, one per part."),
		submitErrs:  d("herald_smpp_submit_errors_total", "submit_sm that failed: error status, timeout or lost connection."),
		connHealthy: c("herald_connector_healthy", "1 when the SMPP connector takes sends in its routes (a session bound, no run of failures)."),
		connBinds:   c("herald_connector_binds", "Sessions this process keeps for the connector (its share of the connector's binds)."),
		connBindsUp: c("herald_connector_binds_up", "The connector's sessions bound now."),
		connWindow:  c("herald_connector_window_in_use", "submit_sm outstanding now on the connector."),
		connSubmits: c("herald_connector_submits_total", "submit_sm written on the connector by its current client."),
		connErrors:  c("herald_connector_errors_total", "Failed submits and binds of the connector's current client."),
		routeSMS: prometheus.NewDesc("herald_route_sms_total",
			"SMS sends by route (its id; default: the SMS no route takes, through the default connector; none: NO_ROUTE), connector "+
				"(empty when none was up) and result (sent, failed, retry), since the process started.",
			[]string{"route", "connector", "result"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (s *smppCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.bound, s.binds, s.rebinds, s.bindFail, s.throttle, s.window, s.submits, s.submitErrs,
		s.connHealthy, s.connBinds, s.connBindsUp, s.connWindow, s.connSubmits, s.connErrors, s.routeSMS} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the figures of every running
// connector, added up.
func (s *smppCollector) Collect(ch chan<- prometheus.Metric) {
	st := s.router.SMPPStats()
	bound := 0.0
	if st.Bound {
		bound = 1
	}
	ch <- prometheus.MustNewConstMetric(s.bound, prometheus.GaugeValue, bound)
	ch <- prometheus.MustNewConstMetric(s.binds, prometheus.CounterValue, float64(st.Binds))
	ch <- prometheus.MustNewConstMetric(s.rebinds, prometheus.CounterValue, float64(st.Rebinds))
	ch <- prometheus.MustNewConstMetric(s.bindFail, prometheus.CounterValue, float64(st.BindFailures))
	ch <- prometheus.MustNewConstMetric(s.throttle, prometheus.CounterValue, float64(st.Throttled))
	ch <- prometheus.MustNewConstMetric(s.window, prometheus.GaugeValue, float64(st.WindowInUse))
	ch <- prometheus.MustNewConstMetric(s.submits, prometheus.CounterValue, float64(st.Submits))
	ch <- prometheus.MustNewConstMetric(s.submitErrs, prometheus.CounterValue, float64(st.SubmitErrors))
	for _, name := range s.router.Names() {
		cs, ok := s.router.ConnectorState(name)
		if !ok {
			continue
		}
		healthy := 0.0
		if cs.Healthy {
			healthy = 1
		}
		ch <- prometheus.MustNewConstMetric(s.connHealthy, prometheus.GaugeValue, healthy, name)
		ch <- prometheus.MustNewConstMetric(s.connBinds, prometheus.GaugeValue, float64(cs.Binds), name)
		ch <- prometheus.MustNewConstMetric(s.connBindsUp, prometheus.GaugeValue, float64(cs.BindsUp), name)
		ch <- prometheus.MustNewConstMetric(s.connWindow, prometheus.GaugeValue, float64(cs.WindowInUse), name)
		ch <- prometheus.MustNewConstMetric(s.connSubmits, prometheus.CounterValue, float64(cs.Submits), name)
		ch <- prometheus.MustNewConstMetric(s.connErrors, prometheus.CounterValue, float64(cs.Errors), name)
	}
	for _, rc := range s.router.RouteCounts() {
		ch <- prometheus.MustNewConstMetric(s.routeSMS, prometheus.CounterValue, float64(rc.Count), rc.Route, rc.Connector, rc.Result)
	}
}
