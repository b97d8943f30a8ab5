package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/heraldhq/herald/bench/internal/drive"
)

// maxRecipient bounds the recipient indexes: drive.BulkBodyFrom gives
// recipient i the number +4479 followed by i in eight digits.
const maxRecipient = 100_000_000

// surveyOptions are the answers of the survey campaign's template.
func surveyOptions() []string { return []string{"Yes", "No", "Later"} }

// planned is one campaign of the history: its company and its recipients
// (drive.BulkBodyFrom from first on, -recipients of them).
type planned struct {
	company int
	first   int
	survey  bool // the chat survey; the others are SMS
}

// layout is where the recipients of every campaign come from.
//
// Company k has an audience of the recipients [k*shift, k*shift+audience):
// neighbouring companies share half of theirs (shift is audience/2), as
// people are customers of several companies. History campaign i belongs to
// company i mod companies and is its j-th (j = i div companies); the j-th
// of m campaigns of a company takes the window of -recipients starting at
// j*(audience-recipients)/(m-1) of its audience, so that the windows are
// spread evenly over it and a number recurs in about m*recipients/audience
// of the company's campaigns. The default audience, m*recipients/2 (at
// least -recipients), puts each number in about two. History campaign 0
// is the chat survey; the bulks timed on the empty and on the full
// database go to company 0's first window, an audience it has sent to
// before.
type layout struct {
	recipients int
	audience   int
	shift      int
	companies  int
	campaigns  []planned
}

// newLayout checks the sizes o asks for and lays the campaigns out.
func newLayout(o options) (layout, error) {
	switch {
	case o.recipients < 100 || o.recipients > 200_000:
		return layout{}, fmt.Errorf("-recipients %d: want 100 to 200000 (one bulk request)", o.recipients)
	case o.companies < 1:
		return layout{}, fmt.Errorf("-companies %d: want at least 1", o.companies)
	case o.campaigns < o.companies:
		return layout{}, fmt.Errorf("-campaigns %d: want at least one per company (-companies %d)", o.campaigns, o.companies)
	}
	most := (o.campaigns + o.companies - 1) / o.companies
	l := layout{recipients: o.recipients, audience: o.audience, companies: o.companies}
	if l.audience == 0 {
		l.audience = max(o.recipients, most*o.recipients/2)
	}
	if l.audience < o.recipients {
		return layout{}, fmt.Errorf("-audience %d: want at least -recipients (%d)", l.audience, o.recipients)
	}
	l.shift = l.audience / 2
	if (o.companies-1)*l.shift+l.audience > maxRecipient {
		return layout{}, fmt.Errorf("%d companies of %d numbers need more than the %d numbers the bulks can address", o.companies, l.audience, maxRecipient)
	}
	for i := range o.campaigns {
		k, j := i%o.companies, i/o.companies
		m := o.campaigns / o.companies
		if k < o.campaigns%o.companies {
			m++
		}
		first := k * l.shift
		if m > 1 {
			first += j * (l.audience - o.recipients) / (m - 1)
		}
		l.campaigns = append(l.campaigns, planned{company: k, first: first, survey: i == 0})
	}
	return l, nil
}

// company is a tenant of the run: its API client (c.TemplateID is its SMS
// template) and, for company 0, its survey template.
type company struct {
	id       string
	client   *drive.Client
	surveyID string // a Survey chat template; company 0 only
}

// provision creates n active companies through the admin API, each with
// a key, an approved SMS sender and an SMS template, and gives the first
// a chat service and a Survey chat template. Each client talks to base.
func provision(ctx context.Context, base, adminToken string, hc *http.Client, n int) ([]*company, error) {
	admin := [2]string{"Authorization", "Bearer " + adminToken}
	out := make([]*company, n)
	for k := range out {
		c := &drive.Client{Base: base, HTTP: hc}
		id, err := c.NewCompany(ctx, adminToken)
		if err != nil {
			return nil, fmt.Errorf("company %d: %w", k, err)
		}
		co := &company{id: id, client: c}
		var sender struct {
			ID int64 `json:"id"`
		}
		if err := c.Do(ctx, "POST", "/admin/v1/companies/"+id+"/sms-senders", admin, []byte(`{"senderId":"SCALE"}`), http.StatusCreated, &sender); err != nil {
			return nil, fmt.Errorf("company %d: sender: %w", k, err)
		}
		if err := c.Do(ctx, "POST", fmt.Sprintf("/admin/v1/sms-senders/%d/approve", sender.ID), admin, nil, http.StatusOK, nil); err != nil {
			return nil, fmt.Errorf("company %d: approve the sender: %w", k, err)
		}
		var tpl struct {
			ID string `json:"id"`
		}
		err = c.API(ctx, "POST", "/templates/sms", map[string]any{
			"name": "scale", "templateContent": "Hello {{name}}, your code is {{code}}", "smsSenderId": sender.ID,
		}, http.StatusCreated, &tpl)
		if err != nil {
			return nil, fmt.Errorf("company %d: SMS template: %w", k, err)
		}
		c.TemplateID = tpl.ID
		if k == 0 {
			if co.surveyID, err = surveyTemplate(ctx, c, admin, id); err != nil {
				return nil, fmt.Errorf("company %d: %w", k, err)
			}
		}
		out[k] = co
	}
	return out, nil
}

// surveyTemplate gives company id a chat service and a Survey template
// with surveyOptions, and returns the template's id.
func surveyTemplate(ctx context.Context, c *drive.Client, admin [2]string, id string) (string, error) {
	var svc struct {
		ID int64 `json:"id"`
	}
	if err := c.Do(ctx, "POST", "/admin/v1/companies/"+id+"/chat-services", admin,
		[]byte(`{"brandName":"Scale","providerServiceId":"scale"}`), http.StatusCreated, &svc); err != nil {
		return "", fmt.Errorf("chat service: %w", err)
	}
	opts := make([]map[string]string, len(surveyOptions()))
	for i, o := range surveyOptions() {
		opts[i] = map[string]string{"optionText": o, "optionValue": fmt.Sprint(i)}
	}
	var tpl struct {
		ID string `json:"id"`
	}
	err := c.API(ctx, "POST", "/templates/chat", map[string]any{
		"name": "scale survey", "messageType": "Survey", "templateContent": "Will you come, {{name}}?",
		"chatServiceId": svc.ID, "typeSpecificConfig": map[string]any{"options": opts},
	}, http.StatusCreated, &tpl)
	if err != nil {
		return "", fmt.Errorf("survey template: %w", err)
	}
	if tpl.ID == "" {
		return "", errors.New("survey template: no id in the answer")
	}
	return tpl.ID, nil
}
