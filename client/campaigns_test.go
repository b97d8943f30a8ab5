package client_test

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
)

// TestTransactional: transactional campaigns of both channels take
// messages one at a time; the typical refusals are decoded.
func TestTransactional(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	sms := e.smsTemplate("otp", "Your code is {{code}}")
	chat, err := e.c.CreateChatTemplate(ctx, client.ChatTemplateInput{Name: "notice", MessageType: client.TypeSimpleText,
		TemplateContent: "Hello {{name}}", ChatServiceID: e.ChatServiceID})
	require.NoError(t, err)

	tx, err := e.c.CreateSMSCampaign(ctx, client.CampaignInput{Name: "codes", Description: "one-time codes", TemplateID: sms.ID})
	require.NoError(t, err)
	require.Equal(t, "codes", tx.Name)
	require.Equal(t, client.CampaignInProgress, tx.Status)
	require.False(t, tx.CreatedAt.IsZero())
	_, err = e.c.CreateSMSCampaign(ctx, client.CampaignInput{Name: "wrong", TemplateID: chat.ID})
	apiError(t, err, http.StatusBadRequest, "Invalid template channel type")
	_, err = e.c.CreateSMSCampaign(ctx, client.CampaignInput{Name: "no template", TemplateID: "x"})
	invalid(t, err, "templateId")

	q, err := e.c.AddSMSMessage(ctx, tx.CampaignID, client.MessageInput{PhoneNumber: phone(1), ExternalUserID: "crm-1",
		Placeholders: map[string]string{"code": "4711"}, ValidityPeriod: 300})
	require.NoError(t, err)
	require.Equal(t, tx.CampaignID, q.CampaignID)
	require.Equal(t, digits(1), q.PhoneNumber, "answered normalised")
	require.Equal(t, client.MessagePending, q.Status)
	require.Empty(t, q.Details)
	require.Len(t, q.MessageID, 36)
	m := e.waitMessage(q.MessageID, client.MessageDelivered)
	require.Equal(t, "Your code is 4711", m.MessageContent)
	require.Equal(t, "crm-1", m.ExternalUserID)
	_, err = e.c.AddSMSMessage(ctx, tx.CampaignID, client.MessageInput{PhoneNumber: "12-34"})
	invalid(t, err, "phoneNumber")
	_, err = e.c.AddSMSMessage(ctx, "0190f5c0-0000-7000-8000-000000000000", client.MessageInput{PhoneNumber: phone(1)})
	apiError(t, err, http.StatusNotFound, "Not Found")

	ctx2, err := e.c.CreateChatCampaign(ctx, client.CampaignInput{Name: "notices", TemplateID: chat.ID})
	require.NoError(t, err)
	cq, err := e.c.AddChatMessage(ctx, ctx2.CampaignID, client.MessageInput{PhoneNumber: phone(2), Placeholders: map[string]string{"name": "Ada"}})
	require.NoError(t, err)
	require.Equal(t, client.MessagePending, cq.Status)
	cm := e.waitMessage(cq.MessageID, client.MessageSent)
	require.Equal(t, client.ChannelChat, cm.ChannelType)
	require.Equal(t, "Hello Ada", cm.MessageContent)
	_, err = e.c.AddChatMessage(ctx, tx.CampaignID, client.MessageInput{PhoneNumber: phone(2)})
	apiError(t, err, http.StatusBadRequest, "Campaign is not a Chat campaign")
	_, err = e.c.AddSMSMessage(ctx, ctx2.CampaignID, client.MessageInput{PhoneNumber: phone(2)})
	apiError(t, err, http.StatusBadRequest, "Campaign is not an SMS campaign")
	_, err = e.c.CreateChatCampaign(ctx, client.CampaignInput{Name: "wrong", TemplateID: sms.ID})
	apiError(t, err, http.StatusBadRequest, "Invalid template channel type")

	d, err := e.c.GetCampaign(ctx, tx.CampaignID)
	require.NoError(t, err)
	require.Equal(t, client.SendingTransactional, d.SendingMode)
	require.Equal(t, client.ChannelSMS, d.Channel)
	require.Equal(t, "one-time codes", d.Description)
	require.Equal(t, sms.ID, d.TemplateID)
	require.Equal(t, "otp", d.TemplateName)
	require.Equal(t, 1, d.TotalMessages)
	require.Equal(t, 1, d.DeliveredCount)
}

