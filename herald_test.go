package herald_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// blockedChat refuses every chat message: the user is not a chat user
// (code 9, a fallback trigger).
type blockedChat struct{}

func (blockedChat) SendChat(context.Context, delivery.ChatSend) (delivery.ChatAccepted, error) {
	return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonNotOnChannel, "9", nil)
}

// chatOf is the ChatTransport of a fixed sender.
func chatOf(s delivery.ChatSender) herald.ChatTransport {
	return func(delivery.Reporter) (delivery.ChatSender, error) { return s, nil }
}

// start runs h until the test ends.
func start(t *testing.T, h *herald.Herald) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
		require.NoError(t, h.Close(context.Background()))
	})
}

// company makes an active company with an approved SMS sender and a chat
// service.
func company(t *testing.T, svc *accounts.Service) (messaging.Company, messaging.SMSSender, messaging.ChatService) {
	t.Helper()
	ctx := t.Context()
	co, err := svc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, svc.SetCompanyActive(ctx, co.ID, true))
	sender, err := svc.RegisterSMSSender(ctx, co.ID, "ACME")
	require.NoError(t, err)
	require.NoError(t, svc.ApproveSMSSender(ctx, sender.ID))
	cs, err := svc.AddChatService(ctx, co.ID, "Acme", "acme-brand")
	require.NoError(t, err)
	return co, sender, cs
}

// waitMessage waits until the company's message to phone of channel ch
// satisfies cond, and returns it.
func waitMessage(t *testing.T, svc *campaign.Service, co messaging.ID, phone string, ch messaging.Channel, cond func(messaging.Message) bool) messaging.Message {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		msgs, _, err := svc.ListMessages(t.Context(), co, messaging.MessageFilter{Phone: phone})
		require.NoError(t, err)
		for _, m := range msgs {
			if m.Channel == ch && cond(m) {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for the %s message to %s", ch, phone)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNewNeedsAStore(t *testing.T) {
	_, err := herald.New(herald.Config{})
	require.ErrorContains(t, err, "Store is required")
}

func TestNewReportsTheSMSTransportsError(t *testing.T) {
	_, err := herald.New(herald.Config{Store: memstore.New(), SMS: func(delivery.Reporter) (delivery.SMSSender, error) {
		return nil, errors.New("no SMSC")
	}})
	require.ErrorContains(t, err, "no SMSC")
}

// TestFallbackIsWired: with nothing but a store, an SMS transport and a
// chat sender, a chat message its provider cannot deliver (code 9) falls
// back to SMS, which is sent and delivered through the receipts the
// transport hands back: the embedder wires none of it.
func TestFallbackIsWired(t *testing.T) {
	h, err := herald.New(herald.Config{
		Store: memstore.New(),
		SMS:   func(r delivery.Reporter) (delivery.SMSSender, error) { return fakeSMSC{r}, nil },
		Chat:  chatOf(blockedChat{}),
	})
	require.NoError(t, err)
	start(t, h)
	svc := h.Campaigns()
	co, sender, cs := company(t, h.Accounts())
	_, err = svc.SendDirectChat(t.Context(), co.ID, campaign.DirectChat{Content: "Hello", ChatServiceID: cs.ID,
		SMSFallbackText: "Hello by SMS", SMSFallbackSenderID: sender.ID, Recipients: []campaign.Recipient{{Phone: "+447700900009"}}})
	require.NoError(t, err)

	chat := waitMessage(t, svc, co.ID, "447700900009", messaging.ChannelChat, func(m messaging.Message) bool { return m.Status.Final() })
	require.Equal(t, messaging.StatusFailed, chat.Status)
	sms := waitMessage(t, svc, co.ID, "447700900009", messaging.ChannelSMS, func(m messaging.Message) bool {
		return m.Status == messaging.StatusDelivered
	})
	require.Equal(t, "Hello by SMS", sms.Content)
	require.Equal(t, chat.ID, sms.FallbackFor)
}

// TestRunTwice: Run runs once.
func TestRunTwice(t *testing.T) {
	h, err := herald.New(herald.Config{Store: memstore.New()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, h.Run(ctx), context.Canceled, "an ended context ends Run before it starts anything")
	require.ErrorContains(t, h.Run(ctx), "Run called twice")
	require.NoError(t, h.Close(context.Background()))
}

// acceptingChat accepts every chat message.
type acceptingChat struct{}

func (acceptingChat) SendChat(_ context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	return delivery.ChatAccepted{ProviderID: "tok-" + m.MessageID.String()}, nil
}

// TestSurveyAnswersAreWired: a reply to a survey message that reaches
// the Reporter is recorded by the survey use cases and counted in the
// summary; a reply outside the options is refused.
func TestSurveyAnswersAreWired(t *testing.T) {
	h, err := herald.New(herald.Config{Store: memstore.New(), Chat: chatOf(acceptingChat{})})
	require.NoError(t, err)
	start(t, h)
	ctx, svc := t.Context(), h.Campaigns()
	co, _, cs := company(t, h.Accounts())
	tpl, err := svc.CreateTemplate(ctx, co.ID, messaging.Template{Channel: messaging.ChannelChat, Name: "poll", MessageType: messaging.TypeSurvey,
		ChatServiceID: cs.ID, Content: "Coffee or tea?", Config: &messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "Coffee", OptionValue: "c"}, {OptionText: "Tea", OptionValue: "t"}}}})
	require.NoError(t, err)
	res, err := svc.SendBulk(ctx, co.ID, campaign.BulkSend{Channel: messaging.ChannelChat, TemplateID: tpl.ID,
		Recipients: []campaign.Recipient{{Phone: "+447700900010"}}})
	require.NoError(t, err)
	require.NoError(t, svc.Wait(ctx))
	_, err = svc.Start(ctx, co.ID, res.Campaign.ID)
	require.NoError(t, err)
	m := waitMessage(t, svc, co.ID, "447700900010", messaging.ChannelChat, func(m messaging.Message) bool { return m.Status == messaging.StatusSent })

	out, err := h.Reporter().ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundReply, MessageID: m.ID, OptionIndex: 5})
	require.True(t, messaging.IsCode(err, messaging.Invalid), "%v", err)
	require.Equal(t, delivery.ChatEventRefused, out)
	out, err = h.Reporter().ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundReply, MessageID: m.ID, OptionIndex: 1})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventStored, out)
	sum, err := h.Surveys().Summarize(ctx, co.ID, res.Campaign.ID)
	require.NoError(t, err)
	require.Equal(t, 1, sum.TotalResponses)
}

