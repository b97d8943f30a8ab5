package storetest

import (
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// testWebhooks: endpoints round-trip, stay within their company, are
// listed oldest first, are limited in number per company (also when
// created at once), rotate their secret keeping the old one, and are
// deleted.
func testWebhooks(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	e1 := webhook.Endpoint{ID: f.id(), CompanyID: a.ID, URL: "https://hooks.example.com/a",
		Events: []webhook.EventType{webhook.MessageStatus, webhook.CampaignStatus}, Secret: "whsec_1", CreatedAt: at(1)}
	e2 := webhook.Endpoint{ID: f.id(), CompanyID: b.ID, URL: "https://hooks.example.com/b",
		Events: []webhook.EventType{webhook.OptOutChanged}, Secret: "whsec_2", CreatedAt: at(2)}
	e3 := webhook.Endpoint{ID: f.id(), CompanyID: a.ID, URL: "https://hooks.example.com/a2",
		Events: []webhook.EventType{webhook.SurveyAnswered}, Secret: "whsec_3", CreatedAt: at(3)}
	for _, e := range []*webhook.Endpoint{&e1, &e2, &e3} {
		require.NoError(t, f.s.CreateWebhook(f.ctx, e, 10))
	}

	got, err := f.s.GetWebhook(f.ctx, a.ID, e1.ID)
	require.NoError(t, err)
	requireSame(t, e1, got)
	_, err = f.s.GetWebhook(f.ctx, b.ID, e1.ID)
	requireNotFound(t, err, "another company's endpoint")
	_, err = f.s.GetWebhook(f.ctx, a.ID, f.id())
	requireNotFound(t, err)

	list, err := f.s.ListWebhooks(f.ctx, a.ID)
	require.NoError(t, err)
	requireSameList(t, []webhook.Endpoint{e1, e3}, list)
	list, err = f.s.ListWebhooks(f.ctx, f.id())
	require.NoError(t, err)
	require.Empty(t, list)

	// rotation: the new secret signs, the old one until the time given
	rotated, err := f.s.RotateWebhookSecret(f.ctx, a.ID, e1.ID, "whsec_1b", at(100))
	require.NoError(t, err)
	want := e1
	want.Secret, want.PreviousSecret, want.PreviousUntil = "whsec_1b", "whsec_1", at(100)
	requireSame(t, want, rotated)
	got, err = f.s.GetWebhook(f.ctx, a.ID, e1.ID)
	require.NoError(t, err)
	requireSame(t, want, got)
	_, err = f.s.RotateWebhookSecret(f.ctx, b.ID, e1.ID, "whsec_x", at(100))
	requireNotFound(t, err, "another company's endpoint")

	// deletion
	requireNotFound(t, f.s.DeleteWebhook(f.ctx, b.ID, e1.ID), "another company's endpoint")
	require.NoError(t, f.s.DeleteWebhook(f.ctx, a.ID, e1.ID))
	requireNotFound(t, f.s.DeleteWebhook(f.ctx, a.ID, e1.ID), "deleted twice")
	_, err = f.s.GetWebhook(f.ctx, a.ID, e1.ID)
	requireNotFound(t, err)
	list, err = f.s.ListWebhooks(f.ctx, a.ID)
	require.NoError(t, err)
	requireSameList(t, []webhook.Endpoint{e3}, list)

	// the limit holds for concurrent registrations: A has one, may have 4
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			e := webhook.Endpoint{ID: f.id(), CompanyID: a.ID, URL: "https://hooks.example.com/many",
				Events: []webhook.EventType{webhook.MessageStatus}, Secret: "whsec_m", CreatedAt: at(10 + i)}
			errs[i] = f.s.CreateWebhook(f.ctx, &e, 4)
		})
	}
	wg.Wait()
	refused := 0
	for _, err := range errs {
		if err != nil {
			requireCode(t, err, messaging.Invalid)
			refused++
		}
	}
	require.Equal(t, 5, refused)
	list, err = f.s.ListWebhooks(f.ctx, a.ID)
	require.NoError(t, err)
	require.Len(t, list, 4)
	list, err = f.s.ListWebhooks(f.ctx, b.ID)
	require.NoError(t, err)
	requireSameList(t, []webhook.Endpoint{e2}, list, "another company's limit is its own")
}
