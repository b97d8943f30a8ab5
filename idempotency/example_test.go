package idempotency_test

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// A request made twice with one key runs once; the second gets the
// first answer.
func Example() {
	ctx := context.Background()
	s, _ := idempotency.New(idempotency.Config{Store: memstore.New()})
	company := messaging.NewIDGenerator(nil).New()
	req := idempotency.Request{CompanyID: company, Key: "order-42",
		Hash: idempotency.Digest("POST", "/api/v1/sms/send", []byte(`{"messageContent":"Hi"}`))}

	for range 2 {
		out, err := s.Begin(ctx, req)
		if err != nil {
			fmt.Println(err)
			return
		}
		if out.Replay != nil {
			fmt.Println("replayed:", out.Replay.Status, string(out.Replay.Body))
			continue
		}
		fmt.Println("ran")
		_ = s.Finish(ctx, req, idempotency.Response{Status: 202, Body: []byte(`{"status":"Pending"}`)})
	}
	// Output:
	// ran
	// replayed: 202 {"status":"Pending"}
}
