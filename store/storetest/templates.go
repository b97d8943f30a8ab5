package storetest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// fullConfig is a chat config with every field set.
func fullConfig() *messaging.ChatConfig {
	return &messaging.ChatConfig{
		ImageURL: "https://cdn.example.com/a.png", ButtonText: "Open", ButtonURL: "https://example.com/o/{{order}}",
		Items: []messaging.CarouselItem{
			{Title: "First", ImageURL: "https://cdn.example.com/1.png", ButtonText: "Buy", ButtonURL: "https://example.com/1"},
			{Title: "Second ünïcode", ImageURL: "https://cdn.example.com/2.png", ButtonText: "See", ButtonURL: "https://example.com/2",
				SecondaryButtonText: "Later", SecondaryButtonURL: "https://example.com/2/later"},
		},
		Options:  []messaging.SurveyOption{{OptionText: "Yes", OptionValue: "y"}, {OptionText: "No", OptionValue: "n"}},
		VideoURL: "https://cdn.example.com/v.mp4", ThumbnailURL: "https://cdn.example.com/v.jpg", FileSize: 1 << 27, Duration: 93,
		FileURL: "https://cdn.example.com/f/{{id}}.pdf", FileName: "invoice.pdf", FileType: "PDF",
	}
}

// chatTemplate returns an unsaved chat template with every field set.
func (f *fixture) chatTemplate(companyID messaging.ID, name string, created time.Time) messaging.Template {
	return messaging.Template{
		ID: f.id(), CompanyID: companyID, Name: name, Description: "Chat template «" + name + "»",
		Channel: messaging.ChannelChat, MessageType: messaging.TypeCarousel, Content: "Привет {{name}} 🎉",
		ChatServiceID: 7, Config: fullConfig(), SMSFallbackEnabled: true, SMSFallbackContent: "Hi {{name}}, see {{url}}",
		SMSFallbackSenderID: 3, ValidityPeriod: 600, CreatedAt: created, UpdatedAt: created.Add(time.Second),
	}
}

// smsTemplate returns an unsaved SMS template with the optional fields
// empty.
func (f *fixture) smsTemplate(companyID messaging.ID, name string, created time.Time) messaging.Template {
	return messaging.Template{
		ID: f.id(), CompanyID: companyID, Name: name, Channel: messaging.ChannelSMS,
		MessageType: messaging.TypeSimpleText, Content: "Your code is {{code}}", CreatedAt: created, UpdatedAt: created,
	}
}

func (f *fixture) createTemplate(tpl messaging.Template) messaging.Template {
	f.t.Helper()
	require.NoError(f.t, f.s.CreateTemplate(f.ctx, &tpl))
	return tpl
}

func (f *fixture) getTemplate(companyID, id messaging.ID) messaging.Template {
	f.t.Helper()
	tpl, err := f.s.GetTemplate(f.ctx, companyID, id)
	require.NoError(f.t, err)
	return tpl
}

