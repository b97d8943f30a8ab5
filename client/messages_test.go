package client_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// TestMessages: GET /messages filters by number, external id, campaign,
// status and dates; GET /messages/{id} reads one; the refusals are
// decoded.
func TestMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	res, err := e.c.SendSMS(ctx, client.DirectSMS{MessageContent: "a", SMSSenderID: e.SenderID,
		Recipients: []client.DirectRecipient{{PhoneNumber: phone(1), ExternalUserID: "crm-1"}, {PhoneNumber: phone(2)}}})
	require.NoError(t, err)
	e.waitCampaign(res.CampaignID, "delivered", func(c *client.CampaignDetail) bool { return c.DeliveredCount == 2 })

	byPhone, err := e.c.ListMessages(ctx, client.MessageListOptions{PhoneNumber: phone(1)})
	require.NoError(t, err)
	require.Len(t, byPhone.Items, 1, "a + in the number is sent encoded")
	m := byPhone.Items[0]
	require.Equal(t, digits(1), m.PhoneNumber)
	require.Equal(t, res.CampaignID, m.CampaignID)
	require.Equal(t, "a", m.MessageContent)
	require.Equal(t, client.MessageDelivered, m.Status)
	require.Empty(t, m.Details)
	require.Empty(t, m.Route, "no routing in this server")

	got, err := e.c.GetMessage(ctx, m.ID)
	require.NoError(t, err)
	require.Equal(t, &m, got)

	for _, c := range []struct {
		name string
		opts client.MessageListOptions
		want int
	}{
		{"external id", client.MessageListOptions{ExternalUserID: "crm-1"}, 1},
		{"campaign", client.MessageListOptions{CampaignID: res.CampaignID}, 2},
		{"campaign and status", client.MessageListOptions{CampaignID: res.CampaignID, Status: client.MessageDelivered}, 2},
		{"campaign and another status", client.MessageListOptions{CampaignID: res.CampaignID, Status: client.MessageFailed}, 0},
		{"since a minute ago", client.MessageListOptions{CampaignID: res.CampaignID, StartDate: time.Now().Add(-time.Minute)}, 2},
		{"until a minute ago", client.MessageListOptions{CampaignID: res.CampaignID, EndDate: time.Now().Add(-time.Minute)}, 0},
		{"in the future", client.MessageListOptions{CampaignID: res.CampaignID, StartDate: time.Now().Add(time.Minute)}, 0},
	} {
		p, err := e.c.ListMessages(ctx, c.opts)
		require.NoError(t, err, c.name)
		require.Len(t, p.Items, c.want, c.name)
		require.Equal(t, c.want, p.TotalCount, c.name)
	}

	_, err = e.c.ListMessages(ctx, client.MessageListOptions{})
	apiError(t, err, http.StatusBadRequest, "Bad Request")
	_, err = e.c.ListMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID, Status: "Lost"})
	invalid(t, err, "status")
	_, err = e.c.ListMessages(ctx, client.MessageListOptions{CampaignID: "0190f5c0-0000-7000-8000-000000000000"})
	require.True(t, client.IsNotFound(err), "an unknown campaign: %v", err)
	_, err = e.c.GetMessage(ctx, "0190f5c0-0000-7000-8000-000000000000")
	apiError(t, err, http.StatusNotFound, "Not Found")
}

