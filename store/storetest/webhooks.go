package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// testWebhooks: endpoints round-trip, stay within their company, are
// listed oldest first (with their batch settings), are limited in number per company (also when
// created at once), rotate their secret keeping the old one, and are
// deleted.
func testWebhooks(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	e1 := webhook.Endpoint{ID: f.id(), CompanyID: a.ID, URL: "https://hooks.example.com/a",
		Events: []webhook.EventType{webhook.MessageStatus, webhook.CampaignStatus}, Secret: "whsec_1", CreatedAt: at(1),
		Batch: webhook.Batch{MaxEvents: 250, MaxWait: 1500 * time.Millisecond}}
	e2 := webhook.Endpoint{ID: f.id(), CompanyID: b.ID, URL: "https://hooks.example.com/b",
		Events: []webhook.EventType{webhook.OptOutChanged}, Secret: "whsec_2", CreatedAt: at(2)}
	e3 := webhook.Endpoint{ID: f.id(), CompanyID: a.ID, URL: "https://hooks.example.com/a2",
		Events: []webhook.EventType{webhook.SurveyAnswered}, Secret: "whsec_3", CreatedAt: at(3)}
	for _, e := range []*webhook.Endpoint{&e1, &e2, &e3} {
		require.NoError(t, f.s.CreateWebhook(f.ctx, e, 10))
	}

	got, err := f.s.GetWebhook(f.ctx, a.ID, e1.ID)
	require.NoError(t, err)
	requireSame(t, e1, got)
	_, err = f.s.GetWebhook(f.ctx, b.ID, e1.ID)
	requireNotFound(t, err, "another company's endpoint")
	_, err = f.s.GetWebhook(f.ctx, a.ID, f.id())
	requireNotFound(t, err)

	list, err := f.s.ListWebhooks(f.ctx, a.ID)
	require.NoError(t, err)
	requireSameList(t, []webhook.Endpoint{e1, e3}, list)
	list, err = f.s.ListWebhooks(f.ctx, f.id())
	require.NoError(t, err)
	require.Empty(t, list)

	// rotation: the new secret signs, the old one until the time given
	rotated, err := f.s.RotateWebhookSecret(f.ctx, a.ID, e1.ID, "whsec_1b", at(100))
	require.NoError(t, err)
	want := e1
	want.Secret, want.PreviousSecret, want.PreviousUntil = "whsec_1b", "whsec_1", at(100)
	requireSame(t, want, rotated)
	got, err = f.s.GetWebhook(f.ctx, a.ID, e1.ID)
	require.NoError(t, err)
	requireSame(t, want, got)
	_, err = f.s.RotateWebhookSecret(f.ctx, b.ID, e1.ID, "whsec_x", at(100))
	requireNotFound(t, err, "another company's endpoint")

	// deletion
	requireNotFound(t, f.s.DeleteWebhook(f.ctx, b.ID, e1.ID), "another company's endpoint")
	require.NoError(t, f.s.DeleteWebhook(f.ctx, a.ID, e1.ID))
	requireNotFound(t, f.s.DeleteWebhook(f.ctx, a.ID, e1.ID), "deleted twice")
	_, err = f.s.GetWebhook(f.ctx, a.ID, e1.ID)
	requireNotFound(t, err)
	list, err = f.s.ListWebhooks(f.ctx, a.ID)
	require.NoError(t, err)
	requireSameList(t, []webhook.Endpoint{e3}, list)

	// the limit holds for concurrent registrations: A has one, may have 4
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			e := webhook.Endpoint{ID: f.id(), CompanyID: a.ID, URL: "https://hooks.example.com/many",
				Events: []webhook.EventType{webhook.MessageStatus}, Secret: "whsec_m", CreatedAt: at(10 + i)}
			errs[i] = f.s.CreateWebhook(f.ctx, &e, 4)
		})
	}
	wg.Wait()
	refused := 0
	for _, err := range errs {
		if err != nil {
			requireCode(t, err, messaging.Invalid)
			refused++
		}
	}
	require.Equal(t, 5, refused)
	list, err = f.s.ListWebhooks(f.ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, list, 4)
	list, err = f.s.ListWebhooks(f.ctx, b.ID)
	require.NoError(t, err)
	requireSameList(t, []webhook.Endpoint{e2}, list, "another company's limit is its own")
}

