// Command quickstart embeds Herald with its in-memory store and a fake
// SMSC that reports every SMS delivered: it registers a company, an
// approved SMS sender and a template, sends a bulk campaign to three
// numbers (one of them invalid), starts it once its messages are
// prepared, and prints the campaign once every message is delivered. It
// needs no database and no network.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// fakeSMSC accepts every SMS and sends its delivery receipt right after.
type fakeSMSC struct{ reports delivery.Reporter }

func (f fakeSMSC) Send(ctx context.Context, sms delivery.SMS) (delivery.SMSResult, error) {
	id := "msg-" + sms.To
	go func() {
		_ = f.reports.Receipt(context.Background(), delivery.Receipt{ProviderID: id, State: delivery.StateDelivered, At: time.Now()})
	}()
	return delivery.SMSResult{PartIDs: []string{id}}, nil
}

func run(ctx context.Context, w io.Writer) error {
	h, err := herald.New(herald.Config{
		Store: memstore.New(),
		SMS:   func(r delivery.Reporter) (delivery.SMSSender, error) { return fakeSMSC{r}, nil },
	})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.Run(runCtx) }()
	defer func() { stop(); <-done }()

	acc, svc := h.Accounts(), h.Campaigns()
	company, err := acc.CreateCompany(ctx, "Acme")
	if err != nil {
		return err
	}
	if err := acc.SetCompanyActive(ctx, company.ID, true); err != nil {
		return err
	}
	sender, err := acc.RegisterSMSSender(ctx, company.ID, "ACME")
	if err != nil {
		return err
	}
	if err := acc.ApproveSMSSender(ctx, sender.ID); err != nil {
		return err
	}
	tpl, err := svc.CreateTemplate(ctx, company.ID, messaging.Template{
		Channel: messaging.ChannelSMS, Name: "welcome", SMSSenderID: sender.ID,
		Content: "Hello {{name}}, your code is {{code}}",
	})
	if err != nil {
		return err
	}
	res, err := svc.SendBulk(ctx, company.ID, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tpl.ID, Recipients: []campaign.Recipient{
		{Phone: "+998901234567", Placeholders: campaign.PlaceholdersOf(map[string]string{"name": "Aziz"})},
		{Phone: "998901234568"},
		{Phone: "12-34"},
	}, Placeholders: map[string]string{"name": "friend", "code": "4711"}})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "accepted %d, skipped %v\n", res.MessageCount, res.InvalidPhoneNumbers)
	if err := svc.Wait(ctx); err != nil { // the bulk preparation
		return err
	}
	if _, err := svc.Start(ctx, company.ID, res.Campaign.ID); err != nil {
		return err
	}
	c, err := waitCompleted(ctx, svc, company.ID, res.Campaign.ID)
	if err != nil {
		return err
	}
	st := campaign.StatsOf(c)
	fmt.Fprintf(w, "campaign %s: %d delivered, %d pending\n", c.Status, st.Delivered, st.Pending)
	msgs, _, err := svc.ListMessages(ctx, company.ID, messaging.MessageFilter{Phone: "998901234567"})
	if err != nil {
		return err
	}
	for _, m := range msgs {
		fmt.Fprintf(w, "%s %s: %q\n", m.Phone, m.Status, m.Content)
	}
	return nil
}

// waitCompleted polls the campaign until it is Completed and every message
// is delivered.
func waitCompleted(ctx context.Context, svc *campaign.Service, companyID, id messaging.ID) (messaging.Campaign, error) {
	for {
		c, err := svc.GetCampaign(ctx, companyID, id)
		if err != nil {
			return c, err
		}
		if c.Status == messaging.CampaignCompleted && campaign.StatsOf(c).Pending == 0 {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
