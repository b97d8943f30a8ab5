package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Config configures a Service. Store is required; every other field has
// a documented zero-value default.
type Config struct {
	// Store holds the endpoints. Required.
	Store Store
	// URLs says which endpoint URLs are allowed. Default: https to public
	// addresses only.
	URLs URLPolicy
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// IDs makes endpoint ids. Default: a UUIDv7 generator on Now.
	IDs *messaging.IDGenerator
	// NewSecret makes signing secrets. Default NewSecret.
	NewSecret func() (string, error)
	// OnChange, when set, is called after an endpoint was registered,
	// removed or given a new secret (Sender.Refresh, so that the change
	// applies at once).
	OnChange func()
}

// Service registers, lists, removes and rotates the secrets of a
// company's webhook endpoints.
type Service struct {
	store     Store
	urls      URLPolicy
	now       func() time.Time
	ids       *messaging.IDGenerator
	newSecret func() (string, error)
	onChange  func()
}

// New returns a Service for cfg; Config.Store is required.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("webhook: Config.Store is required")
	}
	s := &Service{store: cfg.Store, urls: cfg.URLs, now: cfg.Now, ids: cfg.IDs, newSecret: cfg.NewSecret, onChange: cfg.OnChange}
	if s.onChange == nil {
		s.onChange = func() {}
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.ids == nil {
		s.ids = messaging.NewIDGenerator(s.now)
	}
	if s.newSecret == nil {
		s.newSecret = NewSecret
	}
	return s, nil
}

// Registration is what a company asks for when it registers an endpoint.
type Registration struct {
	URL    string
	Events []string
	// Batch, when set, asks for several events a request (CheckBatch).
	Batch *BatchInput
}

// Register checks r and stores a new endpoint with a new secret; the
// returned endpoint is the only place the secret is shown in full. Bad
// input is an Invalid error naming each field at fault.
func (s *Service) Register(ctx context.Context, companyID messaging.ID, r Registration) (Endpoint, error) {
	var fe messaging.FieldErrors
	u, err := s.urls.CheckURL(r.URL)
	addField(&fe, err)
	events, err := CheckEvents(r.Events)
	addField(&fe, err)
	batch, err := CheckBatch(r.Batch)
	addField(&fe, err)
	if err := fe.Err(); err != nil {
		return Endpoint{}, err
	}
	secret, err := s.newSecret()
	if err != nil {
		return Endpoint{}, err
	}
	e := Endpoint{ID: s.ids.New(), CompanyID: companyID, URL: u, Events: events, Secret: secret, Batch: batch,
		CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	if err := s.store.CreateWebhook(ctx, &e, MaxEndpoints); err != nil {
		return Endpoint{}, fmt.Errorf("register webhook: %w", err)
	}
	s.onChange()
	return e, nil
}

// addField adds the field errors of err (an Invalid messaging.Error) to fe.
func addField(fe *messaging.FieldErrors, err error) {
	var me *messaging.Error
	if errors.As(err, &me) {
		for field, msg := range me.Fields {
			fe.Add(field, "%s", msg)
		}
	}
}

// List returns the company's endpoints, oldest first.
func (s *Service) List(ctx context.Context, companyID messaging.ID) ([]Endpoint, error) {
	out, err := s.store.ListWebhooks(ctx, companyID)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out, nil
}

// Get returns one of the company's endpoints, or a NotFound error.
func (s *Service) Get(ctx context.Context, companyID, id messaging.ID) (Endpoint, error) {
	e, err := s.store.GetWebhook(ctx, companyID, id)
	if messaging.IsCode(err, messaging.NotFound) {
		return Endpoint{}, NotFound(id)
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("get webhook: %w", err)
	}
	return e, nil
}

// Delete removes one of the company's endpoints: nothing more is sent to
// it, including events it had not received yet.
func (s *Service) Delete(ctx context.Context, companyID, id messaging.ID) error {
	err := s.store.DeleteWebhook(ctx, companyID, id)
	if messaging.IsCode(err, messaging.NotFound) {
		return NotFound(id)
	}
	if err != nil {
		return fmt.Errorf("delete webhook: %w", err)
	}
	s.onChange()
	return nil
}

// RotateSecret gives the endpoint a new secret, shown in the returned
// endpoint only; the old one goes on signing beside it for SecretOverlap,
// so receivers can switch without missing a request.
func (s *Service) RotateSecret(ctx context.Context, companyID, id messaging.ID) (Endpoint, error) {
	secret, err := s.newSecret()
	if err != nil {
		return Endpoint{}, err
	}
	e, err := s.store.RotateWebhookSecret(ctx, companyID, id, secret, s.now().Add(SecretOverlap).UTC().Truncate(time.Microsecond))
	if messaging.IsCode(err, messaging.NotFound) {
		return Endpoint{}, NotFound(id)
	}
	if err != nil {
		return Endpoint{}, fmt.Errorf("rotate webhook secret: %w", err)
	}
	s.onChange()
	return e, nil
}

// NotFound is the error of an endpoint id the company does not have.
func NotFound(id messaging.ID) *messaging.Error {
	return messaging.NotFoundf("Webhook %s not found", id)
}

// Deliveries returns one page of an endpoint's deliveries, the latest
// event first, with the outcome of their last attempt, and how many there
// are (those of the events kept: SenderConfig.Keep).
func (s *Service) Deliveries(ctx context.Context, companyID, endpointID messaging.ID, page messaging.PageRequest) ([]Delivery, int, error) {
	p, err := page.Normalize()
	if err != nil {
		return nil, 0, err
	}
	out, total, err := s.store.ListDeliveries(ctx, companyID, endpointID, p)
	if messaging.IsCode(err, messaging.NotFound) {
		return nil, 0, NotFound(endpointID)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return out, total, nil
}

// Redeliver sends an event to the endpoint again, at once, whatever
// became of it (delivered, given up, or waiting for a retry); later events
// of its subject still waiting wait for it.
func (s *Service) Redeliver(ctx context.Context, companyID, endpointID, eventID messaging.ID) error {
	err := s.store.Redeliver(ctx, companyID, endpointID, eventID, s.now().UTC().Truncate(time.Microsecond))
	if messaging.IsCode(err, messaging.NotFound) {
		return messaging.NotFoundf("Webhook %s has no delivery of event %s", endpointID, eventID)
	}
	if err != nil {
		return fmt.Errorf("redeliver: %w", err)
	}
	return nil
}
