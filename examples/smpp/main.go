// Command smpp embeds Herald as a service would in production, on an
// embedded SQLite database and a real SMPP connection: it starts Herald's
// SMSC simulator on loopback (in place of an operator's SMSC), sends a bulk
// campaign to five numbers over SMPP and prints each message's outcome
// once the receipts are in. The simulator answers numbers ending 0001, 0002
// and 0003 with UNDELIVERED, EXPIRED and REJECTED receipts, and delivers the
// others.
//
//	go run ./examples/smpp [database file]
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

func main() {
	path := filepath.Join(os.TempDir(), "herald-example.db")
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if err := run(context.Background(), path, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, dbPath string, w io.Writer) error {
	smsc := smscsim.New(smscsim.Config{SystemID: "acme", Password: "secret"})
	if err := smsc.Start("127.0.0.1:0"); err != nil {
		return err
	}
	defer smsc.Close()

	store, err := sqlstore.Open(ctx, "sqlite://"+dbPath, sqlstore.Config{})
	if err != nil {
		return err
	}
	defer store.Close()
	var client *smpp.Client
	h, err := herald.New(herald.Config{
		Store: store,
		SMS: func(r delivery.Reporter) (delivery.SMSSender, error) {
			client, err = smpp.New(smpp.Config{Addr: smsc.Addr(), SystemID: "acme", Password: "secret", ReceiptHandler: r.Receipt,
				InboundHandler: r.InboundSMS})
			return client, err
		},
	})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	defer client.Close(context.Background()) // after Herald stopped: its sends need the session
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
		Channel: messaging.ChannelSMS, Name: fmt.Sprintf("sale-%d", time.Now().UnixNano()), SMSSenderID: sender.ID,
		Content: "Hi {{name}}, 20% off until Sunday",
	})
	if err != nil {
		return err
	}
	var recipients []campaign.Recipient
	for i := 1; i <= 5; i++ {
		recipients = append(recipients, campaign.Recipient{Phone: fmt.Sprintf("+44770090%04d", i)})
	}
	res, err := svc.SendBulk(ctx, company.ID, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tpl.ID, Recipients: recipients, Placeholders: map[string]string{"name": "friend"}})
	if err != nil {
		return err
	}
	if err := svc.Wait(ctx); err != nil {
		return err
	}
	if _, err := svc.Start(ctx, company.ID, res.Campaign.ID); err != nil {
		return err
	}
	for {
		c, err := svc.GetCampaign(ctx, company.ID, res.Campaign.ID)
		if err != nil {
			return err
		}
		if c.Status == messaging.CampaignCompleted && campaign.StatsOf(c).Pending == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	var msgs []messaging.Message
	for _, r := range recipients {
		ms, _, err := svc.ListMessages(ctx, company.ID, messaging.MessageFilter{Phone: r.Phone[1:]})
		if err != nil {
			return err
		}
		msgs = append(msgs, ms...)
	}
	sort.Slice(msgs, func(i, j int) bool { return msgs[i].Phone < msgs[j].Phone })
	for _, m := range msgs {
		if m.CampaignID == res.Campaign.ID {
			fmt.Fprintf(w, "%s %s %s\n", m.Phone, m.Status, m.Details)
		}
	}
	return nil
}
