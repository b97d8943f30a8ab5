package accounts_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// A chat service at a provider other than Herald's own: the provider's
// description checks the channel and the credentials, and the service
// answered tells only that it has credentials.
func ExampleService_CreateChatService() {
	ctx := context.Background()
	whatsapp := accounts.ProviderInfo{Name: "meta-whatsapp", Channels: []string{"whatsapp"},
		CheckCredentials: func(_ string, creds json.RawMessage) error {
			var c struct {
				AccessToken string `json:"accessToken"`
			}
			if json.Unmarshal(creds, &c) != nil || c.AccessToken == "" {
				return messaging.Invalidf("credentials.accessToken", "credentials.accessToken is required")
			}
			return nil
		}}
	svc, err := accounts.New(accounts.Config{Store: memstore.New(), Providers: func(name string) (accounts.ProviderInfo, bool) {
		if name == whatsapp.Name {
			return whatsapp, true
		}
		return accounts.ProviderInfo{}, false
	}})
	if err != nil {
		panic(err)
	}
	co, err := svc.CreateCompany(ctx, "Acme")
	if err != nil {
		panic(err)
	}
	in := accounts.ChatServiceInput{BrandName: "Acme", ProviderServiceID: "106540352242922", Provider: "meta-whatsapp"}
	_, err = svc.CreateChatService(ctx, co.ID, in)
	fmt.Println(err)
	in.Credentials = json.RawMessage(`{"accessToken": "EAAG..."}`)
	cs, err := svc.CreateChatService(ctx, co.ID, in)
	if err != nil {
		panic(err)
	}
	fmt.Println(cs.Provider, cs.Channel, cs.CredentialsSet, cs.Credentials == nil)
	// Output:
	// Bad Request: Validation failed (credentials.accessToken: credentials.accessToken is required)
	// meta-whatsapp whatsapp true true
}
