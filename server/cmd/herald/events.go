package main

import (
	"log/slog"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/store/sqlstore"
)

// chatEvents adapts delivery.ChatEvents to the callback endpoint and the
// dispatcher.
type chatEvents struct {
	*delivery.ChatEvents
}

func newChatEvents(store *sqlstore.Store, log *slog.Logger) chatEvents {
	return chatEvents{delivery.NewChatEvents(delivery.ChatEventsConfig{Store: store, Logger: log})}
}
