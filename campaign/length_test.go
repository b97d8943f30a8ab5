package campaign_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// TestBulkSkipsMessagesTooLong: bulk recipients whose message would
// exceed the template's limits once rendered are skipped and reported by
// their numbers as sent, beside the invalid ones; the others are written.
func TestBulkSkipsMessagesTooLong(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tid := f.template(t, messaging.Template{Channel: messaging.ChannelSMS, Name: "x320", Content: strings.Repeat("{{x}}", 320)})
	rs := []campaign.Recipient{
		{Phone: "+447700900001", Placeholders: campaign.PlaceholdersOf(map[string]string{"x": strings.Repeat("a", 100)})}, // 32,000 characters
		{Phone: "+447700900002", Placeholders: campaign.PlaceholdersOf(map[string]string{"x": "abcde"})},                  // 1,600: fits
		{Phone: "12"}, // invalid number
		{Phone: "+447700900004", Placeholders: campaign.PlaceholdersOf(map[string]string{"x": "abcdef"})}, // 1,920
		{Phone: "+447700900005"}, // request value: 1,280
	}
	res, err := f.svc.SendBulk(ctx, f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tid, Recipients: rs, Placeholders: map[string]string{"x": "abcd"}})
	require.NoError(t, err)
	require.Equal(t, 2, res.MessageCount)
	require.Equal(t, 3, res.SkippedCount)
	require.Equal(t, []string{"12"}, res.InvalidPhoneNumbers)
	require.Equal(t, []string{"+447700900001", "+447700900004"}, res.ContentTooLong, "as sent, with the +")
	require.Equal(t, 2, res.Campaign.Planned)
	require.NoError(t, f.svc.Wait(ctx))
	c, err := f.svc.GetCampaign(ctx, f.company, res.Campaign.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.CampaignReady, c.Status)
	for phone, want := range map[string]string{"+447700900002": strings.Repeat("abcde", 320), "+447700900005": strings.Repeat("abcd", 320)} {
		ms, _, err := f.svc.ListMessages(ctx, f.company, messaging.MessageFilter{Phone: phone})
		require.NoError(t, err)
		require.Len(t, ms, 1)
		require.Equal(t, want, ms[0].Content)
	}
	ms, _, err := f.svc.ListMessages(ctx, f.company, messaging.MessageFilter{Phone: "+447700900001"})
	require.NoError(t, err)
	require.Empty(t, ms)
}

// TestMessagesTooLongAreRefused: the sends that cannot skip a recipient
// refuse the request on the value at fault.
func TestMessagesTooLongAreRefused(t *testing.T) {
	long := strings.Repeat("é", 1600)
	cases := []struct {
		name  string
		field string
		run   func(t *testing.T, f *fixture) error
	}{
		{"add-message", "placeholders.name", func(t *testing.T, f *fixture) error {
			_, err := f.svc.AddMessage(t.Context(), f.company, messaging.ChannelSMS, f.txn,
				campaign.Recipient{Phone: "+447700900001", Placeholders: campaign.PlaceholdersOf(map[string]string{"name": long})})
			return err
		}},
		{"add-message chat content over 1000", "placeholders.name", func(t *testing.T, f *fixture) error {
			c, err := f.svc.CreateTransactional(t.Context(), f.company, messaging.ChannelChat, campaign.NewCampaign{Name: "c", TemplateID: f.chatTmpl})
			require.NoError(t, err)
			_, err = f.svc.AddMessage(t.Context(), f.company, messaging.ChannelChat, c.ID,
				campaign.Recipient{Phone: "+447700900001", Placeholders: campaign.PlaceholdersOf(map[string]string{"name": long[:2*998]})})
			return err
		}},
		{"bulk, every recipient too long", "recipients[1].placeholders.name", func(t *testing.T, f *fixture) error {
			rs := recipients(3)
			rs[0].Phone = "1" // invalid: not counted as too long
			rs[1].Placeholders = campaign.PlaceholdersOf(map[string]string{"name": long})
			rs[2].Placeholders = campaign.PlaceholdersOf(map[string]string{"name": long + long})
			_, err := f.svc.SendBulk(t.Context(), f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: f.smsTmpl, Recipients: rs})
			return err
		}},
		{"bulk, request value too long for every recipient", "placeholders.name", func(t *testing.T, f *fixture) error {
			_, err := f.svc.SendBulk(t.Context(), f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: f.smsTmpl, Recipients: recipients(50), Placeholders: map[string]string{"name": long}})
			return err
		}},
		{"bulk chat, fallback too long", "placeholders.name", func(t *testing.T, f *fixture) error {
			// 990 characters fit the chat content (1000), not the fallback
			// "SMS: Hi " + 1600.
			_, err := f.svc.SendBulk(t.Context(), f.company, campaign.BulkSend{Channel: messaging.ChannelChat, TemplateID: f.chatTmpl, Recipients: recipients(2), Placeholders: map[string]string{"name": long[:2*1595]}})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			requireInvalid(t, tc.run(t, f), tc.field)
			require.NoError(t, f.svc.Wait(t.Context()))
			_, total, err := f.svc.ListCampaigns(t.Context(), f.company, messaging.CampaignFilter{})
			require.NoError(t, err)
			require.LessOrEqual(t, total, 2, "no bulk campaign created")
			ms, _, err := f.svc.ListMessages(t.Context(), f.company, messaging.MessageFilter{Phone: "+447700900001"})
			require.NoError(t, err)
			require.Empty(t, ms, "nothing stored")
		})
	}
}

// TestHostileRequestCostsNoLargeAllocation: a 1 MB request-level value in
// a template that uses it 320 times (a 320 MB message per recipient if
// rendered) and 1,000 recipients carrying 1 KB values each is refused
// while allocating a small fraction of the request's own size.
func TestHostileRequestCostsNoLargeAllocation(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	tid := f.template(t, messaging.Template{Channel: messaging.ChannelSMS, Name: "x320", Content: strings.Repeat("{{x}}", 320)})
	huge := map[string]string{"x": strings.Repeat("a", 1<<20)}
	rs := recipients(1000)
	kb := strings.Repeat("b", 1<<10)
	for i := range rs[1:] {
		rs[i+1].Placeholders = campaign.PlaceholdersOf(map[string]string{"x": kb})
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := f.svc.SendBulk(ctx, f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: tid, Recipients: rs, Placeholders: huge})
	require.NoError(t, f.svc.Wait(ctx))
	runtime.ReadMemStats(&after)
	requireInvalid(t, err, "placeholders.x")
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(512<<10), "bytes allocated while refusing a 2 MB request")
	t.Logf("allocated %d bytes", allocated)
}