// testTemplateCRUD: create, get, update of every field (Config and
// fallback included), delete; the store keeps its own copies.
func testTemplateCRUD(f *fixture) {
	t := f.t
	a := f.company("A")
	chat := f.chatTemplate(a.ID, "welcome", base.Add(123456*time.Microsecond))
	sms := f.smsTemplate(a.ID, "otp", at(10))
	require.NoError(t, f.s.CreateTemplate(f.ctx, &chat))
	require.NoError(t, f.s.CreateTemplate(f.ctx, &sms))
	requireSame(t, chat, f.getTemplate(a.ID, chat.ID))
	requireSame(t, sms, f.getTemplate(a.ID, sms.ID))

	// Callers never share memory with the store.
	chat.Config.Items[0].Title = "changed after create"
	got := f.getTemplate(a.ID, chat.ID)
	require.Equal(t, "First", got.Config.Items[0].Title)
	got.Config.Options[0].OptionText = "changed after get"
	got = f.getTemplate(a.ID, chat.ID)
	require.Equal(t, "Yes", got.Config.Options[0].OptionText)
	chat.Config.Items[0].Title = "First"

	// Update replaces every field but ID, CompanyID, Channel and CreatedAt.
	upd := messaging.Template{
		ID: chat.ID, CompanyID: a.ID, Name: "welcome-2", Description: "", Channel: messaging.ChannelSMS,
		MessageType: messaging.TypeVideo, Content: "Watch {{name}}", SMSSenderID: 0, ChatServiceID: 8,
		Config:    &messaging.ChatConfig{VideoURL: "https://cdn.example.com/w.mp4", ThumbnailURL: "https://cdn.example.com/w.jpg", FileSize: 2048, Duration: 5},
		CreatedAt: at(999), UpdatedAt: at(20),
	}
	require.NoError(t, f.s.UpdateTemplate(f.ctx, &upd))
	want := upd
	want.Channel, want.CreatedAt = chat.Channel, chat.CreatedAt
	requireSame(t, want, f.getTemplate(a.ID, chat.ID))

	// Back to the full form, then to no config at all.
	full := chat
	full.UpdatedAt = at(30)
	require.NoError(t, f.s.UpdateTemplate(f.ctx, &full))
	requireSame(t, full, f.getTemplate(a.ID, chat.ID))
	bare := full
	bare.Config, bare.SMSFallbackEnabled, bare.SMSFallbackContent, bare.SMSFallbackSenderID = nil, false, "", 0
	bare.MessageType, bare.UpdatedAt = messaging.TypeSimpleText, at(40)
	require.NoError(t, f.s.UpdateTemplate(f.ctx, &bare))
	requireSame(t, bare, f.getTemplate(a.ID, chat.ID))

	smsUpd := sms
	smsUpd.SMSSenderID, smsUpd.Description, smsUpd.Content, smsUpd.UpdatedAt = 12, "with a sender", "Code: {{code}}", at(50)
	require.NoError(t, f.s.UpdateTemplate(f.ctx, &smsUpd))
	requireSame(t, smsUpd, f.getTemplate(a.ID, sms.ID))

	// Delete.
	require.NoError(t, f.s.DeleteTemplate(f.ctx, a.ID, chat.ID))
	_, err := f.s.GetTemplate(f.ctx, a.ID, chat.ID)
	requireNotFound(t, err)
	requireNotFound(t, f.s.DeleteTemplate(f.ctx, a.ID, chat.ID), "deleting twice")
	missing := f.chatTemplate(a.ID, "missing", at(60))
	requireNotFound(t, f.s.UpdateTemplate(f.ctx, &missing), "updating an unknown template")
	list, total, err := f.s.ListTemplates(f.ctx, a.ID, messaging.PageRequest{Page: 1, PageSize: 20})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	requireSameList(t, []messaging.Template{smsUpd}, list)
}

// testTemplateTenancy: another company's template is NotFound on every
// method and is left untouched.
func testTemplateTenancy(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	tpl := f.createTemplate(f.chatTemplate(a.ID, "welcome", at(1)))

	_, err := f.s.GetTemplate(f.ctx, b.ID, tpl.ID)
	requireNotFound(t, err)
	_, err = f.s.GetTemplate(f.ctx, a.ID, f.id())
	requireNotFound(t, err)

	hijack := tpl
	hijack.CompanyID, hijack.Name, hijack.Content = b.ID, "hijacked", "hijacked"
	requireNotFound(t, f.s.UpdateTemplate(f.ctx, &hijack))
	requireNotFound(t, f.s.DeleteTemplate(f.ctx, b.ID, tpl.ID))
	requireSame(t, tpl, f.getTemplate(a.ID, tpl.ID), "another company's calls must not change the template")

	list, total, err := f.s.ListTemplates(f.ctx, b.ID, messaging.PageRequest{Page: 1, PageSize: 20})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, list)
}