// endpoint registers an endpoint of the company subscribed to events.
func (f *fixture) endpoint(companyID messaging.ID, events ...webhook.EventType) webhook.Endpoint {
	f.t.Helper()
	e := webhook.Endpoint{ID: f.id(), CompanyID: companyID, URL: "https://hooks.example.com/" + f.id().String(),
		Events: events, Secret: "whsec_" + f.id().String(), CreatedAt: base}
	require.NoError(f.t, f.s.CreateWebhook(f.ctx, &e, 10))
	return e
}

// statusEvents returns the message and status of each message.status
// event waiting for the endpoint, in order (other events left out).
func (f *fixture) statusEvents(endpointID messaging.ID) []string {
	f.t.Helper()
	ds, err := f.s.WaitingDeliveries(f.ctx, endpointID, 1000)
	require.NoError(f.t, err)
	var out []string
	for _, d := range ds {
		require.Equal(f.t, endpointID, d.EndpointID)
		require.Equal(f.t, webhook.Waiting, d.State)
		if d.Event.Type != webhook.MessageStatus {
			continue
		}
		var data webhook.MessageStatusData
		require.NoError(f.t, json.Unmarshal(d.Event.Data, &data), "%s", d.Event.Data)
		require.Equal(f.t, d.Event.Subject, data.MessageID)
		out = append(out, fmt.Sprintf("%s %s", data.MessageID, data.Status))
	}
	return out
}

// testMessageStatusEvents: every status a message moves to but Sending is
// written as a message.status event, in the transaction of the move, with
// a delivery for each endpoint of its company subscribed to the type, in
// the order of the moves (also when one batch moves a message twice); a
// company without such an endpoint gets none, and the event shows the
// message as stored.
func testMessageStatusEvents(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	hookA := f.endpoint(a.ID, webhook.MessageStatus, webhook.CampaignStatus)
	hookA2 := f.endpoint(a.ID, webhook.MessageStatus)
	campaignsOnly := f.endpoint(a.ID, webhook.CampaignStatus)
	_ = f.endpoint(b.ID, webhook.SurveyAnswered)

	_, msgs := f.sentBulk(a.ID, 3)
	_, other := f.sentBulk(b.ID, 1)
	require.Empty(t, f.statusEvents(hookA.ID), "Sending is not reported")

	require.Equal(t, []bool{true, true, true}, f.apply(sent(msgs[0], 2, "P0"), sent(msgs[1], 2, "P1"), sent(other[0], 2, "Q0")))
	// msgs[2] goes Sent and Delivered in one batch (its receipt came
	// before its Sent was recorded)
	_, err := f.s.ApplyReceipts(f.ctx, []delivery.Receipt{rcpt("P2", delivery.StateDelivered, "000", 3)}, at(3))
	require.NoError(t, err)
	br, err := f.s.ApplyBatch(f.ctx, []delivery.StatusUpdate{sent(msgs[2], 4, "P2")},
		[]delivery.Receipt{rcpt("P0", delivery.StateDelivered, "000", 5), rcpt("P1", delivery.StateUndeliverable, "001", 5)}, at(6))
	require.NoError(t, err)
	require.Equal(t, []bool{true}, br.Applied)

	want := []string{
		msgs[0].ID.String() + " Sent", msgs[1].ID.String() + " Sent",
		msgs[2].ID.String() + " Sent", msgs[2].ID.String() + " Delivered",
	}
	got := f.statusEvents(hookA.ID)
	require.Len(t, got, 6)
	require.Equal(t, want[:2], got[:2], "the first batch's events come first")
	require.ElementsMatch(t, append(want[2:], msgs[0].ID.String()+" Delivered", msgs[1].ID.String()+" Failed"), got[2:])
	require.Less(t, indexOf(got, msgs[2].ID.String()+" Sent"), indexOf(got, msgs[2].ID.String()+" Delivered"),
		"one message's events in the order of its moves")
	require.Equal(t, got, f.statusEvents(hookA2.ID), "every subscribed endpoint gets each event")
	require.Empty(t, f.statusEvents(campaignsOnly.ID), "an endpoint not subscribed to message.status")

	// the event carries the message as stored when it moved
	ds, err := f.s.WaitingDeliveries(f.ctx, hookA.ID, 1000)
	require.NoError(t, err)
	var failed webhook.MessageStatusData
	for _, d := range ds {
		if d.Event.Type != webhook.MessageStatus {
			continue
		}
		var data webhook.MessageStatusData
		require.NoError(t, json.Unmarshal(d.Event.Data, &data))
		if data.Status == messaging.StatusFailed {
			failed = data
			require.Equal(t, a.ID, d.Event.CompanyID)
			requireTime(t, "event time: when the receipt was applied", at(6), d.Event.CreatedAt, nil)
		}
		if data.MessageID == msgs[2].ID && data.Status == messaging.StatusSent {
			require.Nil(t, data.DeliveredAt, "the Sent event of a message delivered in the same batch shows no delivery")
		}
	}
	require.Equal(t, msgs[1].Phone, failed.PhoneNumber)
	require.Equal(t, messaging.ChannelSMS, failed.ChannelType)
	require.NotNil(t, failed.SMSErrorCode)
	require.Equal(t, "001", *failed.SMSErrorCode)
	require.NotNil(t, failed.SentAt)
	require.Nil(t, failed.FallbackFor)

	// a deleted endpoint gets nothing more
	require.NoError(t, f.s.DeleteWebhook(f.ctx, a.ID, hookA2.ID))
	_, more := f.sentBulk(a.ID, 1)
	require.Equal(t, []bool{true}, f.apply(sent(more[0], 7, "P9")))
	require.Len(t, f.statusEvents(hookA.ID), 7)
	f.requireReconciled()
}

