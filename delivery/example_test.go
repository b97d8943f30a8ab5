package delivery_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

// Example wires a Dispatcher to a store and to the SMPP adapter (here
// against the SMSC simulator), whose receipts it takes back through
// HandleReceipt, and sends a bulk campaign of three SMS; the simulator
// answers numbers ending 0001 with UNDELIV.
func Example() {
	ctx := context.Background()
	store := memstore.New()
	sim := smscsim.New(smscsim.Config{})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		panic(err)
	}
	defer sim.Close()

	// The SMPP client hands receipts to the dispatcher that sends through
	// it.
	var d *delivery.Dispatcher
	client, err := smpp.New(smpp.Config{Addr: sim.Addr(), SystemID: "herald",
		ReceiptHandler: func(ctx context.Context, r delivery.Receipt) error { return d.HandleReceipt(ctx, r) }})
	if err != nil {
		panic(err)
	}
	defer client.Close(ctx)
	d, err = delivery.New(delivery.Config{Store: store, SMS: client}) // the store is also the Directory
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()

	// A company with an approved sender, and a campaign started with
	// three messages (what campaign.Service does through the same store).
	now := time.Now()
	ids := messaging.NewIDGenerator(nil)
	co := messaging.Company{ID: ids.New(), Name: "Acme", Active: true, CreatedAt: now}
	sender := messaging.SMSSender{CompanyID: co.ID, SenderID: "Acme", CreatedAt: now}
	c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Channel: messaging.ChannelSMS, Mode: messaging.ModeBulk,
		Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText, Planned: 3, CreatedAt: now, UpdatedAt: now}
	var msgs []*messaging.Message
	for _, phone := range []string{"447700900001", "447700900002", "447700900123"} {
		msgs = append(msgs, &messaging.Message{ID: ids.New(), CompanyID: co.ID, CampaignID: c.ID, Channel: messaging.ChannelSMS,
			Phone: phone, Content: "Your parcel arrives today", Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now})
	}
	must(store.CreateCompany(ctx, &co))
	must(store.CreateSMSSender(ctx, &sender))
	must(store.ApproveSMSSender(ctx, sender.ID))
	c.SMSSenderID = sender.ID
	must(store.CreateCampaign(ctx, &c, 100))
	must(store.InsertMessages(ctx, msgs))
	must(store.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: co.ID, CampaignID: c.ID, From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignReady, At: time.Now()}))
	must(store.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: co.ID, CampaignID: c.ID, From: []messaging.CampaignStatus{messaging.CampaignReady}, To: messaging.CampaignInProgress, At: time.Now()}))
	d.Wake()

	for {
		got, err := store.GetCampaign(ctx, co.ID, c.ID)
		must(err)
		if got.Status == messaging.CampaignCompleted && got.Counts.Sent == 0 {
			fmt.Println(got.Status, "delivered:", got.Counts.Delivered, "failed:", got.Counts.Failed)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	m, err := store.GetMessage(ctx, co.ID, msgs[0].ID)
	must(err)
	fmt.Println(m.Phone, m.Status, m.Details, m.SMSErrorCode)
	stop()
	must(<-done)
	// Output:
	// Completed delivered: 1 failed: 2
	// 447700900001 Failed UNDELIVERED 001
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
