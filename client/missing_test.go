package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
)

// TestMissingPlaceholders: a bulk send reports the placeholders some
// recipients lack and, with MissingSkip, the numbers left out; an
// add-message names what it lacks; a cancelled campaign carries
// CancelledAt in lists.
func TestMissingPlaceholders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	tpl := e.smsTemplate("visit", "Hi {{name}}, see you in {{city}}")
	send := client.BulkSend{TemplateID: tpl.ID, Placeholders: map[string]string{"city": "Leeds"}, Recipients: []client.Recipient{
		{PhoneNumber: phone(1), Placeholders: map[string]string{"name": "Ann"}}, {PhoneNumber: phone(2)}}}
	r, err := e.c.SendSMSPromotional(ctx, send)
	require.NoError(t, err)
	require.Equal(t, []client.MissingPlaceholder{{Name: "name", Recipients: 1}}, r.MissingPlaceholders)
	require.Empty(t, r.MissingPlaceholderPhoneNumbers)
	require.Equal(t, 2, r.MessageCount)

	send.MissingPlaceholders = client.MissingSkip
	r, err = e.c.SendSMSPromotional(ctx, send)
	require.NoError(t, err)
	require.Equal(t, []string{phone(2)}, r.MissingPlaceholderPhoneNumbers)
	require.Equal(t, 1, r.MessageCount)
	require.Equal(t, 1, r.SkippedCount)
	send.MissingPlaceholders = "drop"
	_, err = e.c.SendSMSPromotional(ctx, send)
	invalid(t, err, "missingPlaceholders")

	tx, err := e.c.CreateSMSCampaign(ctx, client.CampaignInput{Name: "tx", TemplateID: tpl.ID})
	require.NoError(t, err)
	q, err := e.c.AddSMSMessage(ctx, tx.CampaignID, client.MessageInput{PhoneNumber: phone(3), Placeholders: map[string]string{"name": "Bo"}})
	require.NoError(t, err)
	require.Equal(t, []client.MissingPlaceholder{{Name: "city", Recipients: 1}}, q.MissingPlaceholders)
	_, err = e.c.AddSMSMessage(ctx, tx.CampaignID, client.MessageInput{PhoneNumber: phone(3), MissingPlaceholders: client.MissingSkip})
	invalid(t, err, "placeholders.name")

	e.waitStatus(r.CampaignID, client.CampaignReady)
	_, err = e.c.CancelCampaign(ctx, r.CampaignID)
	require.NoError(t, err)
	list, err := e.c.ListCampaigns(ctx, client.CampaignListOptions{})
	require.NoError(t, err)
	found := false
	for _, c := range list.Items {
		if c.CampaignID == r.CampaignID {
			found = true
			require.Equal(t, client.CampaignCompleted, c.Status)
			require.False(t, c.CancelledAt.IsZero(), "cancelledAt in the list")
		}
	}
	require.True(t, found)
}