// testMessageStatusEventsAsMoved: a message.status event shows the
// message as it was when it moved, not as it is when the event is read: a
// retry's Pending event has no sentAt once the message was sent after it.
func testMessageStatusEventsAsMoved(f *fixture) {
	t := f.t
	a := f.company("A")
	h := f.endpoint(a.ID, webhook.MessageStatus)
	_, msgs := f.sentBulk(a.ID, 2)
	require.Equal(t, []bool{true, true}, f.apply(sent(msgs[0], 2, "P0"),
		delivery.StatusUpdate{MessageID: msgs[1].ID, Status: messaging.StatusPending, At: at(2), DueAt: at(3), Details: "THROTTLED"}))
	require.Len(t, f.claim(messaging.ChannelSMS, at(4), at(600), 1), 1)
	require.Equal(t, []bool{true}, f.apply(sent(msgs[1], 5, "P1")))

	ds, err := f.s.WaitingDeliveries(f.ctx, h.ID, 100)
	require.NoError(t, err)
	var got []webhook.MessageStatusData
	for _, d := range ds {
		var data webhook.MessageStatusData
		require.NoError(t, json.Unmarshal(d.Event.Data, &data), "%s", d.Event.Data)
		if data.MessageID == msgs[1].ID {
			got = append(got, data)
		}
	}
	require.Len(t, got, 2)
	require.Equal(t, messaging.StatusPending, got[0].Status)
	require.Nil(t, got[0].SentAt, "the retry came before the send")
	require.NotNil(t, got[0].Details)
	require.Equal(t, "THROTTLED", *got[0].Details)
	require.Equal(t, msgs[1].Phone, got[0].PhoneNumber)
	require.Equal(t, messaging.StatusSent, got[1].Status)
	require.NotNil(t, got[1].SentAt)
	require.Nil(t, got[1].Details, "a Sent event shows no details")
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// testWebhookOutbox: endpoints are leased to one owner at a time until
// the lease ends; attempts record their outcome on the delivery (a
// delivered or given-up delivery no longer waits, one to retry waits with
// its next time and the attempt's figures); a disabled endpoint is leased
// to nobody and reads as disabled.
func testWebhookOutbox(f *fixture) {
	t := f.t
	a := f.company("A")
	h1 := f.endpoint(a.ID, webhook.MessageStatus)
	h2 := f.endpoint(a.ID, webhook.MessageStatus)

	got, err := f.s.LeaseWebhooks(f.ctx, "p1", at(0), at(30))
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, h1.Secret, got[0].Secret, "the sender needs the secrets")
	got, err = f.s.LeaseWebhooks(f.ctx, "p2", at(10), at(40))
	require.NoError(t, err)
	require.Empty(t, got, "leased to p1 until 30")
	got, err = f.s.LeaseWebhooks(f.ctx, "p1", at(20), at(50))
	require.NoError(t, err)
	require.Len(t, got, 2, "p1 renews its own leases")
	got, err = f.s.LeaseWebhooks(f.ctx, "p2", at(51), at(80))
	require.NoError(t, err)
	require.Len(t, got, 2, "p2 takes them once p1's lease ended")
	require.False(t, got[0].Batch.Batched())

	// a batched endpoint is leased with its batch settings
	hb := webhook.Endpoint{ID: f.id(), CompanyID: f.company("B").ID, URL: "https://hooks.example.com/batch",
		Events: []webhook.EventType{webhook.CampaignStatus}, Secret: "whsec_b", CreatedAt: at(5),
		Batch: webhook.Batch{MaxEvents: 1000, MaxWait: time.Minute}}
	require.NoError(t, f.s.CreateWebhook(f.ctx, &hb, 10))
	got, err = f.s.LeaseWebhooks(f.ctx, "p3", at(52), at(80))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, hb.Batch, got[0].Batch)
	require.NoError(t, f.s.DeleteWebhook(f.ctx, hb.CompanyID, hb.ID))

	_, msgs := f.sentBulk(a.ID, 3)
	require.Equal(t, []bool{true, true, true}, f.apply(sent(msgs[0], 2, "P0"), sent(msgs[1], 2, "P1"), sent(msgs[2], 2, "P2")))
	ds, err := f.s.WaitingDeliveries(f.ctx, h1.ID, 10)
	require.NoError(t, err)
	require.Len(t, ds, 3)
	for _, d := range ds {
		require.Zero(t, d.Attempts)
		require.Nil(t, d.LastAt)
	}
	require.NoError(t, f.s.RecordAttempts(f.ctx, []webhook.Attempt{
		{DeliveryID: ds[0].ID, At: at(3), Status: 204, Latency: 1500 * time.Microsecond, State: webhook.Delivered, NextAt: at(3)},
		{DeliveryID: ds[1].ID, At: at(3), Status: 503, Error: "HTTP 503", Latency: 2 * time.Millisecond, State: webhook.Waiting, NextAt: at(13)},
		{DeliveryID: ds[2].ID, At: at(3), Status: 0, Error: "connection refused", State: webhook.GaveUp, NextAt: at(3)},
	}))
	left, err := f.s.WaitingDeliveries(f.ctx, h1.ID, 10)
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, ds[1].ID, left[0].ID)
	require.Equal(t, 1, left[0].Attempts)
	requireTime(t, "NextAt", at(13), left[0].NextAt, nil)
	require.NotNil(t, left[0].LastAt)
	requireTime(t, "LastAt", at(3), *left[0].LastAt, nil)
	require.Equal(t, 503, left[0].LastStatus)
	require.Equal(t, "HTTP 503", left[0].LastError)
	require.Equal(t, 2*time.Millisecond, left[0].LastLatency)
	other, err := f.s.WaitingDeliveries(f.ctx, h2.ID, 10)
	require.NoError(t, err)
	require.Len(t, other, 3, "another endpoint's deliveries of the same events are its own")

	// a batch's attempts, alike but for their delivery, are recorded as
	// one run; the attempts around it each on its own
	_, more := f.sentBulk(a.ID, 9)
	var moves []delivery.StatusUpdate
	for i, m := range more {
		moves = append(moves, sent(m, 2, fmt.Sprintf("Q%d", i)))
	}
	f.apply(moves...)
	other, err = f.s.WaitingDeliveries(f.ctx, h2.ID, 100)
	require.NoError(t, err)
	require.Len(t, other, 12)
	var batch []webhook.Attempt
	for _, d := range other[1:11] {
		batch = append(batch, webhook.Attempt{DeliveryID: d.ID, At: at(4), Status: 503, Error: "HTTP 503", Latency: 3 * time.Millisecond,
			State: webhook.Waiting, NextAt: at(14)})
	}
	require.NoError(t, f.s.RecordAttempts(f.ctx, append(append([]webhook.Attempt{
		{DeliveryID: other[0].ID, At: at(4), Status: 204, State: webhook.Delivered, NextAt: at(4)}}, batch...),
		webhook.Attempt{DeliveryID: other[11].ID, At: at(5), Status: 410, Error: "HTTP 410", State: webhook.GaveUp, NextAt: at(5)})))
	left, err = f.s.WaitingDeliveries(f.ctx, h2.ID, 100)
	require.NoError(t, err)
	require.Len(t, left, 10, "the first delivered, the last given up")
	for i, d := range left {
		require.Equal(t, other[i+1].ID, d.ID)
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, 503, d.LastStatus)
		require.Equal(t, "HTTP 503", d.LastError)
		require.Equal(t, 3*time.Millisecond, d.LastLatency)
		requireTime(t, "NextAt", at(14), d.NextAt, nil)
	}

	require.NoError(t, f.s.DisableWebhook(f.ctx, h1.ID, at(90), "answered 410 Gone"))
	e, err := f.s.GetWebhook(f.ctx, a.ID, h1.ID)
	require.NoError(t, err)
	require.NotNil(t, e.DisabledAt)
	requireTime(t, "DisabledAt", at(90), *e.DisabledAt, nil)
	require.Equal(t, "answered 410 Gone", e.DisabledReason)
	got, err = f.s.LeaseWebhooks(f.ctx, "p2", at(91), at(120))
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, h2.ID, got[0].ID, "a disabled endpoint is not leased")
	requireNotFound(t, f.s.DisableWebhook(f.ctx, f.id(), at(90), "x"))
	f.requireReconciled()
}