// TestPagination: 25 messages read 10 at a time come whole and in the
// server's order, in three requests; breaking out of the loop stops the
// requests; an error ends the iteration with it.
func TestPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	tpl := e.smsTemplate("t", "hello")
	res, err := e.c.SendSMSPromotional(ctx, client.BulkSend{TemplateID: tpl.ID, Recipients: recipients(100, 25)})
	require.NoError(t, err)
	e.waitStatus(res.CampaignID, client.CampaignReady)

	whole, err := e.c.ListMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID, PageOptions: client.PageOptions{PageSize: 100}})
	require.NoError(t, err)
	require.Len(t, whole.Items, 25)
	require.Equal(t, 1, whole.TotalPages)

	before := e.calls.count("GET", "/api/v1/messages")
	var got []client.Message
	for m, err := range e.c.AllMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID, PageOptions: client.PageOptions{PageSize: 10}}) {
		require.NoError(t, err)
		got = append(got, m)
	}
	require.Equal(t, whole.Items, got, "every message once, in the server's order")
	phones := map[string]bool{}
	for _, m := range got {
		phones[m.PhoneNumber] = true
	}
	require.Len(t, phones, 25)
	require.Equal(t, 3, e.calls.count("GET", "/api/v1/messages")-before, "pages of 10, 10 and 5")

	page3, err := e.c.ListMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID, PageOptions: client.PageOptions{Page: 3, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, whole.Items[20:], page3.Items)
	require.Equal(t, client.Page[client.Message]{Items: page3.Items, TotalCount: 25, Page: 3, PageSize: 10, TotalPages: 3}, *page3)

	// From page 2: the 15 after the first ten.
	got = got[:0]
	for m, err := range e.c.AllMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID, PageOptions: client.PageOptions{Page: 2, PageSize: 10}}) {
		require.NoError(t, err)
		got = append(got, m)
	}
	require.Equal(t, whole.Items[10:], got)

	before = e.calls.count("GET", "/api/v1/messages")
	n := 0
	for _, err := range e.c.AllMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID, PageOptions: client.PageOptions{PageSize: 10}}) {
		require.NoError(t, err)
		if n++; n == 12 {
			break
		}
	}
	require.Equal(t, 2, e.calls.count("GET", "/api/v1/messages")-before, "no page is asked for after the break")

	var errs []error
	for m, err := range e.c.AllMessages(ctx, client.MessageListOptions{}) {
		require.Zero(t, m)
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	apiError(t, errs[0], http.StatusBadRequest, "Bad Request")
}

