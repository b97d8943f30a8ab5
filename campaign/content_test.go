package campaign_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// fixture is a Service, with an accounts Service on the same memstore,
// with one active company, an approved SMS sender, a chat service, an SMS
// and a chat template, and an SMS transactional campaign.
type fixture struct {
	svc      *campaign.Service
	acc      *accounts.Service
	store    *memstore.Store
	company  messaging.ID
	sender   int64
	chat     int64
	smsTmpl  messaging.ID
	chatTmpl messaging.ID
	txn      messaging.ID
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	st := memstore.New()
	svc := must(campaign.New(campaign.Config{Store: st}))
	t.Cleanup(svc.Close)
	acc := must(accounts.New(accounts.Config{Store: st}))
	f := &fixture{svc: svc, acc: acc, store: st}
	c, err := acc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, acc.SetCompanyActive(ctx, c.ID, true))
	f.company = c.ID
	sd, err := acc.RegisterSMSSender(ctx, c.ID, "ACME")
	require.NoError(t, err)
	require.NoError(t, acc.ApproveSMSSender(ctx, sd.ID))
	f.sender = sd.ID
	cs, err := acc.AddChatService(ctx, c.ID, "Acme", "svc-1")
	require.NoError(t, err)
	f.chat = cs.ID
	f.smsTmpl = f.template(t, messaging.Template{Channel: messaging.ChannelSMS, Name: "sms", Content: "Hi {{name}}"})
	f.chatTmpl = f.template(t, messaging.Template{Channel: messaging.ChannelChat, Name: "chat", MessageType: messaging.TypeSimpleText,
		ChatServiceID: f.chat, Content: "Hi {{name}}", SMSFallbackEnabled: true, SMSFallbackSenderID: f.sender,
		SMSFallbackContent: "SMS: Hi {{name}}"})
	camp, err := svc.CreateTransactional(ctx, c.ID, messaging.ChannelSMS, campaign.NewCampaign{Name: "otp", TemplateID: f.smsTmpl})
	require.NoError(t, err)
	f.txn = camp.ID
	return f
}

func (f *fixture) template(t *testing.T, tm messaging.Template) messaging.ID {
	t.Helper()
	out, err := f.svc.CreateTemplate(t.Context(), f.company, tm)
	require.NoError(t, err)
	return out.ID
}

// requireInvalid asserts a 400 validation error on field.
func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var e *messaging.Error
	require.True(t, errors.As(err, &e), "want *messaging.Error, got %v", err)
	require.Equal(t, messaging.Invalid, e.Code, "error: %v", err)
	require.Contains(t, e.Fields, field, "error: %v", err)
}

func recipients(n int) []campaign.Recipient {
	out := make([]campaign.Recipient, n)
	for i := range out {
		out[i] = campaign.Recipient{Phone: "+4477009000" + string(rune('1'+i/10)) + string(rune('0'+i%10))}
	}
	return out
}