// TestBulkLifecycle: a bulk SMS send is prepared, started, completed and
// exported; scheduling, pausing, resuming and cancelling move campaigns as
// the API says, and refusals are decoded.
func TestBulkLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	tpl := e.smsTemplate("sale", "Hi {{name}}, 20% off")

	res, err := e.c.SendSMSPromotional(ctx, client.BulkSend{TemplateID: tpl.ID, Placeholders: map[string]string{"name": "friend"},
		Recipients: []client.Recipient{{PhoneNumber: phone(1)}, {PhoneNumber: phone(2), ExternalUserID: "crm-2", Placeholders: map[string]string{"name": "Ada"}},
			{PhoneNumber: "12-34"}}})
	require.NoError(t, err)
	require.Equal(t, 2, res.MessageCount)
	require.Equal(t, 1, res.SkippedCount)
	require.Equal(t, []string{"12-34"}, res.InvalidPhoneNumbers)
	require.Equal(t, []string{}, res.ContentTooLong)
	require.Equal(t, []string{}, res.OptedOutPhoneNumbers)
	require.Equal(t, "Queuing", res.Status)
	require.Contains(t, res.Message, res.CampaignID)
	_, err = e.c.SendSMSPromotional(ctx, client.BulkSend{TemplateID: tpl.ID, Recipients: []client.Recipient{{PhoneNumber: "12-34"}}})
	apiError(t, err, http.StatusBadRequest, "No valid phone numbers")
	_, err = e.c.SendSMSPromotional(ctx, client.BulkSend{TemplateID: tpl.ID})
	invalid(t, err, "recipients")

	d := e.waitStatus(res.CampaignID, client.CampaignReady)
	require.Equal(t, 2, d.TotalMessages)
	require.Equal(t, 2, d.PreparedCount)
	require.Equal(t, client.SendingBulk, d.SendingMode)
	st, err := e.c.StartCampaign(ctx, res.CampaignID)
	require.NoError(t, err)
	require.Equal(t, &client.CampaignStarted{CampaignID: res.CampaignID, Status: client.CampaignInProgress}, st)
	_, err = e.c.StartCampaign(ctx, res.CampaignID)
	apiError(t, err, http.StatusBadRequest, "Campaign is not ready")
	_, err = e.c.StartCampaign(ctx, "0190f5c0-0000-7000-8000-000000000000")
	apiError(t, err, http.StatusNotFound, "Not Found")
	d = e.waitCampaign(res.CampaignID, "every message delivered", func(c *client.CampaignDetail) bool {
		return c.Status == client.CampaignCompleted && c.DeliveredCount == 2
	})
	require.Equal(t, 0, d.PendingCount)
	require.False(t, d.StartedAt.IsZero())
	require.False(t, d.CompletedAt.IsZero())
	require.True(t, d.CancelledAt.IsZero())

	// The export: a header row, then every message.
	rc, err := e.c.ExportCampaignMessages(ctx, res.CampaignID)
	require.NoError(t, err)
	rows, err := csv.NewReader(rc).ReadAll()
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, []string{"id", "phoneNumber", "externalUserId", "channelType", "status", "details", "smsErrorCode",
		"fallbackFor", "messageContent", "createdAt", "sentAt", "deliveredAt", "updatedAt", "route"}, rows[0])
	require.Len(t, rows, 3)
	byPhone := map[string][]string{}
	for _, r := range rows[1:] {
		byPhone[r[1]] = r
	}
	require.Equal(t, "crm-2", byPhone[digits(2)][2])
	require.Equal(t, "Delivered", byPhone[digits(2)][4])
	require.Equal(t, "Hi Ada, 20% off", byPhone[digits(2)][8])
	require.Equal(t, "Hi friend, 20% off", byPhone[digits(1)][8])
	_, err = e.c.ExportCampaignMessages(ctx, "0190f5c0-0000-7000-8000-000000000000")
	apiError(t, err, http.StatusNotFound, "Not Found")

	// Scheduled: stays Ready with scheduledAt; a sendAt in the past is a
	// 400 on sendAt.
	later, err := e.c.SendSMSPromotional(ctx, client.BulkSend{TemplateID: tpl.ID, Recipients: recipients(10, 2)})
	require.NoError(t, err)
	e.waitStatus(later.CampaignID, client.CampaignReady)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	st, err = e.c.ScheduleCampaign(ctx, later.CampaignID, at)
	require.NoError(t, err)
	require.Equal(t, client.CampaignReady, st.Status)
	require.True(t, at.Equal(st.ScheduledAt), "scheduledAt %v, want %v", st.ScheduledAt, at)
	_, err = e.c.ScheduleCampaign(ctx, later.CampaignID, time.Now().Add(-time.Hour))
	invalid(t, err, "sendAt")
	d, err = e.c.GetCampaign(ctx, later.CampaignID)
	require.NoError(t, err)
	require.True(t, at.Equal(d.ScheduledAt))

	// Paused, resumed, cancelled: a campaign whose window opens in two
	// hours keeps its messages waiting.
	from := time.Now().UTC().Add(2 * time.Hour)
	quiet, err := e.c.SendSMSPromotional(ctx, client.BulkSend{TemplateID: tpl.ID, Recipients: recipients(20, 2),
		SendWindow: &client.SendWindow{From: from.Format("15:00"), To: from.Add(time.Hour).Format("15:00"), TimeZone: "UTC"}, ValidityPeriod: 86400})
	require.NoError(t, err)
	e.waitStatus(quiet.CampaignID, client.CampaignReady)
	_, err = e.c.PauseCampaign(ctx, quiet.CampaignID)
	apiError(t, err, http.StatusBadRequest, "Campaign is not active")
	_, err = e.c.StartCampaign(ctx, quiet.CampaignID)
	require.NoError(t, err)
	d = e.waitCampaign(quiet.CampaignID, "messages waiting for the window", func(c *client.CampaignDetail) bool { return c.WaitingForWindowCount == 2 })
	require.Equal(t, &client.SendWindow{From: from.Format("15:00"), To: from.Add(time.Hour).Format("15:00"), TimeZone: "UTC"}, d.SendWindow)
	require.Equal(t, 86400, d.ValidityPeriod)
	d, err = e.c.PauseCampaign(ctx, quiet.CampaignID)
	require.NoError(t, err)
	require.Equal(t, client.CampaignPaused, d.Status)
	require.Equal(t, quiet.CampaignID, d.CampaignID)
	_, err = e.c.ResumeCampaign(ctx, res.CampaignID)
	require.Error(t, err, "a completed campaign cannot resume")
	require.True(t, client.IsBadRequest(err))
	d, err = e.c.ResumeCampaign(ctx, quiet.CampaignID)
	require.NoError(t, err)
	require.Equal(t, client.CampaignInProgress, d.Status)
	d, err = e.c.CancelCampaign(ctx, quiet.CampaignID)
	require.NoError(t, err)
	require.Equal(t, client.CampaignCompleted, d.Status)
	require.False(t, d.CancelledAt.IsZero())
	require.Equal(t, 2, d.FailedCount)
	require.Equal(t, 0, d.PendingCount)
	_, err = e.c.CancelCampaign(ctx, quiet.CampaignID)
	require.True(t, client.IsBadRequest(err), "a completed campaign cannot be cancelled: %v", err)
	_, err = e.c.CancelCampaign(ctx, "0190f5c0-0000-7000-8000-000000000000")
	require.True(t, client.IsNotFound(err))
	page, err := e.c.ListMessages(ctx, client.MessageListOptions{CampaignID: quiet.CampaignID})
	require.NoError(t, err)
	for _, m := range page.Items {
		require.Equal(t, client.MessageFailed, m.Status)
		require.Equal(t, "CANCELLED", m.Details)
	}

	// Lists: newest first; by status and sending mode.
	list, err := e.c.ListCampaigns(ctx, client.CampaignListOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{quiet.CampaignID, later.CampaignID, res.CampaignID}, campaignIDs(list.Items))
	list, err = e.c.ListCampaigns(ctx, client.CampaignListOptions{Status: client.CampaignReady})
	require.NoError(t, err)
	require.Equal(t, []string{later.CampaignID}, campaignIDs(list.Items))
	list, err = e.c.ListCampaigns(ctx, client.CampaignListOptions{SendingMode: client.SendingTransactional})
	require.NoError(t, err)
	require.Empty(t, list.Items)
	require.Equal(t, 0, list.TotalPages)
	var all []string
	for c, err := range e.c.AllCampaigns(ctx, client.CampaignListOptions{PageOptions: client.PageOptions{PageSize: 2}}) {
		require.NoError(t, err)
		all = append(all, c.CampaignID)
	}
	require.Equal(t, []string{quiet.CampaignID, later.CampaignID, res.CampaignID}, all)
	_, err = e.c.ListCampaigns(ctx, client.CampaignListOptions{Status: "Sleeping"})
	invalid(t, err, "status")
	_, err = e.c.GetCampaign(ctx, "0190f5c0-0000-7000-8000-000000000000")
	require.True(t, client.IsNotFound(err))
}

