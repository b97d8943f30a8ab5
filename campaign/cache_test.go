package campaign

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

func TestCachedKeyForgottenOnChange(t *testing.T) {
	f := newAdmitFixture(t, 1000)
	ctx := t.Context()
	company, _ := f.campaign(t, "Acme")
	key, err := f.svc.GenerateAPIKey(ctx, company)
	require.NoError(t, err)
	_, err = f.svc.Authenticate(ctx, key) // now cached
	require.NoError(t, err)

	require.NoError(t, f.svc.SetCompanyActive(ctx, company, false))
	_, err = f.svc.Authenticate(ctx, key)
	require.True(t, messaging.IsCode(err, messaging.Unavailable), "%v", err)
	require.NoError(t, f.svc.SetCompanyActive(ctx, company, true))
	_, err = f.svc.Authenticate(ctx, key)
	require.NoError(t, err)

	next, err := f.svc.GenerateAPIKey(ctx, company)
	require.NoError(t, err)
	_, err = f.svc.Authenticate(ctx, key)
	require.True(t, messaging.IsCode(err, messaging.Unauthorized), "the previous key still works: %v", err)
	c, err := f.svc.Authenticate(ctx, next)
	require.NoError(t, err)
	require.Equal(t, company, c.ID)
}

func TestCachedKeyOtherProcessWithinTTL(t *testing.T) {
	st := &gatedStore{Store: memstore.New(), entered: make(chan struct{}), release: make(chan struct{})}
	close(st.release)
	ctx := t.Context()
	setup := must(New(Config{Store: st, CacheTTL: -1}))
	t.Cleanup(setup.Close)
	company, err := setup.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	require.NoError(t, setup.SetCompanyActive(ctx, company.ID, true))
	key, err := setup.GenerateAPIKey(ctx, company.ID)
	require.NoError(t, err)

	// Two services on one store stand for two processes on one database.
	cached := must(New(Config{Store: st, CacheTTL: 50 * time.Millisecond}))
	t.Cleanup(cached.Close)
	uncached := must(New(Config{Store: st, CacheTTL: -1}))
	t.Cleanup(uncached.Close)
	_, err = cached.Authenticate(ctx, key)
	require.NoError(t, err)

	_, err = setup.GenerateAPIKey(ctx, company.ID) // revokes key elsewhere
	require.NoError(t, err)
	_, err = uncached.Authenticate(ctx, key)
	require.True(t, messaging.IsCode(err, messaging.Unauthorized), "%v", err)
	require.Eventually(t, func() bool {
		_, err := cached.Authenticate(ctx, key)
		return messaging.IsCode(err, messaging.Unauthorized)
	}, testWait, pollEvery, "the revocation never shows past the TTL")
}

func TestCachedTemplateForgottenOnChange(t *testing.T) {
	f := newAdmitFixture(t, 1000)
	close(f.store.release)
	ctx := t.Context()
	company, camp := f.campaign(t, "Acme")
	add := func() (messaging.Message, error) {
		return f.svc.AddMessage(ctx, company, messaging.ChannelSMS, camp, Recipient{Phone: "+447700900123", Placeholders: map[string]string{"code": "42"}})
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
