package smpp_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

// A Client sending through the simulator; receipts reach the handler.
func Example() {
	sim := smscsim.New(smscsim.Config{})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		panic(err)
	}
	defer sim.Close()

	receipts := make(chan delivery.Receipt, 1)
	c, err := smpp.New(smpp.Config{
		Addr:     sim.Addr(),
		SystemID: "herald",
		Password: "secret",
		ReceiptHandler: func(ctx context.Context, r delivery.Receipt) error {
			receipts <- r // store it; return an error to have it sent again
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.Send(ctx, delivery.SMS{From: "Herald", To: "447700900001", Text: "Your code is 123456"})
	if err != nil {
		panic(err)
	}
	r := <-receipts
	fmt.Println(len(res.PartIDs), r.ProviderID == res.PartIDs[0], r.State, r.Err)
	// Output: 1 true UNDELIV 001
}