// TestChatBulk: a chat bulk send is prepared and sent; a send whose
// recipients are all invalid is refused.
func TestChatBulk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	tpl, err := e.c.CreateChatTemplate(ctx, client.ChatTemplateInput{Name: "news", MessageType: client.TypeSimpleText,
		TemplateContent: "News for {{name}}", ChatServiceID: e.ChatServiceID})
	require.NoError(t, err)
	res, err := e.c.SendChatBulk(ctx, client.BulkSend{TemplateID: tpl.ID, Placeholders: map[string]string{"name": "you"}, Recipients: recipients(1, 3)})
	require.NoError(t, err)
	require.Equal(t, 3, res.MessageCount)
	require.Equal(t, "Queuing", res.Status)
	d := e.waitStatus(res.CampaignID, client.CampaignReady)
	require.Equal(t, client.ChannelChat, d.Channel)
	_, err = e.c.StartCampaign(ctx, res.CampaignID)
	require.NoError(t, err)
	e.waitCampaign(res.CampaignID, "chat messages sent", func(c *client.CampaignDetail) bool { return c.Status == client.CampaignCompleted })

	_, err = e.c.SendChatBulk(ctx, client.BulkSend{TemplateID: tpl.ID, Recipients: []client.Recipient{{PhoneNumber: "1"}}})
	apiError(t, err, http.StatusBadRequest, "No valid phone numbers")
	_, err = e.c.SendChatBulk(ctx, client.BulkSend{TemplateID: e.smsTemplate("sms", "x").ID, Recipients: recipients(1, 1)})
	apiError(t, err, http.StatusBadRequest, "Invalid template channel type")
}

