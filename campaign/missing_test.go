package campaign_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// missingRecipients are five recipients of the template "{{greeting}}
// {{name}}, see you in {{city}}" with greeting given by the request: one
// with every value, one without a city, one with none, one with an invalid
// number and one with an empty name.
func missingRecipients() []campaign.Recipient {
	ph := campaign.PlaceholdersOf
	return []campaign.Recipient{
		{Phone: "+447700900001", Placeholders: ph(map[string]string{"name": "Ann", "city": "Leeds"})},
		{Phone: "+447700900002", Placeholders: ph(map[string]string{"name": "Bob"})},
		{Phone: "+447700900003"},
		{Phone: "12", Placeholders: ph(map[string]string{"name": "Bad"})},
		{Phone: "+447700900005", Placeholders: ph(map[string]string{"name": "", "city": "York"})},
	}
}

// TestBulkReportsMissingPlaceholders: a bulk send counts, per placeholder,
// the recipients with no value for it (an empty value is a value, a
// request-level value fills it for everyone, an invalid number is not
// counted) and by default sends their message with the placeholder as
// written.
func TestBulkReportsMissingPlaceholders(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tid := f.template(t, messaging.Template{Channel: messaging.ChannelSMS, Name: "visit", Content: "{{greeting}} {{name}}, see you in {{city}}"})
	res, err := f.svc.SendBulk(ctx, f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tid,
		Recipients: missingRecipients(), Placeholders: map[string]string{"greeting": "Hello"}})
	require.NoError(t, err)
	require.Equal(t, []campaign.MissingPlaceholder{{Name: "name", Recipients: 1}, {Name: "city", Recipients: 2}}, res.MissingPlaceholders)
	require.Equal(t, []string{}, res.MissingPlaceholderPhoneNumbers)
	require.Equal(t, 4, res.MessageCount)
	require.Equal(t, 1, res.SkippedCount)
	require.NoError(t, f.svc.Wait(ctx))
	ms, _, err := f.svc.ListMessages(ctx, f.company, messaging.MessageFilter{Phone: "+447700900003"})
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Equal(t, "Hello {{name}}, see you in {{city}}", ms[0].Content)

	// Every value given: an empty list, not nil.
	res, err = f.svc.SendBulk(ctx, f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tid,
		Recipients: missingRecipients()[:1], Placeholders: map[string]string{"greeting": "Hello"}})
	require.NoError(t, err)
	require.NotNil(t, res.MissingPlaceholders)
	require.Empty(t, res.MissingPlaceholders)
}

// TestBulkSkipsMissingPlaceholders: with SkipMissing the recipients lacking
// any value are left out, listed by their numbers as sent and counted in
// SkippedCount; only the others are written.
func TestBulkSkipsMissingPlaceholders(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tid := f.template(t, messaging.Template{Channel: messaging.ChannelSMS, Name: "visit", Content: "{{greeting}} {{name}}, see you in {{city}}"})
	res, err := f.svc.SendBulk(ctx, f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tid,
		Recipients: missingRecipients(), Placeholders: map[string]string{"greeting": "Hello"}, Missing: campaign.SkipMissing})
	require.NoError(t, err)
	require.Equal(t, []campaign.MissingPlaceholder{{Name: "name", Recipients: 1}, {Name: "city", Recipients: 2}}, res.MissingPlaceholders)
	require.Equal(t, []string{"+447700900002", "+447700900003"}, res.MissingPlaceholderPhoneNumbers, "as sent, with the +")
	require.Equal(t, []string{"12"}, res.InvalidPhoneNumbers)
	require.Equal(t, 2, res.MessageCount)
	require.Equal(t, 3, res.SkippedCount)
	require.Equal(t, 2, res.Campaign.Planned)
	require.NoError(t, f.svc.Wait(ctx))
	ms, total, err := f.svc.ListMessages(ctx, f.company, messaging.MessageFilter{CampaignID: res.Campaign.ID})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	got := map[string]string{}
	for _, m := range ms {
		got[m.Phone] = m.Content
	}
	require.Equal(t, map[string]string{"447700900001": "Hello Ann, see you in Leeds", "447700900005": "Hello , see you in York"}, got)

	// Nobody left: Invalid on the placeholder most recipients lack.
	_, err = f.svc.SendBulk(ctx, f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tid,
		Recipients: missingRecipients()[1:3], Placeholders: map[string]string{"greeting": "Hello"}, Missing: campaign.SkipMissing})
	requireInvalid(t, err, "placeholders.city")
}

// TestAddMessageMissingPlaceholders: an add-message names the placeholders
// it has no value for and keeps them as written; with SkipMissing it is
// Invalid on the first and nothing is queued.
func TestAddMessageMissingPlaceholders(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	a, err := f.svc.AddMessageTo(ctx, f.company, messaging.ChannelSMS, f.txn, campaign.Recipient{Phone: "+447700900001"}, campaign.KeepMissing)
	require.NoError(t, err)
	require.Equal(t, []campaign.MissingPlaceholder{{Name: "name", Recipients: 1}}, a.MissingPlaceholders)
	require.Equal(t, "Hi {{name}}", a.Message.Content)

	a, err = f.svc.AddMessageTo(ctx, f.company, messaging.ChannelSMS, f.txn,
		campaign.Recipient{Phone: "+447700900002", Placeholders: campaign.PlaceholdersOf(map[string]string{"name": "Ann"})}, campaign.SkipMissing)
	require.NoError(t, err)
	require.Equal(t, []campaign.MissingPlaceholder{}, a.MissingPlaceholders)
	require.Equal(t, "Hi Ann", a.Message.Content)

	_, err = f.svc.AddMessageTo(ctx, f.company, messaging.ChannelSMS, f.txn, campaign.Recipient{Phone: "+447700900003"}, campaign.SkipMissing)
	requireInvalid(t, err, "placeholders.name")
	ms, _, err := f.svc.ListMessages(ctx, f.company, messaging.MessageFilter{Phone: "+447700900003"})
	require.NoError(t, err)
	require.Empty(t, ms, "nothing queued")
}

// TestParseMissingPolicy: keep (the default) and skip, nothing else.
func TestParseMissingPolicy(t *testing.T) {
	for in, want := range map[string]campaign.MissingPolicy{"": campaign.KeepMissing, "keep": campaign.KeepMissing, "skip": campaign.SkipMissing} {
		got, err := campaign.ParseMissingPolicy(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"Skip", "drop", " keep"} {
		_, err := campaign.ParseMissingPolicy(in)
		requireInvalid(t, err, "missingPlaceholders")
	}
}