// TestRetentionPurges: with Config.Retention set, Run purges the messages
// of campaigns that finished longer ago than that, and keeps the
// campaigns, their counters, and the messages of a campaign that finished
// since.
func TestRetentionPurges(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	co := messaging.Company{ID: messaging.NewIDGenerator(nil).New(), Name: "Acme", Active: true, CreatedAt: time.Now().UTC()}
	require.NoError(t, st.CreateCompany(ctx, &co))
	finished := func(ago time.Duration, n int) (messaging.Campaign, []*messaging.Message) {
		ids := messaging.NewIDGenerator(func() time.Time { return time.Now().Add(-ago) })
		at := time.Now().UTC().Add(-ago)
		c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Name: "done", Channel: messaging.ChannelSMS, Mode: messaging.ModeBulk,
			Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText, Planned: n, CreatedAt: at, UpdatedAt: at}
		require.NoError(t, st.CreateCampaign(ctx, &c, 1000))
		msgs := make([]*messaging.Message, n)
		for i := range msgs {
			msgs[i] = &messaging.Message{ID: ids.New(), CompanyID: co.ID, CampaignID: c.ID, Channel: messaging.ChannelSMS,
				Phone: fmt.Sprintf("4477009000%02d", i), Content: "Hi", Status: messaging.StatusDelivered, DueAt: at, CreatedAt: at, UpdatedAt: at}
		}
		require.NoError(t, st.InsertMessages(ctx, msgs))
		for _, move := range [][2]messaging.CampaignStatus{{messaging.CampaignQueuing, messaging.CampaignReady},
			{messaging.CampaignReady, messaging.CampaignInProgress}, {messaging.CampaignInProgress, messaging.CampaignCompleted}} {
			require.NoError(t, st.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: co.ID, CampaignID: c.ID,
				From: []messaging.CampaignStatus{move[0]}, To: move[1], At: at}))
		}
		return c, msgs
	}
	old, oldMsgs := finished(48*time.Hour, 3)
	_, freshMsgs := finished(time.Hour, 2)

	h, err := herald.New(herald.Config{Store: st, Retention: 24 * time.Hour, RetentionBatch: 2})
	require.NoError(t, err)
	start(t, h)
	require.Eventually(t, func() bool {
		_, err := st.GetMessage(ctx, co.ID, oldMsgs[2].ID)
		return messaging.IsCode(err, messaging.NotFound)
	}, 10*time.Second, 10*time.Millisecond, "the messages of the campaign finished two days ago are purged")
	for _, m := range oldMsgs {
		_, err := st.GetMessage(ctx, co.ID, m.ID)
		require.True(t, messaging.IsCode(err, messaging.NotFound), "%v", err)
	}
	c, err := h.Campaigns().GetCampaign(ctx, co.ID, old.ID)
	require.NoError(t, err)
	require.Equal(t, 3, c.Counts.Delivered, "its counters stay")
	for _, m := range freshMsgs {
		_, err := st.GetMessage(ctx, co.ID, m.ID)
		require.NoError(t, err, "the campaign finished an hour ago keeps its messages")
	}
}

