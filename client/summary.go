package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// StatusCounts counts messages by status.
type StatusCounts struct {
	Pending   int `json:"Pending"`
	Sending   int `json:"Sending"`
	Sent      int `json:"Sent"`
	Delivered int `json:"Delivered"`
	Seen      int `json:"Seen"`
	Failed    int `json:"Failed"`
}

// ChannelSummary counts one channel's messages.
type ChannelSummary struct {
	Total    int          `json:"total"`
	ByStatus StatusCounts `json:"byStatus"`
	// DeliveryRate is the percentage of the messages with a final status
	// that were Delivered or Seen; nil when none has a final status.
	DeliveryRate *float64 `json:"deliveryRate"`
}

// FailureCount counts the failed messages of one channel with one reason.
type FailureCount struct {
	// Reason is the failure's code (a message's details); nil when the
	// messages carry none.
	Reason  *string `json:"reason"`
	Channel string  `json:"channel"`
	Count   int     `json:"count"`
}

// Summary counts the messages created since a time: by status, by
// channel, and the failed ones by reason.
type Summary struct {
	Since     time.Time    `json:"since"`
	Total     int          `json:"total"`
	ByStatus  StatusCounts `json:"byStatus"`
	ByChannel struct {
		SMS  ChannelSummary `json:"Smpp"`
		Chat ChannelSummary `json:"Chat"`
	} `json:"byChannel"`
	DeliveryRate     *float64       `json:"deliveryRate"`
	FailuresByReason []FailureCount `json:"failuresByReason"`
}

// SummaryQuery is the query of a summary: since, when not zero, at most
// seven days back; zero is the start of the current UTC day.
func SummaryQuery(since time.Time) url.Values {
	if since.IsZero() {
		return nil
	}
	return url.Values{"since": {since.UTC().Format(time.RFC3339Nano)}}
}

// Summary counts the company's messages created since a time, direct
// sends included (GET /summary). A zero since is the start of the current
// UTC day; more than seven days back is a 400.
func (c *Client) Summary(ctx context.Context, since time.Time) (*Summary, error) {
	var out Summary
	if err := c.do(ctx, http.MethodGet, "/summary", SummaryQuery(since), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
