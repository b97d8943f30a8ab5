package delivery

import (
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Observer receives the dispatcher's measurements, for metrics. Its
// methods are called from many goroutines, on the sending path: they must
// be safe for concurrent use and return quickly. Embed NopObserver to
// implement only some of them.
type Observer interface {
	// Messages reports that n messages of channel ch were moved to status
	// by the dispatcher: Sending when claimed, Sent, Failed, or Pending
	// again (a retry) when their send ended, Delivered or Failed when
	// receipts moved them (those that came before the Sent was recorded
	// when it is). Each move is reported once (Store.ApplyBatch's
	// BatchResult).
	Messages(ch messaging.Channel, status messaging.MessageStatus, n int)
	// Send reports one call of a sender port: how long it took, and
	// whether the message was sent, will be retried or failed ("sent",
	// "retry", "failed"), or went back to Pending unsent: its campaign
	// halted ("withdrawn") or its connector full ("deferred").
	Send(ch messaging.Channel, d time.Duration, result string)
	// InFlight reports how many sends of channel ch are outstanding now
	// (claimed and not recorded yet), out of the lane's concurrency.
	InFlight(ch messaging.Channel, n, capacity int)
	// Receipt reports what became of one SMSC delivery receipt of the
	// given state (DELIVRD, UNDELIV, ...).
	Receipt(state string, outcome ReceiptOutcome)
	// QueueDepth reports how many items wait for a store transaction in
	// one of the dispatcher's write queues: "results" (send results and
	// receipts).
	QueueDepth(queue string, n int)
	// Batch reports one store call of the dispatcher: the operation
	// ("claim_sms", "claim_chat", "chat_seqs", "results", "recover",
	// "complete", "purge"), how many items it carried, how long it took, and
	// whether it failed.
	Batch(op string, size int, d time.Duration, err error)
	// Delivered reports that a message of channel ch moved to Delivered
	// in a store call of the dispatcher (an SMS's last delivery receipt),
	// and how long after its Sent: its DeliveredAt minus its SentAt, as
	// stored (BatchResult.DeliveredAfter and MovedAfter). Each message is
	// reported once, when it moves. Chat statuses, which ChatEvents
	// writes, are not reported yet.
	Delivered(ch messaging.Channel, after time.Duration)
}

// NopObserver is an Observer that does nothing. A nil Config.Observer
// means this one.
type NopObserver struct{}

// Messages implements Observer.
func (NopObserver) Messages(messaging.Channel, messaging.MessageStatus, int) {}

// Send implements Observer.
func (NopObserver) Send(messaging.Channel, time.Duration, string) {}

// InFlight implements Observer.
func (NopObserver) InFlight(messaging.Channel, int, int) {}

// Receipt implements Observer.
func (NopObserver) Receipt(string, ReceiptOutcome) {}

// QueueDepth implements Observer.
func (NopObserver) QueueDepth(string, int) {}

// Batch implements Observer.
func (NopObserver) Batch(string, int, time.Duration, error) {}

// Delivered implements Observer.
func (NopObserver) Delivered(messaging.Channel, time.Duration) {}
