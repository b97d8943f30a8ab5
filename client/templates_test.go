package client_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/client"
)

// TestNew: New checks its arguments; a base URL with /api/v1 works as the
// root does; a wrong key is a 401 decoded into a *client.Error.
func TestNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://host", "http://", "http://host/?q=1", "http://%zz"} {
		_, err := client.New(bad, "om_x")
		require.Error(t, err, "base URL %q", bad)
	}
	_, err := client.New(e.URL, "")
	require.Error(t, err, "an API key is required")

	for _, base := range []string{e.URL, e.URL + "/", e.URL + "/api/v1", e.URL + "/api/v1/"} {
		c, err := client.New(base, e.APIKey)
		require.NoError(t, err)
		senders, err := c.ListSMSSenders(e.ctx())
		require.NoError(t, err, "base %q", base)
		require.Equal(t, []client.SMSSender{{ID: e.SenderID, SenderID: "ACME"}}, senders)
	}

	c, err := client.New(e.URL, "om_00000000000000000000000000000000", client.WithRetries(0))
	require.NoError(t, err)
	_, err = c.ListSMSSenders(e.ctx())
	ae := apiError(t, err, http.StatusUnauthorized, "Unauthorized")
	require.Equal(t, "Invalid or revoked API key", ae.Message)
	require.True(t, client.IsUnauthorized(err))
	require.False(t, client.IsNotFound(err))
	require.Equal(t, http.MethodGet, ae.Method)
	require.Equal(t, "/api/v1/sms-senders", ae.Path)
	require.Equal(t, "herald: GET /api/v1/sms-senders: 401 Unauthorized: Invalid or revoked API key", ae.Error())
}

// TestUserAgent: requests carry the User-Agent of the option, else the
// default one, and the API key.
func TestUserAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var got []string
	var keys []string
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.Header.Get("User-Agent"))
		keys = append(keys, r.Header.Get("X-API-Key"))
		return e.transport(nil).RoundTrip(r)
	})}
	for _, opts := range [][]client.Option{{client.WithHTTPClient(hc)}, {client.WithHTTPClient(hc), client.WithUserAgent("acme-crm/2.1")}} {
		c, err := client.New(e.URL, e.APIKey, opts...)
		require.NoError(t, err)
		_, err = c.ListChatServices(e.ctx())
		require.NoError(t, err)
	}
	require.Equal(t, []string{client.DefaultUserAgent, "acme-crm/2.1"}, got)
	require.Equal(t, []string{e.APIKey, e.APIKey}, keys)
}