// TestDirectSends: direct SMS and chat texts are sent at once and read
// back by their messages' ids; the typical refusals are decoded.
func TestDirectSends(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	res, err := e.c.SendSMS(ctx, client.DirectSMS{MessageContent: "Your code is 4711", SMSSenderID: e.SenderID,
		Recipients: []client.DirectRecipient{{PhoneNumber: phone(7), ExternalUserID: "crm-7"}}, ValidityPeriod: 300})
	require.NoError(t, err)
	require.Equal(t, 1, res.MessageCount)
	require.Equal(t, "Pending", res.Status)
	require.Nil(t, res.OptedOutPhoneNumbers, "absent on direct sends")
	page, err := e.c.ListMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	m := e.waitMessage(page.Items[0].ID, client.MessageDelivered)
	require.Equal(t, digits(7), m.PhoneNumber)
	require.Equal(t, "crm-7", m.ExternalUserID)
	require.Equal(t, client.ChannelSMS, m.ChannelType)
	require.False(t, m.SentAt.IsZero())
	require.False(t, m.DeliveredAt.IsZero())
	d, err := e.c.GetCampaign(ctx, res.CampaignID)
	require.NoError(t, err)
	require.Empty(t, d.TemplateID, "a direct send has no template")
	list, err := e.c.ListCampaigns(ctx, client.CampaignListOptions{})
	require.NoError(t, err)
	require.Zero(t, list.TotalCount, "direct sends are left out of the list")

	_, err = e.c.SendSMS(ctx, client.DirectSMS{MessageContent: "x", SMSSenderID: 999, Recipients: []client.DirectRecipient{{PhoneNumber: phone(7)}}})
	apiError(t, err, http.StatusBadRequest, "Invalid SMS Sender")
	_, err = e.c.SendSMS(ctx, client.DirectSMS{SMSSenderID: e.SenderID, Recipients: []client.DirectRecipient{{PhoneNumber: phone(7)}}})
	invalid(t, err, "messageContent")

	chat, err := e.c.SendChatText(ctx, client.DirectChat{MessageContent: "Your table is ready", ChatServiceID: e.ChatServiceID,
		SMSFallbackText: "Your table is ready", SMSFallbackSenderID: e.SenderID,
		Recipients: []client.DirectRecipient{{PhoneNumber: phone(8)}, {PhoneNumber: phone(9)}}})
	require.NoError(t, err)
	require.Equal(t, 2, chat.MessageCount)
	require.Equal(t, "Pending", chat.Status)
	_, err = e.c.SendChatText(ctx, client.DirectChat{MessageContent: "x", ChatServiceID: e.ChatServiceID, SMSFallbackText: "x",
		Recipients: []client.DirectRecipient{{PhoneNumber: phone(8)}}})
	apiError(t, err, http.StatusBadRequest, "SMS fallback sender required")
	_, err = e.c.SendChatText(ctx, client.DirectChat{MessageContent: "x", ChatServiceID: 999, Recipients: []client.DirectRecipient{{PhoneNumber: phone(8)}}})
	apiError(t, err, http.StatusBadRequest, "Invalid Chat Service")
}

// waitMessage polls a message until it has status st, and returns it.
func (e *env) waitMessage(id string, st client.MessageStatus) *client.Message {
	e.t.Helper()
	var m *client.Message
	eventually(e.t, fmt.Sprintf("message %s %s", id, st), func() bool {
		var err error
		m, err = e.c.GetMessage(e.ctx(), id)
		require.NoError(e.t, err)
		return m.Status == st
	})
	return m
}

func campaignIDs(cs []client.Campaign) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.CampaignID
	}
	return out
}
