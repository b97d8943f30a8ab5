package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"time"
)

// WebhookEvent is a type of event a webhook endpoint subscribes to.
type WebhookEvent string

// Webhook event types; docs/api.md describes their data.
const (
	EventMessageStatus  WebhookEvent = "message.status"
	EventCampaignStatus WebhookEvent = "campaign.status"
	EventSurveyAnswered WebhookEvent = "survey.answered"
	EventMessageInbound WebhookEvent = "message.inbound"
	EventOptOutChanged  WebhookEvent = "optout.changed"
)

// WebhookInput registers a webhook endpoint.
type WebhookInput struct {
	// URL is where events are POSTed: https to a public address (unless
	// the operator allows more).
	URL    string         `json:"url"`
	Events []WebhookEvent `json:"events"`
	// Batch, when set, has the endpoint take several events a request;
	// nil, one event a request.
	Batch *WebhookBatch `json:"batch,omitempty"`
}

// WebhookBatch is how many events one request to an endpoint carries. A
// batch's body is {"events": [event, ...]}; a failed batch is sent again
// whole, with the same event ids.
type WebhookBatch struct {
	// MaxEvents is the most events a request carries: 1 to 1000.
	MaxEvents int `json:"maxEvents"`
	// MaxWaitMs is how long, in milliseconds, the oldest waiting event
	// may wait for the batch to fill: 0 to 60000.
	MaxWaitMs int `json:"maxWaitMs"`
}

// Webhook is a webhook endpoint of the company.
type Webhook struct {
	ID     string         `json:"id"`
	URL    string         `json:"url"`
	Events []WebhookEvent `json:"events"`
	// Batch is nil when the endpoint takes one event a request.
	Batch     *WebhookBatch `json:"batch"`
	CreatedAt time.Time     `json:"createdAt"`
	// Enabled is false once Herald stopped sending to the endpoint (it
	// answered 410 Gone), since DisabledAt, for DisabledReason.
	Enabled        bool      `json:"enabled"`
	DisabledAt     time.Time `json:"disabledAt"`
	DisabledReason string    `json:"disabledReason"`
	// Secret is the signing secret (whsec_...), given only by
	// CreateWebhook and RotateWebhookSecret.
	Secret string `json:"secret"`
	// PreviousSecretExpiresAt is, after a rotation, until when the old
	// secret still signs; zero otherwise.
	PreviousSecretExpiresAt time.Time `json:"previousSecretExpiresAt"`
}

// DeliveryStatus is the state of an event's delivery to an endpoint.
type DeliveryStatus string

// Delivery states.
const (
	DeliveryWaiting   DeliveryStatus = "Waiting"
	DeliveryDelivered DeliveryStatus = "Delivered"
	DeliveryGaveUp    DeliveryStatus = "GaveUp"
)

// WebhookDelivery is an event sent, or to be sent, to an endpoint, with
// its last attempt.
type WebhookDelivery struct {
	EventID        string         `json:"eventId"`
	EventType      WebhookEvent   `json:"eventType"`
	EventCreatedAt time.Time      `json:"eventCreatedAt"`
	Status         DeliveryStatus `json:"status"`
	Attempts       int            `json:"attempts"`
	// NextAttemptAt is set while Waiting.
	NextAttemptAt time.Time `json:"nextAttemptAt"`
	LastAttemptAt time.Time `json:"lastAttemptAt"`
	// LastStatusCode is the endpoint's HTTP status (0: none, or no
	// attempt yet), LastError what went wrong, LastLatencyMs how long it
	// took in milliseconds.
	LastStatusCode int     `json:"lastStatusCode"`
	LastError      string  `json:"lastError"`
	LastLatencyMs  float64 `json:"lastLatencyMs"`
	// Body is the request body: {"id", "type", "createdAt", "data"}.
	Body json.RawMessage `json:"body"`
}

// Redelivery answers RedeliverWebhookEvent.
type Redelivery struct {
	EventID string         `json:"eventId"`
	Status  DeliveryStatus `json:"status"`
}

// CreateWebhook registers an endpoint (POST /webhooks); the answer carries
// its Secret, shown this once.
func (c *Client) CreateWebhook(ctx context.Context, in WebhookInput) (*Webhook, error) {
	var w Webhook
	if err := c.do(ctx, http.MethodPost, "/webhooks", nil, in, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// ListWebhooks returns the company's endpoints, oldest first, without
// their secrets (GET /webhooks).
func (c *Client) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var out []Webhook
	if err := c.do(ctx, http.MethodGet, "/webhooks", nil, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetWebhook reads an endpoint, without its secret (GET /webhooks/{id}).
func (c *Client) GetWebhook(ctx context.Context, id string) (*Webhook, error) {
	var w Webhook
	if err := c.do(ctx, http.MethodGet, "/webhooks/"+seg(id), nil, nil, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// DeleteWebhook removes an endpoint (DELETE /webhooks/{id}).
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/webhooks/"+seg(id), nil, nil, nil)
}

// RotateWebhookSecret gives an endpoint a new secret, returned this once
// (POST /webhooks/{id}/rotate-secret); the old one goes on signing until
// PreviousSecretExpiresAt.
func (c *Client) RotateWebhookSecret(ctx context.Context, id string) (*Webhook, error) {
	var w Webhook
	if err := c.do(ctx, http.MethodPost, "/webhooks/"+seg(id)+"/rotate-secret", nil, nil, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// ListWebhookDeliveries returns one page of an endpoint's events of the
// last seven days, latest first (GET /webhooks/{id}/deliveries).
func (c *Client) ListWebhookDeliveries(ctx context.Context, webhookID string, opts PageOptions) (*Page[WebhookDelivery], error) {
	return listPage[WebhookDelivery](ctx, c, "/webhooks/"+seg(webhookID)+"/deliveries", "deliveries", opts.values(nil))
}

// AllWebhookDeliveries iterates over an endpoint's events of the last
// seven days, latest first, a page of opts.PageSize at a time; it stops at
// the first error, which it yields.
func (c *Client) AllWebhookDeliveries(ctx context.Context, webhookID string, opts PageOptions) iter.Seq2[WebhookDelivery, error] {
	return all(opts.Page, func(page int) (*Page[WebhookDelivery], error) {
		opts.Page = page
		return c.ListWebhookDeliveries(ctx, webhookID, opts)
	})
}

// RedeliverWebhookEvent sends an event to an endpoint again at once (POST
// /webhooks/{id}/deliveries/{eventId}/redeliver).
func (c *Client) RedeliverWebhookEvent(ctx context.Context, webhookID, eventID string) (*Redelivery, error) {
	var r Redelivery
	if err := c.do(ctx, http.MethodPost, "/webhooks/"+seg(webhookID)+"/deliveries/"+seg(eventID)+"/redeliver", nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