// testPurgeWebhookEvents: events written before a time go with their
// deliveries, oldest first and limit at a time; later ones stay.
func testPurgeWebhookEvents(f *fixture) {
	t := f.t
	a := f.company("A")
	h := f.endpoint(a.ID, webhook.MessageStatus)
	_, msgs := f.sentBulk(a.ID, 5)
	for i, m := range msgs {
		require.Equal(t, []bool{true}, f.apply(sent(m, 2, fmt.Sprintf("P%d", i))))
	}
	n, err := f.s.PurgeEvents(f.ctx, time.Now().Add(-time.Hour), 10)
	require.NoError(t, err)
	require.Zero(t, n, "nothing was written an hour ago")
	require.Len(t, f.statusEvents(h.ID), 5)

	n, err = f.s.PurgeEvents(f.ctx, time.Now().Add(time.Second), 2)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	left := f.statusEvents(h.ID)
	require.Equal(t, []string{msgs[2].ID.String() + " Sent", msgs[3].ID.String() + " Sent", msgs[4].ID.String() + " Sent"}, left,
		"the oldest go first")
	n, err = f.s.PurgeEvents(f.ctx, time.Now().Add(time.Second), 10)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Empty(t, f.statusEvents(h.ID))
	n, err = f.s.PurgeEvents(f.ctx, time.Now().Add(time.Second), 10)
	require.NoError(t, err)
	require.Zero(t, n)
}

