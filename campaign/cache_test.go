package campaign_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

func TestCachedTemplateForgottenOnChange(t *testing.T) {
	f := newAdmitFixture(t, 1000)
	close(f.store.release)
	ctx := t.Context()
	company, camp := f.campaign(t, "Acme")
	add := func() (messaging.Message, error) {
		return f.svc.AddMessage(ctx, company, messaging.ChannelSMS, camp, campaign.Recipient{Phone: "+447700900123", Placeholders: campaign.PlaceholdersOf(map[string]string{"code": "42"})})
	}
	m, err := add()
	require.NoError(t, err)
	require.Equal(t, "Code 42", m.Content)

	c, err := f.svc.GetCampaign(ctx, company, camp)
	require.NoError(t, err)
	tpl, err := f.svc.GetTemplate(ctx, company, c.TemplateID)
	require.NoError(t, err)
	tpl.Content = "Your code: {{code}}"
	_, err = f.svc.UpdateTemplate(ctx, company, tpl.ID, tpl)
	require.NoError(t, err)
	m, err = add()
	require.NoError(t, err)
	require.Equal(t, "Your code: 42", m.Content)

	require.NoError(t, f.svc.DeleteTemplate(ctx, company, tpl.ID))
	_, err = add()
	require.True(t, messaging.IsCode(err, messaging.Invalid), "%v", err)
}