// testTemplateNames: names are unique per company across channels.
func testTemplateNames(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	requireNameTaken := func(err error) {
		t.Helper()
		e := requireCode(t, err, messaging.Invalid)
		require.NotEmpty(t, e.Fields["name"], "a duplicate name is an error on field name: %v", err)
	}
	f.createTemplate(f.smsTemplate(a.ID, "welcome", at(1)))

	dup := f.chatTemplate(a.ID, "welcome", at(2))
	requireNameTaken(f.s.CreateTemplate(f.ctx, &dup))
	_, err := f.s.GetTemplate(f.ctx, a.ID, dup.ID)
	requireNotFound(t, err, "a refused template is not stored")
	_, total, err := f.s.ListTemplates(f.ctx, a.ID, messaging.PageRequest{Page: 1, PageSize: 20})
	require.NoError(t, err)
	require.Equal(t, 1, total)

	// The same name in another company is fine.
	f.createTemplate(f.chatTemplate(b.ID, "welcome", at(3)))

	promo := f.createTemplate(f.chatTemplate(a.ID, "promo", at(4)))
	rename := promo
	rename.Name, rename.Content = "welcome", "changed"
	requireNameTaken(f.s.UpdateTemplate(f.ctx, &rename))
	requireSame(t, promo, f.getTemplate(a.ID, promo.ID), "a refused update changes nothing")

	// Keeping its own name is fine.
	keep := promo
	keep.Content, keep.UpdatedAt = "new content", at(5)
	require.NoError(t, f.s.UpdateTemplate(f.ctx, &keep))
	requireSame(t, keep, f.getTemplate(a.ID, promo.ID))

	// A renamed template frees its old name; the new one is taken.
	renamed := keep
	renamed.Name = "promo-2026"
	require.NoError(t, f.s.UpdateTemplate(f.ctx, &renamed))
	f.createTemplate(f.smsTemplate(a.ID, "promo", at(6)))
	again := f.smsTemplate(a.ID, "promo-2026", at(7))
	requireNameTaken(f.s.CreateTemplate(f.ctx, &again))

	// A deleted template frees its name.
	list, _, err := f.s.ListTemplates(f.ctx, a.ID, messaging.PageRequest{Page: 1, PageSize: 20})
	require.NoError(t, err)
	for _, tpl := range list {
		if tpl.Name == "welcome" {
			require.NoError(t, f.s.DeleteTemplate(f.ctx, a.ID, tpl.ID))
		}
	}
	f.createTemplate(f.chatTemplate(a.ID, "welcome", at(8)))
}

// testTemplatePagination: pages of the company's templates, newest first,
// with the total.
func testTemplatePagination(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	const n = 45
	// Creation times unrelated to the order of the ids and of the writes.
	rng := rand.New(rand.NewPCG(1, 2))
	created := rng.Perm(n)
	want := make([]messaging.Template, n) // newest first
	for i := range n {
		want[n-1-created[i]] = f.createTemplate(f.smsTemplate(a.ID, fmt.Sprintf("template-%02d", i), at(created[i])))
	}
	for i := range 3 {
		f.createTemplate(f.smsTemplate(b.ID, fmt.Sprintf("other-%d", i), at(100+i)))
	}

	var all []messaging.Template
	for page, size := range []int{20, 20, 5, 0} {
		got, total, err := f.s.ListTemplates(f.ctx, a.ID, messaging.PageRequest{Page: page + 1, PageSize: 20})
		require.NoError(t, err)
		require.Equal(t, n, total, "total on page %d", page+1)
		require.Len(t, got, size, "page %d", page+1)
		all = append(all, got...)
	}
	requireSameList(t, want, all)

	got, total, err := f.s.ListTemplates(f.ctx, a.ID, messaging.PageRequest{Page: 2, PageSize: 7})
	require.NoError(t, err)
	require.Equal(t, n, total)
	requireSameList(t, want[7:14], got)
}

// testTemplateDeleteKeepsCampaigns: a template used by a campaign can be
// deleted; the campaign keeps its template id and name.
func testTemplateDeleteKeepsCampaigns(f *fixture) {
	t := f.t
	a := f.company("A")
	tpl := f.createTemplate(f.chatTemplate(a.ID, "welcome", at(1)))
	c := f.newCampaign(a.ID, messaging.ChannelChat, messaging.ModeTransactional, messaging.CampaignInProgress, 0, at(2))
	c.TemplateID, c.TemplateName = tpl.ID, tpl.Name
	c = f.createCampaign(c)
	m := f.newMessage(c, f.nextPhone(), at(3))
	f.admit(a.ID, m)

	require.NoError(t, f.s.DeleteTemplate(f.ctx, a.ID, tpl.ID))
	got := f.getCampaign(a.ID, c.ID)
	require.Equal(t, tpl.ID, got.TemplateID)
	require.Equal(t, "welcome", got.TemplateName)
	requireSame(t, *m, f.getMessage(a.ID, m.ID))
}