// testWebhookDeliveryLog: an endpoint's deliveries are listed latest
// event first, paged, with their last attempt, to its company only; a
// delivery is made to wait again, due at once, keeping its attempts.
func testWebhookDeliveryLog(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	h := f.endpoint(a.ID, webhook.MessageStatus)
	_, msgs := f.sentBulk(a.ID, 3)
	for i, m := range msgs {
		require.Equal(t, []bool{true}, f.apply(sent(m, 2+i, fmt.Sprintf("P%d", i))))
	}
	waiting, err := f.s.WaitingDeliveries(f.ctx, h.ID, 10)
	require.NoError(t, err)
	require.Len(t, waiting, 3)
	require.NoError(t, f.s.RecordAttempts(f.ctx, []webhook.Attempt{
		{DeliveryID: waiting[0].ID, At: at(9), Status: 200, Latency: time.Millisecond, State: webhook.Delivered, NextAt: at(9)},
	}))

	page, total, err := f.s.ListDeliveries(f.ctx, a.ID, h.ID, messaging.PageRequest{Page: 1, PageSize: 2})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Len(t, page, 2)
	require.Equal(t, waiting[2].Event.ID, page[0].Event.ID, "latest event first")
	require.Equal(t, waiting[1].Event.ID, page[1].Event.ID)
	page, _, err = f.s.ListDeliveries(f.ctx, a.ID, h.ID, messaging.PageRequest{Page: 2, PageSize: 2})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, waiting[0].Event.ID, page[0].Event.ID)
	require.Equal(t, webhook.Delivered, page[0].State)
	require.Equal(t, 1, page[0].Attempts)
	require.Equal(t, 200, page[0].LastStatus)
	require.JSONEq(t, string(waiting[0].Event.Data), string(page[0].Event.Data))
	_, _, err = f.s.ListDeliveries(f.ctx, b.ID, h.ID, messaging.PageRequest{Page: 1, PageSize: 2})
	requireNotFound(t, err, "another company's endpoint")

	require.NoError(t, f.s.Redeliver(f.ctx, a.ID, h.ID, waiting[0].Event.ID, at(20)))
	again, err := f.s.WaitingDeliveries(f.ctx, h.ID, 10)
	require.NoError(t, err)
	require.Len(t, again, 3)
	require.Equal(t, waiting[0].ID, again[0].ID)
	require.Equal(t, 1, again[0].Attempts, "its attempts are kept")
	requireTime(t, "NextAt", at(20), again[0].NextAt, nil)
	requireNotFound(t, f.s.Redeliver(f.ctx, b.ID, h.ID, waiting[0].Event.ID, at(20)), "another company's endpoint")
	requireNotFound(t, f.s.Redeliver(f.ctx, a.ID, h.ID, f.id(), at(20)), "no such event")
}