// TestTemplates: templates of both channels are created, read, listed,
// updated and deleted; each call's typical error is decoded.
func TestTemplates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := e.ctx()
	before := time.Now().Add(-time.Second)

	sms, err := e.c.CreateSMSTemplate(ctx, client.SMSTemplateInput{Name: "welcome", Description: "first contact",
		TemplateContent: "Hi {{name}}", SMSSenderID: e.SenderID, ValidityPeriod: 600})
	require.NoError(t, err)
	require.Len(t, sms.ID, 36)
	require.Equal(t, client.ChannelSMS, sms.ChannelType)
	require.Equal(t, client.TypeSimpleText, sms.MessageType)
	require.Equal(t, "welcome", sms.Name)
	require.Equal(t, "first contact", sms.Description)
	require.Equal(t, "Hi {{name}}", sms.TemplateContent)
	require.Equal(t, e.SenderID, sms.SMSSenderID)
	require.Equal(t, 600, sms.ValidityPeriod)
	require.True(t, sms.CreatedAt.After(before), "createdAt %v", sms.CreatedAt)
	require.Nil(t, sms.TypeSpecificConfig)

	_, err = e.c.CreateSMSTemplate(ctx, client.SMSTemplateInput{Name: "empty"})
	ae := invalid(t, err, "templateContent")
	require.Equal(t, ae.ValidationErrors["templateContent"], ae.Message, "one field: the message is the field's")
	require.True(t, client.IsBadRequest(err))
	_, err = e.c.CreateSMSTemplate(ctx, client.SMSTemplateInput{Name: "welcome", TemplateContent: "x"})
	invalid(t, err, "name")
	// A providerTemplate is for WhatsApp services; the env's is on Viber.
	_, err = e.c.CreateChatTemplate(ctx, client.ChatTemplateInput{Name: "wa", MessageType: client.TypeSimpleText,
		TemplateContent: "Order {{order}}", ChatServiceID: e.ChatServiceID, TypeSpecificConfig: &client.ChatConfig{
			ProviderTemplate: &client.ProviderTemplate{Name: "order_shipped", Language: "en", Parameters: []string{"{{order}}"}}}})
	invalid(t, err, "typeSpecificConfig.providerTemplate")

	survey, err := e.c.CreateChatTemplate(ctx, client.ChatTemplateInput{Name: "feedback", MessageType: client.TypeSurvey,
		TemplateContent: "How was it?", ChatServiceID: e.ChatServiceID,
		TypeSpecificConfig: &client.ChatConfig{Options: []client.SurveyOption{{OptionText: "Great", OptionValue: "great"}, {OptionText: "Poor", OptionValue: "poor"}}},
		SMSFallbackEnabled: true, SMSFallbackTemplateContent: "How was it? Reply GREAT or POOR", SMSFallbackSenderID: e.SenderID})
	require.NoError(t, err)
	require.Equal(t, client.ChannelChat, survey.ChannelType)
	require.Equal(t, client.TypeSurvey, survey.MessageType)
	require.Equal(t, e.ChatServiceID, survey.ChatServiceID)
	require.NotNil(t, survey.TypeSpecificConfig, "the configuration, answered as a string, is decoded")
	require.Equal(t, []client.SurveyOption{{OptionText: "Great", OptionValue: "great"}, {OptionText: "Poor", OptionValue: "poor"}}, survey.TypeSpecificConfig.Options)
	require.True(t, survey.SMSFallbackEnabled)
	require.Equal(t, e.SenderID, survey.SMSFallbackSenderID)
	require.Equal(t, "How was it? Reply GREAT or POOR", survey.SMSFallbackTemplateContent)

	_, err = e.c.CreateChatTemplate(ctx, client.ChatTemplateInput{Name: "poll", MessageType: client.TypeSurvey,
		TemplateContent: "Which?", ChatServiceID: e.ChatServiceID, TypeSpecificConfig: &client.ChatConfig{Options: []client.SurveyOption{{OptionText: "Only one", OptionValue: "one"}}}})
	invalid(t, err, "typeSpecificConfig.options")

	got, err := e.c.GetTemplate(ctx, survey.ID)
	require.NoError(t, err)
	require.Equal(t, survey, got)
	_, err = e.c.GetTemplate(ctx, "0190f5c0-0000-7000-8000-000000000000")
	apiError(t, err, http.StatusNotFound, "Not Found")
	require.True(t, client.IsNotFound(err))
	_, err = e.c.GetTemplate(ctx, "not-an-id")
	invalid(t, err, "id")

	up, err := e.c.UpdateTemplate(ctx, sms.ID, client.TemplateUpdate{Name: "welcome-2", TemplateContent: "Hello {{name}}", SMSSenderID: e.SenderID})
	require.NoError(t, err)
	require.Equal(t, "welcome-2", up.Name)
	require.Equal(t, "Hello {{name}}", up.TemplateContent)
	require.Equal(t, 0, up.ValidityPeriod, "the update replaces every field")
	require.False(t, up.UpdatedAt.Before(sms.UpdatedAt))
	_, err = e.c.UpdateTemplate(ctx, sms.ID, client.TemplateUpdate{Name: "", TemplateContent: "x"})
	invalid(t, err, "name")
	_, err = e.c.UpdateTemplate(ctx, "0190f5c0-0000-7000-8000-000000000000", client.TemplateUpdate{Name: "x", TemplateContent: "x"})
	apiError(t, err, http.StatusNotFound, "Not Found")

	page, err := e.c.ListTemplates(ctx, client.PageOptions{PageSize: 1})
	require.NoError(t, err)
	require.Equal(t, 2, page.TotalCount)
	require.Equal(t, 2, page.TotalPages)
	require.Equal(t, 1, page.Page)
	require.Equal(t, 1, page.PageSize)
	require.Equal(t, []string{survey.ID}, templateIDs(page.Items), "newest first")
	var ids []string
	for tpl, err := range e.c.AllTemplates(ctx, client.PageOptions{PageSize: 1}) {
		require.NoError(t, err)
		ids = append(ids, tpl.ID)
	}
	require.Equal(t, []string{survey.ID, sms.ID}, ids)
	_, err = e.c.ListTemplates(ctx, client.PageOptions{PageSize: 101})
	invalid(t, err, "pageSize")

	require.NoError(t, e.c.DeleteTemplate(ctx, sms.ID))
	err = e.c.DeleteTemplate(ctx, sms.ID)
	apiError(t, err, http.StatusNotFound, "Not Found")
	_, err = e.c.GetTemplate(ctx, sms.ID)
	require.True(t, client.IsNotFound(err))
}

// TestPreviewTemplate: an SMS text is rendered and measured; a text
// missing is a 400 on templateContent.
func TestPreviewTemplate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p, err := e.c.PreviewTemplate(e.ctx(), client.TemplatePreviewInput{TemplateContent: "Hi {{name}}, code {{code}}",
		Placeholders: map[string]string{"name": "Ada"}})
	require.NoError(t, err)
	require.Equal(t, "Hi Ada, code {{code}}", p.RenderedText)
	require.Equal(t, []string{"name", "code"}, p.Placeholders)
	require.Equal(t, []string{"code"}, p.MissingPlaceholders)
	require.Equal(t, "GSM-7", p.Encoding)
	require.Equal(t, len(p.RenderedText)+4, p.Characters, "braces are in the GSM-7 extension table: two septets each")
	require.Equal(t, 1, p.Segments)
	require.Equal(t, 160, p.CharactersPerSegment)
	require.Equal(t, 160-p.Characters, p.CharactersLeft)

	_, err = e.c.PreviewTemplate(e.ctx(), client.TemplatePreviewInput{TemplateContent: "bell \a"})
	invalid(t, err, "templateContent")
}

func templateIDs(ts []client.Template) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}
