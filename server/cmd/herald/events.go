package main

import (
	"context"
	"log/slog"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/store/sqlstore"
)

// chatEvents adapts delivery.ChatEvents to the callback endpoint and the
// dispatcher, and counts the callbacks in the metrics.
type chatEvents struct {
	*delivery.ChatEvents
	metrics *metrics
}

func newChatEvents(store *sqlstore.Store, m *metrics, log *slog.Logger) chatEvents {
	return chatEvents{ChatEvents: delivery.NewChatEvents(delivery.ChatEventsConfig{Store: store, Logger: log, Observer: m}), metrics: m}
}

// Handle is the callback endpoint's delivery.ChatEventHandler.
func (e chatEvents) Handle(ctx context.Context, ev delivery.ChatEvent) error {
	out, err := e.ChatEvents.HandleEvent(ctx, ev)
	e.metrics.chatEvent(ev, out)
	return err
}