// TestControlCharactersAreRefused sends a NUL, an escape or invalid UTF-8
// in every text field of every use case and expects an Invalid error on
// that field, with nothing stored.
func TestControlCharactersAreRefused(t *testing.T) {
	type useCase struct {
		name  string
		field string
		run   func(t *testing.T, f *fixture, bad string) error
	}
	smsTemplate := func(mut func(tm *messaging.Template, bad string)) func(*testing.T, *fixture, string) error {
		return func(t *testing.T, f *fixture, bad string) error {
			tm := messaging.Template{Channel: messaging.ChannelSMS, Name: "new", Content: "Hello"}
			mut(&tm, bad)
			_, err := f.svc.CreateTemplate(t.Context(), f.company, tm)
			return err
		}
	}
	bulk := func(mut func(rs []campaign.Recipient, ph map[string]string, bad string)) func(*testing.T, *fixture, string) error {
		return func(t *testing.T, f *fixture, bad string) error {
			rs, ph := recipients(5), map[string]string{"shop": "Acme"}
			for i := range rs {
				rs[i].Placeholders = campaign.PlaceholdersOf(map[string]string{"name": "Ann"})
			}
			mut(rs, ph, bad)
			_, err := f.svc.SendBulk(t.Context(), f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: f.smsTmpl, Recipients: rs, Placeholders: ph})
			return err
		}
	}
	direct := func(content string, mut func(rs []campaign.Recipient, bad string)) func(*testing.T, *fixture, string) error {
		return func(t *testing.T, f *fixture, bad string) error {
			rs := recipients(3)
			mut(rs, bad)
			_, err := f.svc.SendDirectSMS(t.Context(), f.company, campaign.DirectSMS{Content: content, SMSSenderID: f.sender, Recipients: rs})
			return err
		}
	}
	cases := []useCase{
		{"company name", "name", func(t *testing.T, f *fixture, b string) error {
			_, err := f.acc.CreateCompany(t.Context(), "Beta"+b)
			return err
		}},
		{"sms sender id", "senderId", func(t *testing.T, f *fixture, b string) error {
			_, err := f.acc.RegisterSMSSender(t.Context(), f.company, "AC"+b)
			return err
		}},
		{"chat service brandName", "brandName", func(t *testing.T, f *fixture, b string) error {
			_, err := f.acc.AddChatService(t.Context(), f.company, "Brand"+b, "svc-2")
			return err
		}},
		{"chat service providerServiceId", "providerServiceId", func(t *testing.T, f *fixture, b string) error {
			_, err := f.acc.AddChatService(t.Context(), f.company, "Brand", "svc"+b)
			return err
		}},
		{"template name", "name", smsTemplate(func(tm *messaging.Template, b string) { tm.Name += b })},
		{"template content", "templateContent", smsTemplate(func(tm *messaging.Template, b string) { tm.Content += b })},
		{"template description", "description", smsTemplate(func(tm *messaging.Template, b string) { tm.Description = b })},
		{"chat template fallback", "smsFallbackTemplateContent", func(t *testing.T, f *fixture, b string) error {
			_, err := f.svc.CreateTemplate(t.Context(), f.company, messaging.Template{Channel: messaging.ChannelChat, Name: "c2",
				MessageType: messaging.TypeSimpleText, ChatServiceID: f.chat, Content: "Hi", SMSFallbackEnabled: true,
				SMSFallbackSenderID: f.sender, SMSFallbackContent: "Hi" + b})
			return err
		}},
		{"chat template carousel title", "typeSpecificConfig.items[0].title", func(t *testing.T, f *fixture, b string) error {
			item := messaging.CarouselItem{Title: "Card", ImageURL: "https://cdn.example.com/a.png", ButtonText: "Buy", ButtonURL: "https://shop.example.com/"}
			items := []messaging.CarouselItem{item, item}
			items[0].Title += b
			_, err := f.svc.CreateTemplate(t.Context(), f.company, messaging.Template{Channel: messaging.ChannelChat, Name: "c3",
				MessageType: messaging.TypeCarousel, ChatServiceID: f.chat, Config: &messaging.ChatConfig{Items: items}})
			return err
		}},
		{"template update", "templateContent", func(t *testing.T, f *fixture, b string) error {
			_, err := f.svc.UpdateTemplate(t.Context(), f.company, f.smsTmpl, messaging.Template{Name: "sms", Content: "Hi" + b})
			return err
		}},
		{"campaign name", "name", func(t *testing.T, f *fixture, b string) error {
			_, err := f.svc.CreateTransactional(t.Context(), f.company, messaging.ChannelSMS, campaign.NewCampaign{Name: "c" + b, TemplateID: f.smsTmpl})
			return err
		}},
		{"campaign description", "description", func(t *testing.T, f *fixture, b string) error {
			_, err := f.svc.CreateTransactional(t.Context(), f.company, messaging.ChannelSMS, campaign.NewCampaign{Name: "c", Description: b, TemplateID: f.smsTmpl})
			return err
		}},
		{"add-message externalUserId", "externalUserId", func(t *testing.T, f *fixture, b string) error {
			_, err := f.svc.AddMessage(t.Context(), f.company, messaging.ChannelSMS, f.txn, campaign.Recipient{Phone: "+447700900001", ExternalUserID: "u" + b})
			return err
		}},
		{"add-message placeholder value", "placeholders.name", func(t *testing.T, f *fixture, b string) error {
			_, err := f.svc.AddMessage(t.Context(), f.company, messaging.ChannelSMS, f.txn, campaign.Recipient{Phone: "+447700900001",
				Placeholders: campaign.PlaceholdersOf(map[string]string{"name": "Ann" + b, "ok": "fine"})})
			return err
		}},
		{"add-message placeholder name", "placeholders", func(t *testing.T, f *fixture, b string) error {
			_, err := f.svc.AddMessage(t.Context(), f.company, messaging.ChannelSMS, f.txn, campaign.Recipient{Phone: "+447700900001",
				Placeholders: campaign.PlaceholdersOf(map[string]string{"na" + b + "me": "Ann"})})
			return err
		}},
		{"bulk recipient placeholder value", "recipients[3].placeholders.name", bulk(func(rs []campaign.Recipient, _ map[string]string, b string) {
			rs[3].Placeholders.Set("name", b)
		})},
		{"bulk recipient placeholder not in the template", "recipients[2].placeholders.other", bulk(func(rs []campaign.Recipient, _ map[string]string, b string) {
			rs[2].Placeholders.Set("other", "x"+b)
		})},
		{"bulk recipient placeholder name", "recipients[1].placeholders", bulk(func(rs []campaign.Recipient, _ map[string]string, b string) {
			rs[1].Placeholders.Set(b, "x")
		})},
		{"bulk recipient externalUserId", "recipients[0].externalUserId", bulk(func(rs []campaign.Recipient, _ map[string]string, b string) {
			rs[0].ExternalUserID = b
		})},
		{"bulk recipient with an invalid number too", "recipients[4].externalUserId", bulk(func(rs []campaign.Recipient, _ map[string]string, b string) {
			rs[4].Phone, rs[4].ExternalUserID = "123", b
		})},
		{"bulk request placeholder value", "placeholders.shop", bulk(func(_ []campaign.Recipient, ph map[string]string, b string) {
			ph["shop"] = b
		})},
		{"direct sms content", "messageContent", direct("Hi\x00", func([]campaign.Recipient, string) {})},
		{"direct sms externalUserId", "recipients[2].externalUserId", direct("Hi", func(rs []campaign.Recipient, b string) { rs[2].ExternalUserID = b })},
		{"direct chat content", "messageContent", func(t *testing.T, f *fixture, b string) error {
			_, err := f.svc.SendDirectChat(t.Context(), f.company, campaign.DirectChat{Content: "Hi" + b, ChatServiceID: f.chat, Recipients: recipients(1)})
			return err
		}},
		{"direct chat fallback", "smsFallbackText", func(t *testing.T, f *fixture, b string) error {
			_, err := f.svc.SendDirectChat(t.Context(), f.company, campaign.DirectChat{Content: "Hi", ChatServiceID: f.chat,
				SMSFallbackText: "Hi" + b, SMSFallbackSenderID: f.sender, Recipients: recipients(1)})
			return err
		}},
		{"direct chat externalUserId", "recipients[0].externalUserId", func(t *testing.T, f *fixture, b string) error {
			rs := recipients(1)
			rs[0].ExternalUserID = b
			_, err := f.svc.SendDirectChat(t.Context(), f.company, campaign.DirectChat{Content: "Hi", ChatServiceID: f.chat, Recipients: rs})
			return err
		}},
	}
	bads := []struct{ name, s string }{{"NUL", "\x00"}, {"escape", "\x1b"}, {"invalid UTF-8", "\xff"}}
	for _, tc := range cases {
		for _, bad := range bads {
			t.Run(tc.name+"/"+bad.name, func(t *testing.T) {
				f := newFixture(t)
				requireInvalid(t, tc.run(t, f, bad.s), tc.field)
				cs, total, err := f.svc.ListCampaigns(t.Context(), f.company, messaging.CampaignFilter{})
				require.NoError(t, err)
				require.Equal(t, 1, total, "only the fixture's campaign: %v", cs)
				ms, _, err := f.svc.ListMessages(t.Context(), f.company, messaging.MessageFilter{ExternalUserID: "u" + bad.s})
				require.NoError(t, err)
				require.Empty(t, ms)
			})
		}
	}
}

// TestControlCharactersAllowed: tab, line feed and carriage return are
// text.
func TestControlCharactersAllowed(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	_, err := f.svc.CreateTransactional(ctx, f.company, messaging.ChannelSMS, campaign.NewCampaign{Name: "a\tb", Description: "line\r\nline", TemplateID: f.smsTmpl})
	require.NoError(t, err)
	m, err := f.svc.AddMessage(ctx, f.company, messaging.ChannelSMS, f.txn, campaign.Recipient{Phone: "+447700900001",
		Placeholders: campaign.PlaceholdersOf(map[string]string{"name": "Ann\nSmith"})})
	require.NoError(t, err)
	require.Equal(t, "Hi Ann\nSmith", m.Content)
}
