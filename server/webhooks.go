package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// webhookInput is the body of POST /webhooks.
type webhookInput struct {
	URL    string      `json:"url"`
	Events []string    `json:"events"`
	Batch  *batchInput `json:"batch"`
}

// batchInput is an endpoint's batch settings as given; absent, one event
// a request.
type batchInput struct {
	MaxEvents *int `json:"maxEvents"`
	MaxWaitMs *int `json:"maxWaitMs"`
}

// batchJSON is an endpoint's batch settings as the API shows them.
type batchJSON struct {
	MaxEvents int   `json:"maxEvents"`
	MaxWaitMs int64 `json:"maxWaitMs"`
}

// webhookJSON is an endpoint as the API shows it. Secret is shown when
// the endpoint is created and when its secret is rotated, never again.
type webhookJSON struct {
	ID                      string     `json:"id"`
	URL                     string     `json:"url"`
	Events                  []string   `json:"events"`
	Batch                   *batchJSON `json:"batch"`
	CreatedAt               timestamp  `json:"createdAt"`
	Enabled                 bool       `json:"enabled"`
	DisabledAt              *timestamp `json:"disabledAt"`
	DisabledReason          string     `json:"disabledReason,omitempty"`
	Secret                  string     `json:"secret,omitempty"`
	PreviousSecretExpiresAt *timestamp `json:"previousSecretExpiresAt,omitempty"`
}

func webhookOut(e webhook.Endpoint, withSecret bool, now time.Time) webhookJSON {
	out := webhookJSON{ID: e.ID.String(), URL: e.URL, Events: make([]string, len(e.Events)), CreatedAt: ts(e.CreatedAt),
		Enabled: e.DisabledAt == nil, DisabledAt: tsOrNull(e.DisabledAt), DisabledReason: e.DisabledReason}
	for i, t := range e.Events {
		out.Events[i] = string(t)
	}
	if e.Batch.Batched() {
		out.Batch = &batchJSON{MaxEvents: e.Batch.MaxEvents, MaxWaitMs: e.Batch.MaxWait.Milliseconds()}
	}
	if withSecret {
		out.Secret = e.Secret
	}
	if e.PreviousSecret != "" && now.Before(e.PreviousUntil) {
		out.PreviousSecretExpiresAt = tsOrNull(&e.PreviousUntil)
	}
	return out
}

// createWebhook answers POST /webhooks: 201 with the endpoint and its
// secret, shown this once.
func (s *server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var in webhookInput
	if err := s.decodeBody(w, r, &in); err != nil {
		return err
	}
	reg := webhook.Registration{URL: in.URL, Events: in.Events}
	if in.Batch != nil {
		reg.Batch = &webhook.BatchInput{MaxEvents: in.Batch.MaxEvents, MaxWaitMs: in.Batch.MaxWaitMs}
	}
	e, err := s.webhooks.Register(r.Context(), companyOf(r), reg)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, webhookOut(e, true, time.Now()))
	return nil
}

// listWebhooks answers GET /webhooks: the company's endpoints, oldest
// first, without their secrets.
func (s *server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	es, err := s.webhooks.List(r.Context(), companyOf(r))
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]webhookJSON, len(es))
	for i, e := range es {
		out[i] = webhookOut(e, false, now)
	}
	s.writeJSON(w, http.StatusOK, out)
	return nil
}

// getWebhook answers GET /webhooks/{id}, without the secret.
func (s *server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	e, err := s.webhooks.Get(r.Context(), companyOf(r), id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, webhookOut(e, false, time.Now()))
	return nil
}

// deleteWebhook answers DELETE /webhooks/{id}: 204.
func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	if err := s.webhooks.Delete(r.Context(), companyOf(r), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// rotateWebhookSecret answers POST /webhooks/{id}/rotate-secret: the
// endpoint with its new secret, shown this once, and the time until which
// the old one still signs.
func (s *server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	e, err := s.webhooks.RotateSecret(r.Context(), companyOf(r), id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, webhookOut(e, true, time.Now()))
	return nil
}

// deliveryJSON is one entry of GET /webhooks/{id}/deliveries.
type deliveryJSON struct {
	EventID        string          `json:"eventId"`
	EventType      string          `json:"eventType"`
	EventCreatedAt timestamp       `json:"eventCreatedAt"`
	Status         string          `json:"status"`
	Attempts       int             `json:"attempts"`
	NextAttemptAt  *timestamp      `json:"nextAttemptAt"`
	LastAttemptAt  *timestamp      `json:"lastAttemptAt"`
	LastStatusCode *int            `json:"lastStatusCode"`
	LastError      *string         `json:"lastError"`
	LastLatencyMs  *float64        `json:"lastLatencyMs"`
	Body           json.RawMessage `json:"body"`
}

// deliveryStates names the delivery states in the API.
var deliveryStates = map[webhook.DeliveryState]string{webhook.Waiting: "Waiting", webhook.Delivered: "Delivered", webhook.GaveUp: "GaveUp"}

func deliveryOut(d *webhook.Delivery) deliveryJSON {
	out := deliveryJSON{EventID: d.Event.ID.String(), EventType: string(d.Event.Type), EventCreatedAt: ts(d.Event.CreatedAt),
		Status: deliveryStates[d.State], Attempts: d.Attempts, LastAttemptAt: tsOrNull(d.LastAt), LastError: strOrNull(d.LastError),
		Body: d.Event.Body()}
	if d.State == webhook.Waiting {
		out.NextAttemptAt = tsOrNull(&d.NextAt)
	}
	if d.LastAt != nil {
		code, ms := d.LastStatus, float64(d.LastLatency.Microseconds())/1000
		out.LastStatusCode, out.LastLatencyMs = &code, &ms
	}
	return out
}

// listDeliveries answers GET /webhooks/{id}/deliveries.
func (s *server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	page := q.page()
	if err := q.err(); err != nil {
		return err
	}
	ds, total, err := s.webhooks.Deliveries(r.Context(), companyOf(r), id, page)
	if err != nil {
		return err
	}
	out := make([]deliveryJSON, len(ds))
	for i := range ds {
		out[i] = deliveryOut(&ds[i])
	}
	s.writeJSON(w, http.StatusOK, struct {
		Deliveries []deliveryJSON `json:"deliveries"`
		pageJSON
	}{out, pageOut(page, total)})
	return nil
}

// redeliver answers POST /webhooks/{id}/deliveries/{eventId}/redeliver:
// 202, the event is sent again at once.
func (s *server) redeliver(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	eventID, err := pathID(r, "eventId")
	if err != nil {
		return err
	}
	if err := s.webhooks.Redeliver(r.Context(), companyOf(r), id, eventID); err != nil {
		return err
	}
	s.writeJSON(w, http.StatusAccepted, struct {
		EventID string `json:"eventId"`
		Status  string `json:"status"`
	}{eventID.String(), "Waiting"})
	return nil
}