// campaignEvents returns the campaign.status events waiting for the
// endpoint, in order.
func (f *fixture) campaignEvents(endpointID messaging.ID) []webhook.CampaignStatusData {
	f.t.Helper()
	ds, err := f.s.WaitingDeliveries(f.ctx, endpointID, 1000)
	require.NoError(f.t, err)
	var out []webhook.CampaignStatusData
	for _, d := range ds {
		require.Equal(f.t, webhook.CampaignStatus, d.Event.Type)
		var data webhook.CampaignStatusData
		require.NoError(f.t, json.Unmarshal(d.Event.Data, &data), "%s", d.Event.Data)
		require.Equal(f.t, d.Event.Subject, data.CampaignID)
		out = append(out, data)
	}
	return out
}

// testCampaignStatusEvents: a campaign's moves to Ready, InProgress,
// Completed and Failed are written as campaign.status events in the
// transaction of the move, in order, with the counters as they are then;
// only for companies subscribed to the type.
func testCampaignStatusEvents(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	hook := f.endpoint(a.ID, webhook.CampaignStatus)
	statusOnly := f.endpoint(a.ID, webhook.MessageStatus)
	other := f.endpoint(b.ID, webhook.MessageStatus)

	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 2, at(0), messaging.CampaignInProgress)
	_, _ = f.bulk(b.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	require.Len(t, f.claim(messaging.ChannelSMS, at(1), at(600), 10), 3)
	require.Equal(t, []bool{true, true}, f.apply(sent(msgs[0], 2, "P0"), sent(msgs[1], 2, "P1")))
	f.receipts(3, rcpt("P0", delivery.StateDelivered, "000", 3), rcpt("P1", delivery.StateUndeliverable, "001", 3))
	failed := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 5, at(4)))
	require.NoError(t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: failed.ID,
		From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignFailed, At: at(5), Reason: "preparation stopped"}))
	completed, err := f.s.CompleteDrained(f.ctx, at(6))
	require.NoError(t, err)
	require.Len(t, completed, 1, "A's campaign is drained; B's message is still Sending")

	got := f.campaignEvents(hook.ID)
	require.Len(t, got, 4)
	for i, want := range []messaging.CampaignStatus{messaging.CampaignReady, messaging.CampaignInProgress} {
		require.Equal(t, c.ID, got[i].CampaignID)
		require.Equal(t, want, got[i].Status)
		require.Equal(t, 2, got[i].TotalMessages)
		require.Equal(t, 2, got[i].PendingCount)
	}
	require.Nil(t, got[0].StartedAt)
	require.NotNil(t, got[1].StartedAt)
	require.Equal(t, failed.ID, got[2].CampaignID)
	require.Equal(t, messaging.CampaignFailed, got[2].Status)
	require.NotNil(t, got[2].FailureReason)
	require.Equal(t, "preparation stopped", *got[2].FailureReason)
	done := got[3]
	require.Equal(t, c.ID, done.CampaignID)
	require.Equal(t, messaging.CampaignCompleted, done.Status)
	require.Equal(t, 1, done.DeliveredCount)
	require.Equal(t, 1, done.FailedCount)
	require.Zero(t, done.PendingCount)
	require.NotNil(t, done.CompletedAt)
	require.Equal(t, messaging.ModeBulk, done.SendingMode)

	require.Empty(t, f.campaignEvents(other.ID), "B subscribes to message.status only")
	ds, err := f.s.WaitingDeliveries(f.ctx, statusOnly.ID, 100)
	require.NoError(t, err)
	for _, d := range ds {
		require.Equal(t, webhook.MessageStatus, d.Event.Type)
	}
	f.requireReconciled()
}

