// Command quickstart embeds Herald with its in-memory store: it registers a
// company, an approved SMS sender and a template, sends a bulk campaign to
// three numbers (one of them invalid) and prints the campaign once its
// messages are prepared. It needs no database and no network.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer) error {
	svc := campaign.New(campaign.Config{Store: memstore.New()})
	defer svc.Close()

	company, err := svc.CreateCompany(ctx, "Acme")
	if err != nil {
		return err
	}
	if err := svc.SetCompanyActive(ctx, company.ID, true); err != nil {
		return err
	}
	sender, err := svc.RegisterSMSSender(ctx, company.ID, "ACME")
	if err != nil {
		return err
	}
	if err := svc.ApproveSMSSender(ctx, sender.ID); err != nil {
		return err
	}
	tpl, err := svc.CreateTemplate(ctx, company.ID, messaging.Template{
		Channel: messaging.ChannelSMS, Name: "welcome", SMSSenderID: sender.ID,
		Content: "Hello {{name}}, your code is {{code}}",
	})
	if err != nil {
		return err
	}
	res, err := svc.SendBulk(ctx, company.ID, messaging.ChannelSMS, tpl.ID, []campaign.Recipient{
		{Phone: "+998901234567", Placeholders: map[string]string{"name": "Aziz"}},
		{Phone: "998901234568"},
		{Phone: "12-34"},
	}, map[string]string{"name": "friend", "code": "4711"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "accepted %d, skipped %v\n", res.MessageCount, res.InvalidPhoneNumbers)
	if err := svc.Wait(ctx); err != nil {
		return err
	}
	c, err := svc.GetCampaign(ctx, company.ID, res.Campaign.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "campaign %s: %d messages pending\n", c.Status, campaign.StatsOf(c).Pending)
	msgs, _, err := svc.ListMessages(ctx, company.ID, messaging.MessageFilter{Phone: "998901234567"})
	if err != nil {
		return err
	}
	for _, m := range msgs {
		fmt.Fprintf(w, "%s: %q\n", m.Phone, m.Content)
	}
	return nil
}
