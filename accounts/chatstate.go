package accounts

import (
	"context"
	"time"
)

// ChatContacts remembers when people last wrote to each chat service:
// the customer window of WhatsApp, in which a service may send any
// message rather than approved templates only. Its LastInbound is what
// chat provider adapters read.
type ChatContacts interface {
	// RecordInbound records that phone wrote to service serviceID at at.
	// An earlier time than the one stored changes nothing.
	RecordInbound(ctx context.Context, serviceID int64, phone string, at time.Time) error
	// LastInbound returns when phone last wrote to the service, and false
	// when never.
	LastInbound(ctx context.Context, serviceID int64, phone string) (time.Time, bool, error)
}

// CallbackReplays remembers the provider callbacks already taken, for
// providers whose signatures do not expire: a callback seen again is a
// replay. It is the replay guard of the chat provider adapters, one that
// can forget: an adapter that could not store a callback forgets its key,
// so that the provider's next delivery of it is taken.
type CallbackReplays interface {
	// Seen records key until the time given and reports whether it was
	// recorded before (a replay). A key stays recorded until
	// PurgeReplays removes it, at the earliest at until.
	Seen(ctx context.Context, key string, until time.Time) (bool, error)
	// Forget removes key, so that it is new to the next Seen. A key not
	// recorded is no error.
	Forget(ctx context.Context, key string) error
	// PurgeReplays removes up to limit keys recorded until a time before
	// before, and returns how many it removed.
	PurgeReplays(ctx context.Context, before time.Time, limit int) (int, error)
}