// testSurveyAnsweredEvents: each answer stored (the first to its message)
// is written as a survey.answered event about the message, for the
// companies subscribed to the type; a repeated answer writes none.
func testSurveyAnsweredEvents(f *fixture) {
	t := f.t
	a := f.company("A")
	hook := f.endpoint(a.ID, webhook.SurveyAnswered)
	_, msgs := f.surveyCampaign(a.ID, 2)
	f.record(f.result(msgs[0], 1, at(5)))
	f.record(f.result(msgs[1], 0, at(6)))
	again := f.result(msgs[0], 0, at(7))
	stored, err := f.recordOne(&again)
	require.NoError(t, err)
	require.False(t, stored)

	ds, err := f.s.WaitingDeliveries(f.ctx, hook.ID, 10)
	require.NoError(t, err)
	require.Len(t, ds, 2)
	for i, d := range ds {
		require.Equal(t, webhook.SurveyAnswered, d.Event.Type)
		require.Equal(t, msgs[i].ID, d.Event.Subject)
		var data webhook.SurveyAnsweredData
		require.NoError(t, json.Unmarshal(d.Event.Data, &data))
		require.Equal(t, msgs[i].ID, data.MessageID)
		require.Equal(t, msgs[i].Phone, data.PhoneNumber)
		require.Equal(t, 1-i, data.SelectedOptionIndex)
	}
}

