package inbound

import (
	"context"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// Store is what the inbound use cases need from storage.
type Store interface {
	// RecordInboundPart stores a part (a part stored before, the SMSC
	// sending it again, counts once). When the message has all its parts,
	// the store writes it in the same transaction, with the id given,
	// its text the parts' in order, attributed to the company whose
	// approved sender id equals the destination (none when no company's
	// does), with a message.inbound event for that company's subscribed
	// endpoints, and returns the message. Otherwise it returns nil.
	//
	// Parts of one message (same sender, destination, reference and
	// count) may come at once, from several sessions or processes: the
	// message is written exactly once. Its parts are kept for a day after
	// it is written: a part sent again within that day with the same text
	// is ignored, while one with another text starts a new message (the
	// handset reused the reference).
	RecordInboundPart(ctx context.Context, p delivery.InboundPart, id messaging.ID) (*messaging.InboundMessage, error)
	// ListInbound returns one page of the company's inbound messages
	// matching f, latest first, and how many match.
	ListInbound(ctx context.Context, companyID messaging.ID, f messaging.InboundFilter) ([]messaging.InboundMessage, int, error)
}
