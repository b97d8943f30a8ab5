package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// InboundMessage is an SMS a person sent to one of the company's senders.
type InboundMessage struct {
	ID string `json:"id"`
	// PhoneNumber is the sender's number, digits only; To the company's
	// sender id it went to.
	PhoneNumber string    `json:"phoneNumber"`
	To          string    `json:"to"`
	Text        string    `json:"text"`
	Parts       int       `json:"parts"`
	ReceivedAt  time.Time `json:"receivedAt"`
}

// InboundListOptions filters GET /inbound.
type InboundListOptions struct {
	// PhoneNumber keeps the SMS from that number.
	PhoneNumber string
	PageOptions
}

// OptOutChannel is what an opt-out covers.
type OptOutChannel string

// Opt-out channels.
const (
	// OptOutAll covers SMS and chat messages.
	OptOutAll OptOutChannel = "All"
	// OptOutChat covers chat messages only.
	OptOutChat OptOutChannel = "Chat"
)

// OptOut is a number on the company's opt-out list.
type OptOut struct {
	// PhoneNumber is digits only.
	PhoneNumber string        `json:"phoneNumber"`
	Channel     OptOutChannel `json:"channel"`
	// Source is "api", "keyword" (an SMS such as STOP) or "chat" (the chat
	// provider's unsubscribed event).
	Source    string    `json:"source"`
	CreatedAt time.Time `json:"createdAt"`
}

// OptOutInput opts a number out.
type OptOutInput struct {
	PhoneNumber string `json:"phoneNumber"`
	// Channel: OptOutAll when empty.
	Channel OptOutChannel `json:"channel,omitempty"`
}

// OptOutListOptions filters GET /opt-outs.
type OptOutListOptions struct {
	PhoneNumber string
	PageOptions
}

// OptOutKeywords are the words that, alone in an SMS to one of the
// company's senders, opt its sender out of everything (OptOut) or back in
// (OptIn). An empty list turns that action off.
type OptOutKeywords struct {
	OptOut []string `json:"optOut"`
	OptIn  []string `json:"optIn"`
}

// ListInbound returns one page of the SMS people sent to the company's
// senders, latest first (GET /inbound).
func (c *Client) ListInbound(ctx context.Context, opts InboundListOptions) (*Page[InboundMessage], error) {
	q := url.Values{}
	setStr(q, "phoneNumber", opts.PhoneNumber)
	return listPage[InboundMessage](ctx, c, "/inbound", "messages", opts.values(q))
}

// AllInbound iterates over the SMS people sent to the company's senders,
// latest first, a page of opts.PageSize at a time; it stops at the first
// error, which it yields.
func (c *Client) AllInbound(ctx context.Context, opts InboundListOptions) iter.Seq2[InboundMessage, error] {
	return all(opts.Page, func(page int) (*Page[InboundMessage], error) {
		opts.Page = page
		return c.ListInbound(ctx, opts)
	})
}

// ListOptOuts returns one page of the company's opt-out list, latest first
// (GET /opt-outs).
func (c *Client) ListOptOuts(ctx context.Context, opts OptOutListOptions) (*Page[OptOut], error) {
	q := url.Values{}
	setStr(q, "phoneNumber", opts.PhoneNumber)
	return listPage[OptOut](ctx, c, "/opt-outs", "optOuts", opts.values(q))
}

// AllOptOuts iterates over the company's opt-out list, latest first, a
// page of opts.PageSize at a time; it stops at the first error, which it
// yields.
func (c *Client) AllOptOuts(ctx context.Context, opts OptOutListOptions) iter.Seq2[OptOut, error] {
	return all(opts.Page, func(page int) (*Page[OptOut], error) {
		opts.Page = page
		return c.ListOptOuts(ctx, opts)
	})
}

// AddOptOut puts a number on the company's opt-out list (POST /opt-outs);
// created is false when it was on the list for that channel already.
func (c *Client) AddOptOut(ctx context.Context, in OptOutInput) (o *OptOut, created bool, err error) {
	var out OptOut
	status, err := c.rc.Do(ctx, http.MethodPost, "/opt-outs", nil, in, &out)
	if err != nil {
		return nil, false, err
	}
	return &out, status == http.StatusCreated, nil
}

// RemoveOptOut takes a number off the company's opt-out list (DELETE
// /opt-outs/{phoneNumber}); channel "" is OptOutAll. A number that was not
// on it is a 404.
func (c *Client) RemoveOptOut(ctx context.Context, phoneNumber string, channel OptOutChannel) error {
	var q url.Values
	if channel != "" {
		q = url.Values{"channel": {string(channel)}}
	}
	return c.do(ctx, http.MethodDelete, "/opt-outs/"+seg(phoneNumber), q, nil, nil)
}

// GetOptOutKeywords returns the company's opt-out keywords (GET
// /opt-outs/keywords).
func (c *Client) GetOptOutKeywords(ctx context.Context) (*OptOutKeywords, error) {
	var k OptOutKeywords
	if err := c.do(ctx, http.MethodGet, "/opt-outs/keywords", nil, nil, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// SetOptOutKeywords replaces the company's opt-out keywords (PUT
// /opt-outs/keywords) and returns them as stored. Both lists are sent,
// nil ones as empty (turning that action off).
func (c *Client) SetOptOutKeywords(ctx context.Context, k OptOutKeywords) (*OptOutKeywords, error) {
	if k.OptOut == nil {
		k.OptOut = []string{}
	}
	if k.OptIn == nil {
		k.OptIn = []string{}
	}
	var out OptOutKeywords
	if err := c.do(ctx, http.MethodPut, "/opt-outs/keywords", nil, k, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
