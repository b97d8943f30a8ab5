// Package chatprovider holds what every chat provider adapter implements
// and is built from: a Provider describes one provider (its name, its
// public endpoint, the message types each of its channels carries, the
// credentials it needs) and builds an Adapter for one chat service from
// Settings. An Adapter sends that service's messages (delivery.ChatSender)
// and serves its callbacks (http.Handler), reporting what they say through
// the delivery.Reporter it was built with.
//
// The adapters are packages of their own under transport/ (vonage,
// infobip, metawhatsapp, chat for Herald's own protocol); the chat router
// picks the adapter of each message's service.
package chatprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// Chat networks a service reaches.
const (
	ChannelViber    = "viber"
	ChannelWhatsApp = "whatsapp"
)

// Provider describes one chat provider and builds its adapters.
type Provider struct {
	// Name is the provider's name in the admin API: "herald", "vonage",
	// "infobip", "meta-whatsapp".
	Name string
	// BaseURL is the provider's public API endpoint, the default of a
	// service's baseUrl.
	BaseURL string
	// Channels are the chat networks the provider reaches (ChannelViber,
	// ChannelWhatsApp); a service names one of them.
	Channels []string
	// Carries returns nil when a message of type t with config c can go
	// over channel, else a *messaging.Error of code Invalid whose
	// validation error names the field ("messageType",
	// "typeSpecificConfig.items", ...). Checked when a template is
	// created and again before each send.
	Carries func(channel string, t messaging.MessageType, c messaging.ChatConfig) error
	// CheckCredentials returns nil when creds (the service's credentials
	// object, as the admin API took it) has what the provider needs,
	// else a *messaging.Error of code Invalid naming the missing field
	// ("credentials.apiKey").
	CheckCredentials func(channel string, creds json.RawMessage) error
	// New builds the adapter of one service.
	New func(ctx context.Context, s Settings) (Adapter, error)
}

// Settings are what an adapter is built from: one chat service's
// configuration and the wires to Herald.
type Settings struct {
	// ServiceID is Herald's id of the chat service; CompanyID its
	// company.
	ServiceID int64
	CompanyID messaging.ID
	// Channel is the chat network of the service (ChannelViber or
	// ChannelWhatsApp).
	Channel string
	// Sender is the service's id at the provider (the Viber service id
	// or sender name, the WhatsApp phone number id or number).
	Sender string
	// BaseURL is the provider's API endpoint; empty: Provider.BaseURL.
	BaseURL string
	// Credentials is the service's credentials object, decrypted.
	Credentials json.RawMessage
	// CallbackURL is the public address of this service's callbacks, for
	// providers that take it in each request; empty when not configured.
	CallbackURL string
	// Client makes the provider requests. It dials through the dialer
	// that refuses non-public addresses; media fetches must use it too.
	Client *http.Client
	// Reporter takes what the service's callbacks report. Required.
	Reporter delivery.Reporter
	// Replays remembers the callbacks already taken, for adapters whose
	// signatures do not expire. Nil: a guard in memory.
	Replays ReplayGuard
	// Contacts tells when a person last wrote to the service (the
	// customer window of WhatsApp). Nil: never known.
	Contacts Contacts
	// Logger receives the adapter's logs; it never logs credentials.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Adapter is one chat service's connection to its provider: it sends the
// service's messages and serves its callbacks (the router mounts it under
// /callbacks/chat/{chatServiceId}). A callback whose signature does not
// verify, or that was taken before, is answered 401 and reports nothing.
type Adapter interface {
	// SendChat sends one message. Its errors are *delivery.SendError made
	// with delivery.ChatFailure (RetryAfter set on a rate-limit answer),
	// or wrapped context errors (transient). A retry of the same message
	// carries the same MessageID and Ref: adapters send them as the
	// provider's idempotency or client reference.
	SendChat(ctx context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error)
	http.Handler
	// Close releases what the adapter holds.
	Close() error
}

// ReplayGuard remembers callbacks already taken.
type ReplayGuard interface {
	// Seen records key until the time given and reports whether it was
	// recorded before (a replay).
	Seen(ctx context.Context, key string, until time.Time) (bool, error)
}

// ReplayBatcher is a ReplayGuard that records several keys in one write
// (the stores: one transaction). Adapters whose callbacks carry several
// reports use it through SeenAll.
type ReplayBatcher interface {
	ReplayGuard
	// SeenAll records keys until the time given and reports, key by key,
	// whether each was recorded before: a key given twice is for its
	// second. An error means none was recorded.
	SeenAll(ctx context.Context, keys []string, until time.Time) ([]bool, error)
}

// SeenAll records keys in g and reports, key by key, whether each was
// recorded before: in one call when g is a ReplayBatcher, else key by
// key. On an error it returns with it what was recorded before the error:
// the keys of those results are recorded, the others are not.
func SeenAll(ctx context.Context, g ReplayGuard, keys []string, until time.Time) ([]bool, error) {
	if b, ok := g.(ReplayBatcher); ok {
		seen, err := b.SeenAll(ctx, keys, until)
		if err != nil {
			return nil, fmt.Errorf("replay guard: %w", err)
		}
		if len(seen) != len(keys) {
			return nil, fmt.Errorf("replay guard: %d results for %d keys", len(seen), len(keys))
		}
		return seen, nil
	}
	seen := make([]bool, 0, len(keys))
	for _, k := range keys {
		dup, err := g.Seen(ctx, k, until)
		if err != nil {
			return seen, fmt.Errorf("replay guard: %w", err)
		}
		seen = append(seen, dup)
	}
	return seen, nil
}

// ReplayForgetter is a ReplayGuard that can also forget a key. An adapter
// that answers a callback 5xx because its report failed forgets the
// callback's key, so that the provider's next delivery of the same body
// is taken, not refused as a replay. A guard without Forget keeps the key:
// that delivery is then refused.
type ReplayForgetter interface {
	ReplayGuard
	// Forget removes key, recorded by Seen, from the guard.
	Forget(ctx context.Context, key string) error
}

// Contacts tells when people last wrote to a service.
type Contacts interface {
	// LastInbound returns when phone last sent anything to the service,
	// and false when never (or not known).
	LastInbound(ctx context.Context, serviceID int64, phone string) (time.Time, bool, error)
}
