package admin_test

import (
	"context"
	"fmt"
	"log"

	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/client/admin"
)

// Onboarding a company: created, activated, given an API key, an approved
// SMS sender and a chat service; the company then sends with the key.
func Example() {
	herald, err := startServer() // a Herald server in this process; your server's URL and admin token below
	if err != nil {
		log.Fatal(err)
	}
	defer herald.Close()
	ctx := context.Background()

	a, err := admin.New(herald.URL, adminToken)
	if err != nil {
		log.Fatal(err)
	}
	co, err := a.CreateCompany(ctx, "Acme")
	if err != nil {
		log.Fatal(err)
	}
	if co, err = a.ActivateCompany(ctx, co.ID); err != nil {
		log.Fatal(err)
	}
	key, err := a.CreateAPIKey(ctx, co.ID, "crm")
	if err != nil {
		log.Fatal(err)
	}
	sender, err := a.RegisterSMSSender(ctx, co.ID, "ACME")
	if err != nil {
		log.Fatal(err)
	}
	if sender, err = a.ApproveSMSSender(ctx, sender.ID); err != nil {
		log.Fatal(err)
	}
	chat, err := a.AddChatService(ctx, co.ID, admin.ChatServiceInput{BrandName: "Acme", ProviderServiceID: "acme-1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s active=%v, key %q, sender %s approved=%v, chat service %s\n",
		co.Name, co.Active, key.Name, sender.SenderID, sender.Approved, chat.BrandName)

	// The company's side, with its new key.
	c, err := client.New(herald.URL, key.APIKey)
	if err != nil {
		log.Fatal(err)
	}
	senders, err := c.ListSMSSenders(ctx)
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.SendSMS(ctx, client.DirectSMS{MessageContent: "Welcome", SMSSenderID: senders[0].ID,
		Recipients: []client.DirectRecipient{{PhoneNumber: "+447700900123"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sent:", res.MessageCount, res.Status)
	// Output:
	// Acme active=true, key "crm", sender ACME approved=true, chat service Acme
	// sent: 1 Pending
}
