package main

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/infobip/infobipsim"
	"github.com/heraldhq/herald/transport/metawhatsapp/metawhatsappsim"
	"github.com/heraldhq/herald/transport/vonage/vonagesim"
)

// providerSim is a running simulator of a chat provider's API.
type providerSim interface {
	URL() string
	SetCallbackURL(u string)
	Close() error
}

// simKind is the simulator of one chat provider, and the demo service
// that uses it.
type simKind struct {
	provider string
	// channel is the channel the demo service reaches; sender its id at
	// the provider.
	channel, sender string
	// credentials makes credentials the simulator and the adapter take.
	credentials func() json.RawMessage
	start       func(ctx context.Context, addr string, creds json.RawMessage, channel, callbackURL string, rate int, log *slog.Logger) (providerSim, error)
}

// simKinds are the simulators of the providers besides Herald's own
// protocol (whose simulator is transport/chatsim).
func simKinds() []simKind {
	return []simKind{
		{provider: "vonage", channel: chatprovider.ChannelViber, sender: "16105550100", credentials: vonagesim.DemoCredentials,
			start: func(ctx context.Context, addr string, creds json.RawMessage, channel, cb string, rate int, log *slog.Logger) (providerSim, error) {
				return vonagesim.Start(ctx, addr, vonagesim.Config{Credentials: creds, Channel: channel, CallbackURL: cb, RatePerSecond: rate, Logger: log})
			}},
		{provider: "infobip", channel: chatprovider.ChannelViber, sender: "HeraldDemo", credentials: infobipsim.DemoCredentials,
			start: func(ctx context.Context, addr string, creds json.RawMessage, channel, cb string, rate int, log *slog.Logger) (providerSim, error) {
				return infobipsim.Start(ctx, addr, infobipsim.Config{Credentials: creds, Channel: channel, CallbackURL: cb, RatePerSecond: rate, Logger: log})
			}},
		{provider: "meta-whatsapp", channel: chatprovider.ChannelWhatsApp, sender: "100000000000002", credentials: metawhatsappsim.DemoCredentials,
			start: func(ctx context.Context, addr string, creds json.RawMessage, channel, cb string, rate int, log *slog.Logger) (providerSim, error) {
				return metawhatsappsim.Start(ctx, addr, metawhatsappsim.Config{Credentials: creds, Channel: channel, CallbackURL: cb, RatePerSecond: rate, Logger: log})
			}},
	}
}

// simKindOf returns the simulator of provider name.
func simKindOf(name string) (simKind, bool) {
	for _, k := range simKinds() {
		if k.provider == name {
			return k, true
		}
	}
	return simKind{}, false
}