// TestSurveys: answers to a survey campaign are listed and summarised;
// the refusals are decoded.
func TestSurveys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	tpl, err := e.c.CreateChatTemplate(ctx, client.ChatTemplateInput{Name: "feedback", MessageType: client.TypeSurvey,
		TemplateContent: "How was your visit?", ChatServiceID: e.ChatServiceID,
		TypeSpecificConfig: &client.ChatConfig{Options: []client.SurveyOption{{OptionText: "Great", OptionValue: "great"},
			{OptionText: "Fine", OptionValue: "fine"}, {OptionText: "Poor", OptionValue: "poor"}}}})
	require.NoError(t, err)
	res, err := e.c.SendChatBulk(ctx, client.BulkSend{TemplateID: tpl.ID, Recipients: []client.Recipient{
		{PhoneNumber: phone(1), ExternalUserID: "crm-1"}, {PhoneNumber: phone(2)}, {PhoneNumber: phone(3)}, {PhoneNumber: phone(4)}}})
	require.NoError(t, err)
	e.waitStatus(res.CampaignID, client.CampaignReady)
	_, err = e.c.StartCampaign(ctx, res.CampaignID)
	require.NoError(t, err)
	e.waitCampaign(res.CampaignID, "every survey sent", func(c *client.CampaignDetail) bool { return c.Status == client.CampaignCompleted })

	// Three people answer, as the chat provider's callbacks tell.
	msgs, err := e.c.ListMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID})
	require.NoError(t, err)
	answers := map[string]int{digits(1): 1, digits(2): 1, digits(3): 2}
	for _, m := range msgs.Items {
		opt, ok := answers[m.PhoneNumber]
		if !ok {
			continue
		}
		id, err := messaging.ParseID(m.ID)
		require.NoError(t, err)
		_, err = e.Herald.Reporter().ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundReply, MessageID: id, Phone: m.PhoneNumber,
			OptionIndex: opt, At: time.Now()})
		require.NoError(t, err)
	}

	page, err := e.c.ListSurveyResults(ctx, client.SurveyResultListOptions{CampaignID: res.CampaignID})
	require.NoError(t, err)
	require.Equal(t, 3, page.TotalCount)
	var r1 client.SurveyResult
	for _, r := range page.Items {
		require.Equal(t, res.CampaignID, r.CampaignID)
		require.Equal(t, answers[r.PhoneNumber], r.SelectedOptionIndex)
		require.False(t, r.RespondedAt.IsZero())
		if r.PhoneNumber == digits(1) {
			r1 = r
		}
	}
	require.Equal(t, "crm-1", r1.ExternalUserID)
	require.Equal(t, "Fine", r1.SelectedOptionText)
	one := 1
	fine, err := e.c.ListSurveyResults(ctx, client.SurveyResultListOptions{CampaignID: res.CampaignID, SelectedOptionIndex: &one})
	require.NoError(t, err)
	require.Equal(t, 2, fine.TotalCount)
	byPhone, err := e.c.ListSurveyResults(ctx, client.SurveyResultListOptions{CampaignID: res.CampaignID, PhoneNumber: phone(3)})
	require.NoError(t, err)
	require.Len(t, byPhone.Items, 1)
	var all []client.SurveyResult
	for r, err := range e.c.AllSurveyResults(ctx, client.SurveyResultListOptions{CampaignID: res.CampaignID, PageOptions: client.PageOptions{PageSize: 2}}) {
		require.NoError(t, err)
		all = append(all, r)
	}
	require.Equal(t, page.Items, all)

	sum, err := e.c.SurveySummary(ctx, res.CampaignID)
	require.NoError(t, err)
	require.Equal(t, res.CampaignID, sum.CampaignID)
	require.Equal(t, 3, sum.TotalResponses)
	require.Equal(t, 4, sum.TotalMessagesSent)
	require.Equal(t, 75.0, sum.ResponseRate)
	require.Equal(t, []client.OptionCount{{0, "Great", 0, 0}, {1, "Fine", 2, 66.67}, {2, "Poor", 1, 33.33}}, sum.OptionBreakdown)

	_, err = e.c.ListSurveyResults(ctx, client.SurveyResultListOptions{})
	invalid(t, err, "campaignId")
	_, err = e.c.SurveySummary(ctx, "0190f5c0-0000-7000-8000-000000000000")
	apiError(t, err, http.StatusNotFound, "Not Found")
	plain := e.smsTemplate("plain", "x")
	tx, err := e.c.CreateSMSCampaign(ctx, client.CampaignInput{Name: "tx", TemplateID: plain.ID})
	require.NoError(t, err)
	_, err = e.c.SurveySummary(ctx, tx.CampaignID)
	apiError(t, err, http.StatusBadRequest, "Bad Request")
}

// TestSendersAndServices: the company's approved senders and its chat
// services; a revoked key is a 401.
func TestSendersAndServices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	unapproved, err := e.Herald.Accounts().RegisterSMSSender(ctx, e.CompanyID, "LATER")
	require.NoError(t, err)
	senders, err := e.c.ListSMSSenders(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.SMSSender{{ID: e.SenderID, SenderID: "ACME"}}, senders, "approved senders only, not %d", unapproved.ID)
	services, err := e.c.ListChatServices(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.ChatService{{ID: e.ChatServiceID, BrandName: "Acme Brand", Channel: "viber", Provider: "herald"}}, services)

	_, err = e.Herald.Accounts().GenerateAPIKey(ctx, e.CompanyID) // revokes the client's
	require.NoError(t, err)
	_, err = e.c.ListChatServices(ctx)
	apiError(t, err, http.StatusUnauthorized, "Unauthorized")
	_, err = e.c.ListSMSSenders(ctx)
	require.True(t, client.IsUnauthorized(err))
	_, err = e.c.GetOptOutKeywords(ctx)
	require.True(t, client.IsUnauthorized(err))
	_, err = e.c.ListOptOuts(ctx, client.OptOutListOptions{})
	require.True(t, client.IsUnauthorized(err))
	_, err = e.c.ListWebhooks(ctx)
	require.True(t, client.IsUnauthorized(err))
	doc, err := e.c.OpenAPIDocument(ctx)
	require.NoError(t, err, "the document needs no key")
	require.Contains(t, string(doc), `"openapi"`)
}