// The chat provider's unsubscribed event opts the number out of the chat
// messages of the company owning the service, subscribed opts it back in;
// an unknown service changes nothing.
func TestChatSubscriptionsAreWired(t *testing.T) {
	st := memstore.New()
	h, err := herald.New(herald.Config{Store: st})
	require.NoError(t, err)
	ctx := t.Context()
	co, _, cs := company(t, h.Accounts())
	chatOut := func() bool {
		got, err := st.OptedOut(ctx, co.ID, []string{"447700900010"}, messaging.ChannelChat)
		require.NoError(t, err)
		return got["447700900010"]
	}
	out, err := h.Reporter().ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundUnsubscribed, Sender: cs.ProviderServiceID, Phone: "447700900010"})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventStored, out)
	require.True(t, chatOut())
	sms, err := st.OptedOut(ctx, co.ID, []string{"447700900010"}, messaging.ChannelSMS)
	require.NoError(t, err)
	require.Empty(t, sms, "SMS still goes")
	out, err = h.Reporter().ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundUnsubscribed, Sender: cs.ProviderServiceID, Phone: "447700900010"})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventIgnored, out, "already out")
	out, err = h.Reporter().ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundSubscribed, Sender: cs.ProviderServiceID, Phone: "+447700900010"})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventStored, out)
	require.False(t, chatOut())
	out, err = h.Reporter().ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundUnsubscribed, Sender: "nobody", Phone: "447700900010"})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventIgnored, out)
	require.False(t, chatOut())
	// The chat router names the service and its company itself.
	out, err = h.Reporter().ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundUnsubscribed, ServiceID: cs.ID, CompanyID: co.ID,
		Phone: "447700900010"})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventStored, out)
	require.True(t, chatOut())
	out, err = h.Reporter().ChatInbound(ctx, delivery.ChatInbound{Kind: delivery.InboundUnsubscribed, Phone: "447700900011"})
	require.NoError(t, err)
	require.Equal(t, delivery.ChatEventIgnored, out, "no service named")
}

