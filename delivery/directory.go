package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// Route is what the dispatcher needs to know of a campaign to send its
// messages.
type Route struct {
	// MessageType and Config are the campaign's chat message type and chat
	// extras (a message's own Config overrides Config).
	MessageType messaging.MessageType
	Config      *messaging.ChatConfig
	// SMSSender is the name of the campaign's approved SMS sender; empty
	// when it has none (its SMS then fail).
	SMSSender string
	// ChatServiceID is Herald's id of the campaign's chat service; 0 when
	// it has none (its chat messages then fail). ChatSender is the
	// service's id at its provider (its ProviderServiceID).
	ChatServiceID int64
	ChatSender    string
	// FallbackSender is the name of the approved SMS sender of the
	// campaign's chat -> SMS fallback; empty when none.
	FallbackSender string
	// ExpiresAt, when not zero, is when the messages of a bulk or direct
	// campaign stop being worth sending (its start plus its ValidFor); a
	// message's own ExpiresAt comes first.
	ExpiresAt time.Time
	// Window, when not nil, is the campaign's send window, and WindowZone
	// the zone it names (nil: each recipient's own).
	Window     *messaging.SendWindow
	WindowZone *time.Location
}

// ZoneFinder tells the time zone of a phone number's owner; nil when it
// does not know. package phonezone has one.
type ZoneFinder interface {
	Location(phone string) *time.Location
}

// Expiry returns when m stops being worth sending on route r: its own
// ExpiresAt, else the route's; zero when never.
func Expiry(m *messaging.Message, r Route) time.Time {
	if m.ExpiresAt != nil {
		return *m.ExpiresAt
	}
	return r.ExpiresAt
}

// Directory tells the dispatcher how each campaign's messages are sent.
type Directory interface {
	// Route returns the route of a campaign of a company. A campaign that
	// does not exist is a NotFound *messaging.Error: its messages fail;
	// any other error is retried.
	Route(ctx context.Context, companyID, campaignID messaging.ID) (Route, error)
}

// CampaignReader is what a StoreDirectory reads: a campaign, and the
// sender and chat service it names. The stores that implement
// campaign.Store and accounts.Store (memstore, sqlstore) implement it.
type CampaignReader interface {
	campaign.Reader
	accounts.Lookup
}

// StoreDirectory is the Directory that reads routes from the campaign
// store: the campaign's SMS sender, chat service and fallback sender, by
// the ids the campaign recorded when it was created. A sender that is not
// approved (or no longer exists) gives an empty name.
type StoreDirectory struct {
	Store CampaignReader
}

// Route implements Directory.
func (d StoreDirectory) Route(ctx context.Context, companyID, campaignID messaging.ID) (Route, error) {
	c, err := d.Store.GetCampaign(ctx, companyID, campaignID)
	if err != nil {
		return Route{}, fmt.Errorf("route of campaign %s: %w", campaignID, err)
	}
	r := Route{MessageType: c.MessageType, Config: c.Config, Window: c.SendWindow}
	if w := c.SendWindow; w != nil && w.TimeZone != "" {
		if r.WindowZone, err = time.LoadLocation(w.TimeZone); err != nil {
			return Route{}, fmt.Errorf("route of campaign %s: send window: %w", campaignID, err)
		}
	}
	if c.ValidFor > 0 && c.StartedAt != nil && c.Mode != messaging.ModeTransactional {
		// A transactional campaign's messages carry their own expiry.
		r.ExpiresAt = c.StartedAt.Add(c.ValidFor)
	}
	if r.SMSSender, err = d.sender(ctx, companyID, c.SMSSenderID); err != nil {
		return Route{}, fmt.Errorf("route of campaign %s: %w", campaignID, err)
	}
	if r.FallbackSender, err = d.sender(ctx, companyID, c.FallbackSender); err != nil {
		return Route{}, fmt.Errorf("route of campaign %s: %w", campaignID, err)
	}
	if c.ChatServiceID != 0 {
		cs, err := d.Store.GetChatService(ctx, companyID, c.ChatServiceID)
		switch {
		case err == nil:
			r.ChatServiceID, r.ChatSender = cs.ID, cs.ProviderServiceID
		case !messaging.IsCode(err, messaging.NotFound):
			return Route{}, fmt.Errorf("route of campaign %s: chat service: %w", campaignID, err)
		}
	}
	return r, nil
}

// sender returns the name of an approved sender, "" for none.
func (d StoreDirectory) sender(ctx context.Context, companyID messaging.ID, id int64) (string, error) {
	if id == 0 {
		return "", nil
	}
	s, err := d.Store.GetSMSSender(ctx, companyID, id)
	switch {
	case messaging.IsCode(err, messaging.NotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("sms sender: %w", err)
	case !s.Approved:
		return "", nil
	}
	return s.SenderID, nil
}