// testWebhookBatchedDeliveries: an endpoint taking batches gets every
// event of its company in order, the deliveries that share an ID (the
// events of one write, as many as its batch takes) in a row; one attempt
// records all of them; the delivery log lists each event, latest first;
// redelivering one event of a delivered batch makes that event alone wait,
// its attempts kept; another company's endpoint gets none of it.
func testWebhookBatchedDeliveries(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	h := webhook.Endpoint{ID: f.id(), CompanyID: a.ID, URL: "https://hooks.example.com/batched",
		Events: []webhook.EventType{webhook.MessageStatus}, Secret: "whsec_b", CreatedAt: base,
		Batch: webhook.Batch{MaxEvents: 2, MaxWait: time.Second}}
	require.NoError(t, f.s.CreateWebhook(f.ctx, &h, 10))
	other := webhook.Endpoint{ID: f.id(), CompanyID: b.ID, URL: "https://hooks.example.com/other",
		Events: []webhook.EventType{webhook.MessageStatus}, Secret: "whsec_o", CreatedAt: base, Batch: webhook.Batch{MaxEvents: 100}}
	require.NoError(t, f.s.CreateWebhook(f.ctx, &other, 10))

	_, msgs := f.sentBulk(a.ID, 3)
	require.Equal(t, []bool{true, true, true}, f.apply(sent(msgs[0], 2, "P0"), sent(msgs[1], 2, "P1"), sent(msgs[2], 2, "P2")))
	f.receipts(3, rcpt("P0", delivery.StateDelivered, "000", 3))
	require.Equal(t, []string{msgs[0].ID.String() + " Sent", msgs[1].ID.String() + " Sent", msgs[2].ID.String() + " Sent",
		msgs[0].ID.String() + " Delivered"}, f.statusEvents(h.ID))
	require.Empty(t, f.statusEvents(other.ID), "another company's endpoint")

	ds, err := f.s.WaitingDeliveries(f.ctx, h.ID, 100)
	require.NoError(t, err)
	require.Len(t, ds, 4)
	var ids []messaging.ID // one a delivery, in order
	for i, d := range ds {
		if i == 0 || d.ID != ds[i-1].ID {
			require.NotContains(t, ids, d.ID, "the events of a delivery come in a row")
			ids = append(ids, d.ID)
		}
	}
	for _, id := range ids {
		n := 0
		for _, d := range ds {
			if d.ID == id {
				n++
			}
		}
		require.LessOrEqual(t, n, 2, "no delivery holds more events than the batch takes")
	}
	var attempts []webhook.Attempt
	for _, id := range ids {
		if id != ds[3].ID {
			attempts = append(attempts, webhook.Attempt{DeliveryID: id, At: at(9), Status: 200, Latency: time.Millisecond,
				State: webhook.Delivered, NextAt: at(9)})
		}
	}
	require.NoError(t, f.s.RecordAttempts(f.ctx, attempts))
	left, err := f.s.WaitingDeliveries(f.ctx, h.ID, 100)
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, ds[3].Event.ID, left[0].Event.ID, "the receipt's event still waits")

	page, total, err := f.s.ListDeliveries(f.ctx, a.ID, h.ID, messaging.PageRequest{Page: 1, PageSize: 3})
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Len(t, page, 3)
	require.Equal(t, ds[3].Event.ID, page[0].Event.ID, "latest event first")
	require.Equal(t, webhook.Waiting, page[0].State)
	require.Equal(t, ds[2].Event.ID, page[1].Event.ID)
	require.Equal(t, ds[1].Event.ID, page[2].Event.ID)
	for _, d := range page[1:] {
		require.Equal(t, webhook.Delivered, d.State)
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, 200, d.LastStatus)
	}
	page, _, err = f.s.ListDeliveries(f.ctx, a.ID, h.ID, messaging.PageRequest{Page: 2, PageSize: 3})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, ds[0].Event.ID, page[0].Event.ID)
	require.JSONEq(t, string(ds[0].Event.Data), string(page[0].Event.Data))

	// redelivering the second event of the first write
	require.NoError(t, f.s.Redeliver(f.ctx, a.ID, h.ID, ds[1].Event.ID, at(20)))
	again, err := f.s.WaitingDeliveries(f.ctx, h.ID, 100)
	require.NoError(t, err)
	require.Len(t, again, 2, "the event redelivered and the one that waited")
	require.ElementsMatch(t, []messaging.ID{ds[1].Event.ID, ds[3].Event.ID}, []messaging.ID{again[0].Event.ID, again[1].Event.ID})
	for _, d := range again {
		if d.Event.ID == ds[1].Event.ID {
			require.Equal(t, 1, d.Attempts, "its attempts are kept")
			requireTime(t, "NextAt", at(20), d.NextAt, nil)
		}
	}
	page, total, err = f.s.ListDeliveries(f.ctx, a.ID, h.ID, messaging.PageRequest{Page: 1, PageSize: 10})
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Len(t, page, 4)
	states := map[messaging.ID]webhook.DeliveryState{}
	for _, d := range page {
		states[d.Event.ID] = d.State
	}
	require.Equal(t, map[messaging.ID]webhook.DeliveryState{ds[0].Event.ID: webhook.Delivered, ds[1].Event.ID: webhook.Waiting,
		ds[2].Event.ID: webhook.Delivered, ds[3].Event.ID: webhook.Waiting}, states, "the others keep their outcome")
	require.NoError(t, f.s.Redeliver(f.ctx, a.ID, h.ID, ds[0].Event.ID, at(21)))
	again, err = f.s.WaitingDeliveries(f.ctx, h.ID, 100)
	require.NoError(t, err)
	require.Len(t, again, 3)
	requireNotFound(t, f.s.Redeliver(f.ctx, b.ID, h.ID, ds[2].Event.ID, at(20)), "another company's endpoint")
	requireNotFound(t, f.s.Redeliver(f.ctx, a.ID, h.ID, f.id(), at(20)), "no such event")
	f.requireReconciled()
}