// An SMS reply to a survey's fallback SMS that names an option (its text,
// its value or its number) is recorded as the recipient's answer and
// counted in the summary; another reply stays an inbound SMS only.
func TestSurveyAnswersBySMS(t *testing.T) {
	st := memstore.New()
	h, err := herald.New(herald.Config{Store: st, Chat: chatOf(acceptingChat{})})
	require.NoError(t, err)
	start(t, h)
	ctx, svc := t.Context(), h.Campaigns()
	co, sender, cs := company(t, h.Accounts())
	tpl, err := svc.CreateTemplate(ctx, co.ID, messaging.Template{Channel: messaging.ChannelChat, Name: "poll", MessageType: messaging.TypeSurvey,
		ChatServiceID: cs.ID, Content: "How was it?", SMSFallbackEnabled: true, SMSFallbackContent: "How was it? Reply GREAT, FINE or POOR",
		SMSFallbackSenderID: sender.ID, Config: &messaging.ChatConfig{Options: []messaging.SurveyOption{
			{OptionText: "Great", OptionValue: "great"}, {OptionText: "Fine", OptionValue: "fine"}, {OptionText: "Poor", OptionValue: "poor"}}}})
	require.NoError(t, err)
	res, err := svc.SendBulk(ctx, co.ID, campaign.BulkSend{Channel: messaging.ChannelChat, TemplateID: tpl.ID,
		Recipients: []campaign.Recipient{{Phone: "+447700900021"}, {Phone: "+447700900022"}}})
	require.NoError(t, err)
	require.NoError(t, svc.Wait(ctx))
	_, err = svc.Start(ctx, co.ID, res.Campaign.ID)
	require.NoError(t, err)
	for _, p := range []string{"447700900021", "447700900022"} {
		m := waitMessage(t, svc, co.ID, p, messaging.ChannelChat, func(m messaging.Message) bool { return m.Status == messaging.StatusSent })
		// the person has no chat app: the SMS fallback goes
		out, err := h.Reporter().ChatStatuses(ctx, []delivery.ChatStatus{{MessageID: m.ID, Status: messaging.StatusFailed, Reason: delivery.ReasonNotOnChannel}})
		require.NoError(t, err)
		require.Equal(t, []delivery.ChatEventOutcome{delivery.ChatEventStored}, out)
		waitMessage(t, svc, co.ID, p, messaging.ChannelSMS, func(messaging.Message) bool { return true })
	}
	// the fallback SMS are handed to the SMSC
	fbs, err := st.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: time.Now().Add(time.Minute), LeaseUntil: time.Now().Add(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Len(t, fbs, 2)
	for i, fb := range fbs {
		pid := fmt.Sprintf("P%d", i)
		_, err := st.ApplyUpdates(ctx, []delivery.StatusUpdate{{MessageID: fb.ID, Status: messaging.StatusSent, At: time.Now(), ProviderMessageID: pid, PartIDs: []string{pid}}})
		require.NoError(t, err)
	}
	reply := func(phone, text string) {
		t.Helper()
		require.NoError(t, h.HandleInbound(ctx, delivery.InboundPart{From: phone, To: sender.SenderID, Text: text, Count: 1, Seq: 1, At: time.Now()}))
	}
	reply("447700900021", " fine ")
	reply("447700900021", "POOR") // a second answer to the same message changes nothing
	reply("447700900022", "what time do you open?")

	sum, err := h.Surveys().Summarize(ctx, co.ID, res.Campaign.ID)
	require.NoError(t, err)
	require.Equal(t, 1, sum.TotalResponses)
	require.Equal(t, 1, sum.Options[1].Count, "Fine")
	require.Equal(t, 2, sum.TotalMessagesSent, "the fallback SMS count as sent: their recipients can answer")
	require.Equal(t, 50.0, sum.ResponseRate)
	msgs, total, err := h.Inbound().List(ctx, co.ID, messaging.InboundFilter{})
	require.NoError(t, err)
	require.Equal(t, 3, total, "every reply stays in the inbound list")
	require.Len(t, msgs, 3)
}

// TestScheduledCampaignsStart: Run starts a campaign whose scheduled time
// passed while no process ran as soon as it starts, and one scheduled
// ahead once its time comes, not before.
func TestScheduledCampaignsStart(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	ids := messaging.NewIDGenerator(nil)
	now := time.Now().UTC()
	co := messaging.Company{ID: ids.New(), Name: "Acme", Active: true, CreatedAt: now}
	require.NoError(t, st.CreateCompany(ctx, &co))
	ready := func(at time.Time) messaging.ID {
		c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Name: "scheduled", Channel: messaging.ChannelSMS, Mode: messaging.ModeBulk,
			Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, st.CreateCampaign(ctx, &c, 1000))
		require.NoError(t, st.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: co.ID, CampaignID: c.ID,
			From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignReady, At: now}))
		require.NoError(t, st.ScheduleCampaign(ctx, co.ID, c.ID, at, now))
		return c.ID
	}
	missed := ready(now.Add(-time.Minute))
	ahead := now.Add(1500 * time.Millisecond)
	later := ready(ahead)

	h, err := herald.New(herald.Config{Store: st, ScheduleEvery: 100 * time.Millisecond})
	require.NoError(t, err)
	start(t, h)
	status := func(id messaging.ID) messaging.Campaign {
		c, err := st.GetCampaign(ctx, co.ID, id)
		require.NoError(t, err)
		return c
	}
	// Without messages a started campaign completes at once: StartedAt
	// tells that it started.
	require.Eventually(t, func() bool { return status(missed).StartedAt != nil }, 5*time.Second, 10*time.Millisecond,
		"the campaign whose time passed while stopped starts")
	require.Equal(t, messaging.CampaignReady, status(later).Status, "the other waits for its time")
	require.Eventually(t, func() bool { return status(later).StartedAt != nil }, 10*time.Second, 10*time.Millisecond)
	require.False(t, status(later).StartedAt.Before(ahead), "started at %s, scheduled at %s", status(later).StartedAt, ahead)
}

