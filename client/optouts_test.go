package client_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/delivery"
)

// TestInbound: SMS people sent to the company's sender are listed, latest
// first, and filtered by number; a bad page size is a 400.
func TestInbound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	for i, text := range []string{"first", "second", "third"} {
		require.NoError(t, e.Herald.HandleInbound(ctx, delivery.InboundPart{From: digits(1 + i%2), To: "ACME", Text: text, Count: 1, Seq: 1,
			At: time.Now()}))
	}
	eventually(t, "three inbound SMS", func() bool {
		p, err := e.c.ListInbound(ctx, client.InboundListOptions{})
		require.NoError(t, err)
		return p.TotalCount == 3
	})
	p, err := e.c.ListInbound(ctx, client.InboundListOptions{PhoneNumber: phone(1)})
	require.NoError(t, err)
	require.Equal(t, 2, p.TotalCount)
	require.Equal(t, []string{"third", "first"}, []string{p.Items[0].Text, p.Items[1].Text}, "latest first")
	in := p.Items[0]
	require.Equal(t, digits(1), in.PhoneNumber)
	require.Equal(t, "ACME", in.To)
	require.Equal(t, 1, in.Parts)
	require.False(t, in.ReceivedAt.IsZero())
	require.Len(t, in.ID, 36)

	var texts []string
	for m, err := range e.c.AllInbound(ctx, client.InboundListOptions{PageOptions: client.PageOptions{PageSize: 2}}) {
		require.NoError(t, err)
		texts = append(texts, m.Text)
	}
	require.Equal(t, []string{"third", "second", "first"}, texts)
	_, err = e.c.ListInbound(ctx, client.InboundListOptions{PageOptions: client.PageOptions{PageSize: 101}})
	invalid(t, err, "pageSize")
}

// TestOptOuts: numbers are opted out and back in by hand, listed, and the
// company's keywords read and replaced; the refusals are decoded.
func TestOptOuts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	o, created, err := e.c.AddOptOut(ctx, client.OptOutInput{PhoneNumber: phone(1)})
	require.NoError(t, err)
	require.True(t, created, "201")
	require.Equal(t, digits(1), o.PhoneNumber)
	require.Equal(t, client.OptOutAll, o.Channel, "the default channel")
	require.Equal(t, "api", o.Source)
	require.False(t, o.CreatedAt.IsZero())
	_, created, err = e.c.AddOptOut(ctx, client.OptOutInput{PhoneNumber: phone(1)})
	require.NoError(t, err)
	require.False(t, created, "200: on the list already")
	_, created, err = e.c.AddOptOut(ctx, client.OptOutInput{PhoneNumber: phone(2), Channel: client.OptOutChat})
	require.NoError(t, err)
	require.True(t, created)
	_, _, err = e.c.AddOptOut(ctx, client.OptOutInput{PhoneNumber: "12-34"})
	invalid(t, err, "phoneNumber")
	_, _, err = e.c.AddOptOut(ctx, client.OptOutInput{PhoneNumber: phone(3), Channel: "Sms"})
	invalid(t, err, "channel")

	p, err := e.c.ListOptOuts(ctx, client.OptOutListOptions{})
	require.NoError(t, err)
	require.Equal(t, 2, p.TotalCount)
	require.Equal(t, digits(2), p.Items[0].PhoneNumber, "latest first")
	require.Equal(t, client.OptOutChat, p.Items[0].Channel)
	p, err = e.c.ListOptOuts(ctx, client.OptOutListOptions{PhoneNumber: digits(1)})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	var nums []string
	for o, err := range e.c.AllOptOuts(ctx, client.OptOutListOptions{PageOptions: client.PageOptions{PageSize: 1}}) {
		require.NoError(t, err)
		nums = append(nums, o.PhoneNumber)
	}
	require.Equal(t, []string{digits(2), digits(1)}, nums)

	// An opted-out number's direct SMS is recorded Failed, OPTED_OUT.
	res, err := e.c.SendSMS(ctx, client.DirectSMS{MessageContent: "x", SMSSenderID: e.SenderID, Recipients: []client.DirectRecipient{{PhoneNumber: phone(1)}}})
	require.NoError(t, err)
	msgs, err := e.c.ListMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID})
	require.NoError(t, err)
	require.Equal(t, client.MessageFailed, msgs.Items[0].Status)
	require.Equal(t, "OPTED_OUT", msgs.Items[0].Details)

	require.NoError(t, e.c.RemoveOptOut(ctx, phone(2), client.OptOutChat))
	err = e.c.RemoveOptOut(ctx, phone(2), client.OptOutChat)
	apiError(t, err, http.StatusNotFound, "Not Found")
	require.NoError(t, e.c.RemoveOptOut(ctx, phone(1), ""))
	p, err = e.c.ListOptOuts(ctx, client.OptOutListOptions{})
	require.NoError(t, err)
	require.Zero(t, p.TotalCount)

	k, err := e.c.GetOptOutKeywords(ctx)
	require.NoError(t, err)
	require.Contains(t, k.OptOut, "STOP")
	require.Contains(t, k.OptIn, "START")
	k, err = e.c.SetOptOutKeywords(ctx, client.OptOutKeywords{OptOut: []string{"ARRET", "STOP"}})
	require.NoError(t, err)
	require.Equal(t, []string{"ARRET", "STOP"}, k.OptOut)
	require.Equal(t, []string{}, k.OptIn, "nil is sent as an empty list: opting in by SMS is off")
	got, err := e.c.GetOptOutKeywords(ctx)
	require.NoError(t, err)
	require.Equal(t, k, got)
	_, err = e.c.SetOptOutKeywords(ctx, client.OptOutKeywords{OptOut: []string{"two words"}})
	apiError(t, err, http.StatusBadRequest, "Bad Request")
}

