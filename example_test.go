package herald_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// fakeSMSC accepts every SMS and reports it delivered at once, through the
// Reporter Herald gave it.
type fakeSMSC struct{ reports delivery.Reporter }

func (f fakeSMSC) Send(ctx context.Context, sms delivery.SMS) (delivery.SMSResult, error) {
	id := "id-" + sms.To
	go func() { // an SMSC sends its receipt after answering the submit
		_ = f.reports.Receipt(context.Background(), delivery.Receipt{ProviderID: id, State: delivery.StateDelivered, At: time.Now()})
	}()
	return delivery.SMSResult{PartIDs: []string{id}}, nil
}

// ExampleNew embeds Herald on the in-memory store with a fake SMSC, and
// sends an SMS until it is Delivered.
func ExampleNew() {
	ctx, stop := context.WithCancel(context.Background())
	h, err := herald.New(herald.Config{
		Store: memstore.New(),
		SMS:   func(r delivery.Reporter) (delivery.SMSSender, error) { return fakeSMSC{r}, nil },
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()

	acc, svc := h.Accounts(), h.Campaigns()
	co, _ := acc.CreateCompany(ctx, "Acme")
	_ = acc.SetCompanyActive(ctx, co.ID, true)
	sender, _ := acc.RegisterSMSSender(ctx, co.ID, "ACME")
	_ = acc.ApproveSMSSender(ctx, sender.ID)
	_, err = svc.SendDirectSMS(ctx, co.ID, campaign.DirectSMS{Content: "Your code is 4711", SMSSenderID: sender.ID,
		Recipients: []campaign.Recipient{{Phone: "+447700900123"}}})
	if err != nil {
		panic(err)
	}
	for {
		msgs, _, _ := svc.ListMessages(ctx, co.ID, messaging.MessageFilter{Phone: "447700900123"})
		if len(msgs) == 1 && msgs[0].Status == messaging.StatusDelivered {
			fmt.Println(msgs[0].Phone, strings.ToLower(string(msgs[0].Status)))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	fmt.Println(<-done)
	fmt.Println(h.Close(context.Background()))
	// Output:
	// 447700900123 delivered
	// <nil>
	// <nil>
}
