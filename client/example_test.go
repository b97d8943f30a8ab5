package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/heraldhq/herald/client"
)

// exampleServer starts a Herald server in this process, with a company
// ready to send (its API key, an approved SMS sender) and a simulated SMSC
// that delivers every SMS: what the examples talk to.
func exampleServer() *testServer {
	ts, err := startServer(serverConfig{})
	if err != nil {
		log.Fatal(err)
	}
	return ts
}

// A direct SMS, and its message read until it is delivered.
func Example() {
	herald := exampleServer() // your server's URL and your company's API key below
	defer herald.Close()
	ctx := context.Background()

	c, err := client.New(herald.URL, herald.APIKey)
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.SendSMS(ctx, client.DirectSMS{
		MessageContent: "Your code is 4711",
		SMSSenderID:    herald.SenderID,
		Recipients:     []client.DirectRecipient{{PhoneNumber: "+447700900123", ExternalUserID: "crm-42"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("accepted:", res.MessageCount, res.Status)

	page, err := c.ListMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID})
	if err != nil {
		log.Fatal(err)
	}
	id := page.Items[0].ID
	for {
		m, err := c.GetMessage(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		if m.Status.Final() {
			fmt.Println(m.PhoneNumber, m.ExternalUserID, m.Status, m.MessageContent)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Output:
	// accepted: 1 Pending
	// 447700900123 crm-42 Delivered Your code is 4711
}

// Paging through a campaign's messages: the iterator asks for the pages
// one after the other until it has them all.
func ExampleClient_AllMessages() {
	herald := exampleServer()
	defer herald.Close()
	ctx := context.Background()
	c, err := client.New(herald.URL, herald.APIKey)
	if err != nil {
		log.Fatal(err)
	}
	tpl, err := c.CreateSMSTemplate(ctx, client.SMSTemplateInput{Name: "sale", TemplateContent: "Hi {{name}}, 20% off", SMSSenderID: herald.SenderID})
	if err != nil {
		log.Fatal(err)
	}
	var to []client.Recipient
	for i := range 25 {
		to = append(to, client.Recipient{PhoneNumber: fmt.Sprintf("+4477009001%02d", i)})
	}
	res, err := c.SendSMSPromotional(ctx, client.BulkSend{TemplateID: tpl.ID, Recipients: to, Placeholders: map[string]string{"name": "friend"}})
	if err != nil {
		log.Fatal(err)
	}
	for { // the messages of a bulk send are written in the background
		d, err := c.GetCampaign(ctx, res.CampaignID)
		if err != nil {
			log.Fatal(err)
		}
		if d.Status == client.CampaignReady {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	n := 0
	for m, err := range c.AllMessages(ctx, client.MessageListOptions{CampaignID: res.CampaignID, PageOptions: client.PageOptions{PageSize: 10}}) {
		if err != nil {
			log.Fatal(err)
		}
		if n++; n == 1 {
			fmt.Println("first:", m.MessageContent)
		}
	}
	fmt.Println("messages:", n)
	// Output:
	// first: Hi friend, 20% off
	// messages: 25
}

// Sending again safely: the same Idempotency-Key gets the first answer,
// and nothing is sent twice.
func ExampleWithIdempotencyKey() {
	herald := exampleServer()
	defer herald.Close()
	c, err := client.New(herald.URL, herald.APIKey)
	if err != nil {
		log.Fatal(err)
	}
	ctx := client.WithIdempotencyKey(context.Background(), "otp-4711")
	send := client.DirectSMS{MessageContent: "Your code is 4711", SMSSenderID: herald.SenderID,
		Recipients: []client.DirectRecipient{{PhoneNumber: "+447700900790"}}}
	first, err := c.SendSMS(ctx, send)
	if err != nil {
		log.Fatal(err)
	}
	again, err := c.SendSMS(ctx, send) // say the first answer was lost
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same campaign:", first.CampaignID == again.CampaignID)
	// Output:
	// same campaign: true
}

// Telling the API's refusals apart.
func ExampleError() {
	herald := exampleServer()
	defer herald.Close()
	c, err := client.New(herald.URL, herald.APIKey)
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.SendSMS(context.Background(), client.DirectSMS{SMSSenderID: herald.SenderID,
		Recipients: []client.DirectRecipient{{PhoneNumber: "+447700900123"}}})
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest {
		fmt.Println(apiErr.Name)
		for field, msg := range apiErr.ValidationErrors {
			fmt.Printf("%s: %s\n", field, msg)
		}
	}
	_, err = c.GetCampaign(context.Background(), "0190f5c0-0000-7000-8000-000000000000")
	fmt.Println("not found:", client.IsNotFound(err))
	// Output:
	// Bad Request
	// messageContent: messageContent is required
	// not found: true
}