// TestWebhooks: an endpoint is registered, read, listed, given a new
// secret, shown its deliveries, sent one again and removed; the refusals
// are decoded.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	var received atomic.Int64
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hooks.Close)

	w, err := e.c.CreateWebhook(ctx, client.WebhookInput{URL: hooks.URL + "/events", Events: []client.WebhookEvent{client.EventCampaignStatus}})
	require.NoError(t, err)
	require.Len(t, w.ID, 36)
	require.True(t, strings.HasPrefix(w.Secret, "whsec_"), "secret %q", w.Secret)
	require.Equal(t, hooks.URL+"/events", w.URL)
	require.Equal(t, []client.WebhookEvent{client.EventCampaignStatus}, w.Events)
	require.True(t, w.Enabled)
	require.True(t, w.DisabledAt.IsZero())
	_, err = e.c.CreateWebhook(ctx, client.WebhookInput{URL: "ftp://hooks.example.com/x", Events: []client.WebhookEvent{client.EventMessageStatus}})
	invalid(t, err, "url")
	_, err = e.c.CreateWebhook(ctx, client.WebhookInput{URL: hooks.URL, Events: []client.WebhookEvent{"message.sent"}})
	require.True(t, client.IsBadRequest(err))
	require.Nil(t, w.Batch, "one event a request unless asked")
	_, err = e.c.CreateWebhook(ctx, client.WebhookInput{URL: hooks.URL + "/b", Events: []client.WebhookEvent{client.EventMessageStatus},
		Batch: &client.WebhookBatch{MaxEvents: 1001}})
	invalid(t, err, "batch.maxEvents")

	got, err := e.c.GetWebhook(ctx, w.ID)
	require.NoError(t, err)
	require.Empty(t, got.Secret, "the secret is shown once")
	require.Equal(t, w.ID, got.ID)
	require.True(t, w.CreatedAt.Equal(got.CreatedAt))
	_, err = e.c.GetWebhook(ctx, "0190f5c0-0000-7000-8000-000000000000")
	apiError(t, err, http.StatusNotFound, "Not Found")
	list, err := e.c.ListWebhooks(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, w.ID, list[0].ID)

	rot, err := e.c.RotateWebhookSecret(ctx, w.ID)
	require.NoError(t, err)
	require.NotEqual(t, w.Secret, rot.Secret)
	require.True(t, strings.HasPrefix(rot.Secret, "whsec_"))
	require.True(t, rot.PreviousSecretExpiresAt.After(time.Now().Add(23*time.Hour)), "the old secret signs for a day")
	_, err = e.c.RotateWebhookSecret(ctx, "0190f5c0-0000-7000-8000-000000000000")
	require.True(t, client.IsNotFound(err))

	// A send makes campaign.status events (InProgress, Completed),
	// delivered to the endpoint.
	res, err := e.c.SendSMS(ctx, client.DirectSMS{MessageContent: "x", SMSSenderID: e.SenderID, Recipients: []client.DirectRecipient{{PhoneNumber: phone(1)}}})
	require.NoError(t, err)
	e.waitStatus(res.CampaignID, client.CampaignCompleted)
	var ds *client.Page[client.WebhookDelivery]
	eventually(t, "the events delivered", func() bool {
		ds, err = e.c.ListWebhookDeliveries(ctx, w.ID, client.PageOptions{})
		require.NoError(t, err)
		for _, d := range ds.Items {
			if d.Status != client.DeliveryDelivered {
				return false
			}
		}
		return ds.TotalCount >= 2
	})
	d := ds.Items[len(ds.Items)-1]
	require.Equal(t, client.EventCampaignStatus, d.EventType)
	require.Equal(t, 1, d.Attempts)
	require.Equal(t, http.StatusNoContent, d.LastStatusCode)
	require.False(t, d.LastAttemptAt.IsZero())
	require.True(t, d.NextAttemptAt.IsZero(), "no next attempt once delivered")
	var body struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			CampaignID string `json:"campaignId"`
			Status     string `json:"status"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(d.Body, &body))
	require.Equal(t, d.EventID, body.ID)
	require.Equal(t, "campaign.status", body.Type)
	require.Equal(t, res.CampaignID, body.Data.CampaignID)
	require.Equal(t, "InProgress", body.Data.Status, "the oldest event: latest first")
	var all []client.WebhookDelivery
	for d, err := range e.c.AllWebhookDeliveries(ctx, w.ID, client.PageOptions{PageSize: 1}) {
		require.NoError(t, err)
		all = append(all, d)
	}
	require.Equal(t, ds.Items, all)
	_, err = e.c.ListWebhookDeliveries(ctx, "0190f5c0-0000-7000-8000-000000000000", client.PageOptions{})
	require.True(t, client.IsNotFound(err))

	before := received.Load()
	rd, err := e.c.RedeliverWebhookEvent(ctx, w.ID, d.EventID)
	require.NoError(t, err)
	require.Equal(t, &client.Redelivery{EventID: d.EventID, Status: client.DeliveryWaiting}, rd)
	eventually(t, "the event sent again", func() bool { return received.Load() > before })
	_, err = e.c.RedeliverWebhookEvent(ctx, w.ID, "0190f5c0-0000-7000-8000-000000000000")
	apiError(t, err, http.StatusNotFound, "Not Found")

	require.NoError(t, e.c.DeleteWebhook(ctx, w.ID))
	err = e.c.DeleteWebhook(ctx, w.ID)
	apiError(t, err, http.StatusNotFound, "Not Found")
	list, err = e.c.ListWebhooks(ctx)
	require.NoError(t, err)
	require.Empty(t, list)
}
