package delivery

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/messaging"
)

// Config configures a Dispatcher. Store is required; every other field has
// a documented zero-value default.
type Config struct {
	// Store claims messages and records what happened to them. Required.
	Store Store
	// SMS submits SMS messages (fallback SMS included). Nil: the SMS lane
	// does not run and SMS messages stay Pending.
	SMS SMSSender
	// Chat sends chat messages. Nil: the chat lane does not run and chat
	// messages stay Pending.
	Chat ChatSender
	// Directory tells each campaign's SMS sender name, chat service and
	// fallback sender name. Default: StoreDirectory over Store.
	Directory Directory
	// OnChatFailure is the one place a permanent chat send failure goes,
	// before the dispatcher records it. It is called with the message
	// (status Sending) and the failure: Code is the provider's status
	// number ("8", "9", "10" for the SMS fallback triggers) and Details
	// its name. When it returns handled true it has recorded the outcome
	// itself (for instance the message Failed and its fallback SMS
	// inserted, in one transaction) and the dispatcher records nothing;
	// when it returns false the dispatcher records the message Failed
	// with the failure's details ("USER_BLOCKED (8)"); when it returns an
	// error the message is retried later like a transient failure. Nil:
	// every permanent chat failure is recorded Failed.
	OnChatFailure func(ctx context.Context, m messaging.Message, err *SendError) (handled bool, _ error)

	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives what the dispatcher logs. Default: discard.
	Logger *slog.Logger
	// Observer receives measurements for metrics. Default: NopObserver.
	Observer Observer
	// Tracer opens the dispatcher's spans: one per send of a message whose
	// request's span Traces kept, as its child. Nil: no span.
	Tracer trace.TracerProvider
	// Traces holds the span contexts of the requests that created
	// messages. Nil: sends start traces of their own.
	Traces *Traces
	// Sends keeps the span context of each traced chat send, by message
	// id, so that the message's status events join the send's trace
	// (ChatEventsConfig.Sends). Nil: they start no span.
	Sends *Traces

	// BatchSize is the most messages one claim takes. Default 256.
	BatchSize int
	// SMSConcurrency is the most SMS claimed and not recorded yet at once
	// (being sent, or waiting for their result to be stored). It bounds
	// the SMS a crash can leave submitted but not recorded. Default 512.
	SMSConcurrency int
	// ChatConcurrency is the same bound for chat messages: each is one
	// HTTP request in flight, so it also bounds the connections to the
	// provider (the chat client keeps up to 512 of them). Default 512.
	ChatConcurrency int
	// Instance names this dispatcher's process among those sharing the
	// store: its claims carry the name, and its heartbeats keep them. Give
	// it a name that stays the same across restarts and that no other
	// live process uses (the herald binary derives one from the host name
	// and its listening address): Run then takes back at once the claims
	// its previous run died holding. Two live processes with one name take
	// each other's claims at their starts (messages are sent twice, none
	// is lost). Default: a random name, whose claims a restart does not
	// recognise; they come back after ClaimLease instead.
	Instance string
	// ClaimLease is how long the claims of a process that stopped sending
	// heartbeats are kept: after it, any dispatcher sharing the store
	// takes them back (within a RecoverInterval). Heartbeats are written
	// every HeartbeatInterval. Default 10s.
	ClaimLease time.Duration
	// HeartbeatInterval is how often the heartbeat that keeps this
	// process's claims is written. It must be shorter than ClaimLease.
	// Default: a quarter of ClaimLease.
	HeartbeatInterval time.Duration
	// Lease bounds a claim whatever the heartbeats: a message claimed
	// longer than that is taken back even from a live process. It must
	// exceed SendTimeout. Default 5 minutes.
	Lease time.Duration
	// SendTimeout bounds the sends of one claimed batch, from the claim:
	// a send still running then is cancelled and retried later. Default 1
	// minute.
	SendTimeout time.Duration
	// PollInterval is how often an idle lane looks for due messages
	// (Wake makes it look at once). Default 200ms.
	PollInterval time.Duration
	// RetryBackoff bounds the wait before a message whose send failed
	// transiently is sent again: it doubles with every attempt from Min
	// up to Max, each wait drawn between half of it and all of it.
	// Defaults: Min 1s, Max 5 minutes.
	RetryBackoff messaging.Backoff
	// MaxAttempts is how many sends a message gets: a transient failure of
	// the last one fails it. Default 12.
	MaxAttempts int
	// ChatTTL is the time to live sent with chat messages. Default 0: the
	// chat sender's default.
	ChatTTL time.Duration
	// Rates tells the companies' rates (messaging.Company.MaxPerSecond):
	// a claim takes no more of a capped company's messages than its share
	// of the rate allows, the rate divided among the processes whose
	// heartbeat is within ClaimLease. Read at Run's start and every
	// RatesInterval. Nil: no company is capped.
	Rates RateSource
	// RatesInterval is how often Rates is read. Default 2s.
	RatesInterval time.Duration
	// Zones tells a recipient's time zone from the phone number, for the
	// send windows of campaigns that have one without a time zone of their
	// own. Nil, or a number it does not know: UTC.
	Zones ZoneFinder

	// WriteBatch is the most send results and receipts one store
	// transaction records. Default 1024.
	WriteBatch int
	// WriteDelay is how long results and receipts may wait for others to
	// share their store transaction, when fewer than an eighth of
	// WriteBatch are waiting: a fast store would otherwise commit many
	// tiny transactions. Default 5ms; negative: no wait.
	WriteDelay time.Duration
	// Writers is how many batches of send results and receipts are
	// written at once, each by its own writer. Default: the store's
	// Features().WriteConcurrency, at least 1.
	Writers int
	// StoreTimeout bounds one store call. Default 30s.
	StoreTimeout time.Duration
	// RecoverInterval is how often Sending messages whose claim ended
	// (their process's heartbeat is older than ClaimLease, or their Lease
	// ended) are put back to Pending (also done when Run starts, with the
	// claims of Instance's previous run). Default 2s.
	RecoverInterval time.Duration
	// CompleteInterval is how often drained bulk campaigns are completed.
	// Default 1s.
	CompleteInterval time.Duration
	// ReceiptRetention is how long SMS parts are kept for their receipts,
	// and early receipts for their parts. Default 7 days.
	ReceiptRetention time.Duration
	// ReceiptTimeout is how long a Sent SMS waits for its delivery
	// receipts: after it, a message whose receipts have not all come stays
	// Sent, with Details naming the timeout (ReceiptTimeoutDetails), and
	// is no longer counted as waiting (StatusCounts.Unconfirmed); a
	// receipt that still comes settles it. Set it to about the validity
	// period when submits carry one: the SMSC gives up delivering by then.
	// It must be shorter than ReceiptRetention. Default 48 hours.
	ReceiptTimeout time.Duration
	// ReceiptSweepInterval is how often SMS past ReceiptTimeout are
	// looked for. Default 1 minute.
	ReceiptSweepInterval time.Duration
	// ExpireInterval is how often messages still Pending past their
	// validity are failed (EXPIRED) though nothing claims them (a paused
	// campaign, a provider down). Default 1 second.
	ExpireInterval time.Duration
	// HaltInterval is how often the campaigns with messages being sent
	// are looked up in the store: those paused or cancelled meanwhile (by
	// another process too) have their messages not submitted yet
	// withdrawn (see Dispatcher.Halt). Default 150ms.
	HaltInterval time.Duration
	// PurgeInterval is how often older parts and receipts are purged.
	// Default 1 hour.
	PurgeInterval time.Duration
	// PurgeBatch is how many parts and receipts one purge transaction
	// removes at most; a purge goes on batch after batch, pausing between
	// them, until none older than ReceiptRetention is left. Default 5,000.
	PurgeBatch int
	// RouteTTL is how long a campaign's route is cached. Default 1 minute.
	RouteTTL time.Duration
	// DrainTimeout is how long Run, once its context ended, waits for the
	// sends in flight before it cancels them (their messages go back to
	// Pending). Default 30s.
	DrainTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultBatchSize        = 256
	DefaultSMSConcurrency   = 512
	DefaultChatConcurrency  = 512
	DefaultLease            = 5 * time.Minute
	DefaultSendTimeout      = time.Minute
	DefaultPollInterval     = 200 * time.Millisecond
	DefaultRetryMin         = time.Second
	DefaultRetryMax         = 5 * time.Minute
	DefaultMaxAttempts      = 12
	DefaultWriteBatch       = 1024
	DefaultWriteDelay       = 5 * time.Millisecond
	DefaultStoreTimeout     = 30 * time.Second
	DefaultRecoverInterval  = 2 * time.Second
	DefaultRatesInterval    = 2 * time.Second
	DefaultClaimLease       = 10 * time.Second
	DefaultCompleteInterval = time.Second
	DefaultReceiptRetention = 7 * 24 * time.Hour
	DefaultReceiptTimeout   = 48 * time.Hour
	DefaultReceiptSweep     = time.Minute
	DefaultExpireInterval   = time.Second
	DefaultPurgeInterval    = time.Hour
	DefaultHaltInterval     = 150 * time.Millisecond
	DefaultPurgeBatch       = 5_000
	DefaultRouteTTL         = time.Minute
	DefaultDrainTimeout     = 30 * time.Second
)