// TestSendWindowsUseTheRecipientsZone: Herald tells a recipient's zone
// from the number by itself: a message to a Paris number, outside a window
// closed in Paris, waits for the window's opening in Paris time, not in
// UTC, and the campaign counts it as waiting.
func TestSendWindowsUseTheRecipientsZone(t *testing.T) {
	h, err := herald.New(herald.Config{
		Store: memstore.New(),
		SMS:   func(r delivery.Reporter) (delivery.SMSSender, error) { return fakeSMSC{r}, nil },
	})
	require.NoError(t, err)
	start(t, h)
	svc := h.Campaigns()
	co, sender, _ := company(t, h.Accounts())
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	// A window of one hour, opening two hours from now in Paris: closed.
	local := time.Now().In(paris)
	from := (local.Hour() + 2) % 24
	w := messaging.SendWindow{From: from * 60, To: (from + 1) * 60}
	tpl, err := svc.CreateTemplate(t.Context(), co.ID, messaging.Template{Name: "promo", Channel: messaging.ChannelSMS, Content: "Hi", SMSSenderID: sender.ID})
	require.NoError(t, err)
	res, err := svc.SendBulk(t.Context(), co.ID, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tpl.ID,
		Recipients: []campaign.Recipient{{Phone: "+33612345678"}}, Window: &w})
	require.NoError(t, err)
	require.NoError(t, svc.Wait(t.Context()))
	_, err = svc.Start(t.Context(), co.ID, res.Campaign.ID)
	require.NoError(t, err)
	m := waitMessage(t, svc, co.ID, "33612345678", messaging.ChannelSMS, func(m messaging.Message) bool {
		return m.Status == messaging.StatusPending && m.Attempts == 1
	})
	_, want := w.Open(time.Now(), paris)
	require.True(t, want.Equal(m.DueAt), "due %s, the window opens at %s in Paris", m.DueAt.In(paris), want.In(paris))
	c, err := svc.GetCampaign(t.Context(), co.ID, res.Campaign.ID)
	require.NoError(t, err)
	require.Equal(t, 1, c.WaitingForWindow)
}

// TestRunPurgesCallbackReplays: the keys of chat callbacks past their time
// are removed when Run starts, so that the table of replays does not grow
// for ever; a key still in its time stays.
func TestRunPurgesCallbackReplays(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	now := time.Now()
	seen, err := s.Seen(ctx, "old", now.Add(-time.Minute))
	require.NoError(t, err)
	require.False(t, seen)
	seen, err = s.Seen(ctx, "current", now.Add(time.Hour))
	require.NoError(t, err)
	require.False(t, seen)

	h, err := herald.New(herald.Config{Store: s})
	require.NoError(t, err)
	start(t, h)
	// Seen of a key still recorded answers true and changes nothing; once
	// Run removed it, it answers false.
	require.Eventually(t, func() bool {
		seen, err := s.Seen(ctx, "old", now.Add(time.Hour))
		require.NoError(t, err)
		return !seen
	}, 5*time.Second, 10*time.Millisecond, "a key past its time is purged")
	seen, err = s.Seen(ctx, "current", now.Add(time.Hour))
	require.NoError(t, err)
	require.True(t, seen, "a key in its time is kept")
}
