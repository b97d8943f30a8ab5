package campaign_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// carriers describes Herald's provider and a WhatsApp one that carries
// no carousel.
func carriers(known ...string) accounts.Providers {
	return func(name string) (accounts.ProviderInfo, bool) {
		found := false
		for _, k := range known {
			found = found || k == name
		}
		if !found {
			return accounts.ProviderInfo{}, false
		}
		if name == messaging.DefaultChatProvider {
			return accounts.HeraldProvider(), true
		}
		return accounts.ProviderInfo{Name: name, Channels: []string{"whatsapp"},
			Carries: func(_ string, t messaging.MessageType, _ messaging.ChatConfig) error {
				if t == messaging.TypeCarousel {
					return messaging.Invalidf("messageType", "a carousel cannot go over WhatsApp")
				}
				return nil
			}}, true
	}
}

// carriedFixture is a company with a Viber service of Herald's provider
// and a WhatsApp service of another.
type carriedFixture struct {
	svc       *campaign.Service
	company   messaging.ID
	viber, wa int64
}

func newCarriedFixture(t *testing.T, campaignKnows ...string) carriedFixture {
	t.Helper()
	ctx := t.Context()
	st := memstore.New()
	acc := must(accounts.New(accounts.Config{Store: st, Providers: carriers("herald", "meta-whatsapp")}))
	svc := must(campaign.New(campaign.Config{Store: st, Providers: carriers(campaignKnows...)}))
	t.Cleanup(svc.Close)
	c, err := acc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, acc.SetCompanyActive(ctx, c.ID, true))
	viber, err := acc.AddChatService(ctx, c.ID, "Acme", "svc-1")
	require.NoError(t, err)
	wa, err := acc.CreateChatService(ctx, c.ID, accounts.ChatServiceInput{BrandName: "Acme WA", ProviderServiceID: "1055", Provider: "meta-whatsapp"})
	require.NoError(t, err)
	return carriedFixture{svc: svc, company: c.ID, viber: viber.ID, wa: wa.ID}
}

func carousel() *messaging.ChatConfig {
	item := messaging.CarouselItem{Title: "Tea", ImageURL: "https://cdn.example.com/a.png", ButtonText: "Go", ButtonURL: "https://example.com/a"}
	return &messaging.ChatConfig{Items: []messaging.CarouselItem{item, item}}
}

// TestTemplateCarriedByProvider: a chat template its service's provider
// cannot carry is refused on the provider's field; so is one whose
// service names a provider the server does not know.
func TestTemplateCarriedByProvider(t *testing.T) {
	f := newCarriedFixture(t, "herald", "meta-whatsapp")
	ctx := t.Context()
	tm := messaging.Template{Channel: messaging.ChannelChat, Name: "cards", MessageType: messaging.TypeCarousel,
		ChatServiceID: f.wa, Content: "Pick one", Config: carousel()}
	_, err := f.svc.CreateTemplate(ctx, f.company, tm)
	requireInvalid(t, err, "messageType")

	tm.ChatServiceID = f.viber
	created, err := f.svc.CreateTemplate(ctx, f.company, tm)
	require.NoError(t, err, "Herald's provider carries carousels")
	tm.ChatServiceID = f.wa
	_, err = f.svc.UpdateTemplate(ctx, f.company, created.ID, tm)
	requireInvalid(t, err, "messageType")

	g := newCarriedFixture(t, "herald")
	_, err = g.svc.CreateTemplate(ctx, g.company, messaging.Template{Channel: messaging.ChannelChat, Name: "hi",
		MessageType: messaging.TypeSimpleText, ChatServiceID: g.wa, Content: "Hi"})
	requireInvalid(t, err, "chatServiceId")
}

// TestProviderTemplate: a providerTemplate goes on WhatsApp services
// only, with a name, a language code and non-empty parameters; its
// parameters' placeholders are the template's and are rendered for each
// recipient.
func TestProviderTemplate(t *testing.T) {
	f := newCarriedFixture(t, "herald", "meta-whatsapp")
	ctx := t.Context()
	with := func(service int64, pt messaging.ProviderTemplate) messaging.Template {
		return messaging.Template{Channel: messaging.ChannelChat, Name: "order", MessageType: messaging.TypeSimpleText,
			ChatServiceID: service, Content: "Order {{order}} shipped", Config: &messaging.ChatConfig{ProviderTemplate: &pt}}
	}
	ok := messaging.ProviderTemplate{Name: "order_shipped", Language: "en_US", Parameters: []string{"{{name}}", "Order {{order}}"}}
	for _, c := range []struct {
		name  string
		t     messaging.Template
		field string
	}{
		{"on Viber", with(f.viber, ok), "typeSpecificConfig.providerTemplate"},
		{"no name", with(f.wa, messaging.ProviderTemplate{Language: "en"}), "typeSpecificConfig.providerTemplate.name"},
		{"no language", with(f.wa, messaging.ProviderTemplate{Name: "x"}), "typeSpecificConfig.providerTemplate.language"},
		{"bad language", with(f.wa, messaging.ProviderTemplate{Name: "x", Language: "English"}), "typeSpecificConfig.providerTemplate.language"},
		{"empty parameter", with(f.wa, messaging.ProviderTemplate{Name: "x", Language: "en", Parameters: []string{"a", " "}}),
			"typeSpecificConfig.providerTemplate.parameters[1]"},
		{"too many parameters", with(f.wa, messaging.ProviderTemplate{Name: "x", Language: "en", Parameters: make([]string, campaign.MaxProviderTemplateParams+1)}),
			"typeSpecificConfig.providerTemplate.parameters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.svc.CreateTemplate(ctx, f.company, c.t)
			requireInvalid(t, err, c.field)
		})
	}

	tm, err := f.svc.CreateTemplate(ctx, f.company, with(f.wa, ok))
	require.NoError(t, err)
	camp, err := f.svc.CreateTransactional(ctx, f.company, messaging.ChannelChat, campaign.NewCampaign{Name: "orders", TemplateID: tm.ID})
	require.NoError(t, err)

	added, err := f.svc.AddMessageTo(ctx, f.company, messaging.ChannelChat, camp.ID, campaign.Recipient{Phone: "+447700900001",
		Placeholders: campaign.PlaceholdersOf(map[string]string{"name": "Ann", "order": "A-1"})}, campaign.KeepMissing)
	require.NoError(t, err)
	m := added.Message
	require.Equal(t, "Order A-1 shipped", m.Content)
	require.NotNil(t, m.Config)
	require.Equal(t, []string{"Ann", "Order A-1"}, m.Config.ProviderTemplate.Parameters)
	require.Equal(t, "order_shipped", m.Config.ProviderTemplate.Name)
	require.Equal(t, "en_US", m.Config.ProviderTemplate.Language)

	added, err = f.svc.AddMessageTo(ctx, f.company, messaging.ChannelChat, camp.ID, campaign.Recipient{Phone: "+447700900002",
		Placeholders: campaign.PlaceholdersOf(map[string]string{"order": "B-2"})}, campaign.KeepMissing)
	require.NoError(t, err)
	require.Equal(t, []campaign.MissingPlaceholder{{Name: "name", Recipients: 1}}, added.MissingPlaceholders, "a parameter's placeholder counts")
	require.Equal(t, []string{"{{name}}", "Order B-2"}, added.Message.Config.ProviderTemplate.Parameters)

	stored, err := f.svc.GetTemplate(ctx, f.company, tm.ID)
	require.NoError(t, err)
	require.Equal(t, ok.Parameters, stored.Config.ProviderTemplate.Parameters, "the template keeps its parameters as written")
}