// withDefaults fills the zero values and checks the others.
func (c Config) withDefaults() (Config, error) {
	if c.Store == nil {
		return c, errors.New("delivery: Config.Store is required")
	}
	if c.Directory == nil {
		c.Directory = StoreDirectory{Store: c.Store}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}

	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.BatchSize, DefaultBatchSize)
	def(&c.SMSConcurrency, DefaultSMSConcurrency)
	def(&c.ChatConcurrency, DefaultChatConcurrency)
	def(&c.MaxAttempts, DefaultMaxAttempts)
	def(&c.WriteBatch, DefaultWriteBatch)
	def(&c.Writers, c.Store.Features().WriteConcurrency)
	def(&c.Writers, 1)
	if c.WriteDelay == 0 {
		c.WriteDelay = DefaultWriteDelay
	}
	defD(&c.Lease, DefaultLease)
	defD(&c.ClaimLease, DefaultClaimLease)
	defD(&c.HeartbeatInterval, c.ClaimLease/4)
	if c.HeartbeatInterval >= c.ClaimLease {
		return c, errors.New("delivery: Config.HeartbeatInterval must be shorter than Config.ClaimLease")
	}
	if c.Instance == "" {
		c.Instance = "herald-" + randomName()
	}
	defD(&c.SendTimeout, DefaultSendTimeout)
	defD(&c.PollInterval, DefaultPollInterval)
	c.RetryBackoff = c.RetryBackoff.Or(messaging.Backoff{Min: DefaultRetryMin, Max: DefaultRetryMax})
	defD(&c.StoreTimeout, DefaultStoreTimeout)
	defD(&c.RecoverInterval, DefaultRecoverInterval)
	defD(&c.RatesInterval, DefaultRatesInterval)
	defD(&c.CompleteInterval, DefaultCompleteInterval)
	defD(&c.ReceiptRetention, DefaultReceiptRetention)
	defD(&c.ReceiptTimeout, DefaultReceiptTimeout)
	defD(&c.ReceiptSweepInterval, DefaultReceiptSweep)
	defD(&c.ExpireInterval, DefaultExpireInterval)
	if c.ReceiptTimeout >= c.ReceiptRetention {
		return c, errors.New("delivery: Config.ReceiptTimeout must be shorter than Config.ReceiptRetention")
	}
	defD(&c.PurgeInterval, DefaultPurgeInterval)
	defD(&c.HaltInterval, DefaultHaltInterval)
	def(&c.PurgeBatch, DefaultPurgeBatch)
	defD(&c.RouteTTL, DefaultRouteTTL)
	defD(&c.DrainTimeout, DefaultDrainTimeout)
	if c.Lease <= c.SendTimeout {
		return c, errors.New("delivery: Config.Lease must exceed Config.SendTimeout")
	}
	return c, nil
}

// randomName returns 8 random bytes in hexadecimal.
func randomName() string {
	b := make([]byte, 8)
	_, _ = crand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
