package server_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/server"
)

// contract checks exchanges against the OpenAPI document and records which
// operation answered which status.
type contract struct {
	doc    *openapi3.T
	router routers.Router

	mu   sync.Mutex
	seen map[string]map[int]bool // operationId -> statuses
}

func loadContract(t testing.TB) *contract {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(server.OpenAPI())
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	return &contract{doc: doc, router: router, seen: map[string]map[int]bool{}}
}

// credentialsPresent is the authentication check of request validation:
// the API key in X-API-Key, or the admin token as a bearer token.
func credentialsPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header
	switch in.SecuritySchemeName {
	case "ApiKey":
		if h.Get("X-API-Key") == "" {
			return errors.New("X-API-Key missing")
		}
	case "AdminToken":
		const scheme = "bearer "
		a := h.Get("Authorization")
		if len(a) <= len(scheme) || !strings.EqualFold(a[:len(scheme)], scheme) {
			return errors.New("Authorization: Bearer missing")
		}
	default:
		return errors.New("unknown security scheme " + in.SecuritySchemeName)
	}
	return nil
}

// check validates one exchange. Exchanges outside /api/v1 and /admin/v1
// and those the document has no operation for (unknown routes, wrong
// methods, which the server answers 404 and 405) are not checked.
func (c *contract) check(t testing.TB, req *http.Request, res response) {
	t.Helper()
	if !strings.HasPrefix(req.URL.Path, "/api/v1/") && !strings.HasPrefix(req.URL.Path, "/admin/v1/") &&
		req.URL.Path != "/healthz" && req.URL.Path != "/readyz" {
		return
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		allowed := []int{http.StatusNotFound, http.StatusMethodNotAllowed}
		if strings.HasPrefix(req.URL.Path, "/admin/v1/") {
			allowed = append(allowed, http.StatusUnauthorized) // the token is checked before the route
		}
		require.Contains(t, allowed, res.Code,
			"%s %s has no documented operation but answered %d", req.Method, req.URL.Path, res.Code)
		return
	}
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: credentialsPresent}}
	if res.Code < 400 {
		require.NoError(t, openapi3filter.ValidateRequest(ctx, in), "request %s %s", req.Method, req.URL)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: res.Code, Header: res.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(res.Body)
	require.NoError(t, openapi3filter.ValidateResponse(ctx, out), "response of %s %s: %d %s", req.Method, req.URL, res.Code, res.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	id := route.Operation.OperationID
	if c.seen[id] == nil {
		c.seen[id] = map[int]bool{}
	}
	c.seen[id][res.Code] = true
}

// operations lists the document's operation ids.
func (c *contract) operations() []string {
	var ids []string
	for _, item := range c.doc.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, op.OperationID)
		}
	}
	sort.Strings(ids)
	return ids
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", "/api/v1/openapi.json", nil, noKey())
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.True(t, bytes.Equal(server.OpenAPI(), r.Body))
	doc := r.obj()
	require.Equal(t, "3.1.0", doc["openapi"])
}

func TestOpenAPIDocumentDescribesTheAPI(t *testing.T) {
	c := loadContract(t)
	require.True(t, c.doc.IsOpenAPI31OrLater())
	want := map[string][]string{
		"/api/v1/templates/sms":                                      {"POST"},
		"/api/v1/templates/chat":                                     {"POST"},
		"/api/v1/templates/preview":                                  {"POST"},
		"/api/v1/templates":                                          {"GET"},
		"/api/v1/templates/{id}":                                     {"DELETE", "GET", "PUT"},
		"/api/v1/sms/campaigns":                                      {"POST"},
		"/api/v1/chat/campaigns":                                     {"POST"},
		"/api/v1/sms/campaigns/{id}/messages":                        {"POST"},
		"/api/v1/chat/campaigns/{id}/messages":                       {"POST"},
		"/api/v1/sms/promotional":                                    {"POST"},
		"/api/v1/chat/send":                                          {"POST"},
		"/api/v1/sms/send":                                           {"POST"},
		"/api/v1/chat/send-text":                                     {"POST"},
		"/api/v1/campaigns":                                          {"GET"},
		"/api/v1/campaigns/{id}":                                     {"GET"},
		"/api/v1/campaigns/{id}/start":                               {"POST"},
		"/api/v1/campaigns/{id}/pause":                               {"POST"},
		"/api/v1/campaigns/{id}/resume":                              {"POST"},
		"/api/v1/campaigns/{id}/cancel":                              {"POST"},
		"/api/v1/campaigns/{id}/messages.csv":                        {"GET"},
		"/api/v1/messages":                                           {"GET"},
		"/api/v1/messages/{id}":                                      {"GET"},
		"/api/v1/summary":                                            {"GET"},
		"/api/v1/survey-results":                                     {"GET"},
		"/api/v1/survey-results/{campaignId}/summary":                {"GET"},
		"/api/v1/chat-services":                                      {"GET"},
		"/api/v1/sms-senders":                                        {"GET"},
		"/api/v1/inbound":                                            {"GET"},
		"/api/v1/opt-outs":                                           {"GET", "POST"},
		"/api/v1/opt-outs/keywords":                                  {"GET", "PUT"},
		"/api/v1/opt-outs/{phoneNumber}":                             {"DELETE"},
		"/api/v1/webhooks":                                           {"GET", "POST"},
		"/api/v1/webhooks/{id}":                                      {"DELETE", "GET"},
		"/api/v1/webhooks/{id}/rotate-secret":                        {"POST"},
		"/api/v1/webhooks/{id}/deliveries":                           {"GET"},
		"/api/v1/webhooks/{id}/deliveries/{eventId}/redeliver":       {"POST"},
		"/api/v1/openapi.json":                                       {"GET"},
		"/healthz":                                                   {"GET"},
		"/readyz":                                                    {"GET"},
		"/admin/v1/companies":                                        {"GET", "POST"},
		"/admin/v1/companies/{id}":                                   {"GET"},
		"/admin/v1/companies/{id}/rate-limit":                        {"PUT"},
		"/admin/v1/companies/{id}/activate":                          {"POST"},
		"/admin/v1/companies/{id}/deactivate":                        {"POST"},
		"/admin/v1/companies/{id}/api-keys":                          {"GET", "POST"},
		"/admin/v1/companies/{id}/api-keys/{keyId}":                  {"DELETE"},
		"/admin/v1/companies/{id}/sms-senders":                       {"GET", "POST"},
		"/admin/v1/companies/{id}/sms-senders/{smsSenderId}/approve": {"POST"},
		"/admin/v1/sms-senders/{smsSenderId}/approve":                {"POST"},
		"/admin/v1/companies/{id}/chat-services":                     {"GET", "POST"},
		"/admin/v1/companies/{id}/chat-services/{chatServiceId}":     {"GET", "PUT"},
		"/admin/v1/smpp-connectors":                                  {"GET", "POST"},
		"/admin/v1/smpp-connectors/{name}":                           {"DELETE", "GET", "PUT"},
		"/admin/v1/routes":                                           {"GET", "POST"},
		"/admin/v1/routes/{id}":                                      {"DELETE", "PUT"},
		"/admin/v1/whoami":                                           {"GET"},
		"/admin/v1/summary":                                          {"GET"},
	}
	got := map[string][]string{}
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			got[path] = append(got[path], method)
			admin := strings.HasPrefix(path, "/admin/v1/")
			if !admin && (!strings.HasPrefix(path, "/api/v1/") || path == "/api/v1/openapi.json") {
				require.NotNil(t, op.Security, "%s %s needs no key", method, path)
				require.Empty(t, *op.Security, "%s %s needs no key", method, path)
				continue
			}
			require.NotNil(t, op.Responses.Status(http.StatusUnauthorized), "%s %s documents 401", method, path)
			require.NotNil(t, op.Responses.Status(http.StatusServiceUnavailable), "%s %s documents 503", method, path)
			require.NotNil(t, op.Responses.Status(http.StatusInternalServerError), "%s %s documents 500", method, path)
			if admin {
				require.NotNil(t, op.Security, "%s %s needs the admin token", method, path)
				require.Equal(t, openapi3.SecurityRequirements{{"AdminToken": []string{}}}, *op.Security, "%s %s needs the admin token", method, path)
				require.Equal(t, []string{"Admin"}, op.Tags, "%s %s", method, path)
				continue
			}
			if op.Security != nil {
				require.NotEmpty(t, *op.Security, "%s %s needs the API key", method, path)
				for _, req := range *op.Security {
					require.NotContains(t, req, "AdminToken", "%s %s takes the API key", method, path)
				}
			}
		}
		sort.Strings(got[path])
	}
	require.Equal(t, want, got)
	require.NotNil(t, c.doc.Components.SecuritySchemes["ApiKey"])
	require.Equal(t, "X-API-Key", c.doc.Components.SecuritySchemes["ApiKey"].Value.Name)
	require.Len(t, c.doc.Security, 1)
	require.NotNil(t, c.doc.Components.SecuritySchemes["AdminToken"])
	require.Equal(t, "http", c.doc.Components.SecuritySchemes["AdminToken"].Value.Type)
	require.Equal(t, "bearer", c.doc.Components.SecuritySchemes["AdminToken"].Value.Scheme)
	tooMany := c.doc.Components.Responses["TooManyRequests"].Value
	require.True(t, tooMany.Headers["Retry-After"].Value.Required)
}

// TestContractTour exercises every operation of the document through the
// server, with its success and its main errors, every exchange validated
// against the document; at the end every operation must have answered a
// success.
func TestContractTour(t *testing.T) {
	e := newEnv(t, withLimits(campaignLimits(5, 3)))
	other := e.newCompany(t, "Other")
	otherTemplate := e.smsTemplate("theirs", "x", withKey(other.key))
	missing := "0190f5c0-0000-7000-8000-000000000000"

	sms := e.smsTemplate("sms", "Hi {{name}}")
	chat := e.chatTemplate("chat", "Hello {{name}}", map[string]any{
		"smsFallbackEnabled": true, "smsFallbackTemplateContent": "Hi {{name}}", "smsFallbackSenderId": e.sender})
	survey := e.chatTemplate("survey", "Pick one", map[string]any{"messageType": "Survey",
		"typeSpecificConfig": map[string]any{"options": []map[string]string{{"optionText": "Yes", "optionValue": "y"}, {"optionText": "No", "optionValue": "n"}}}})

	e.do("POST", "/api/v1/templates/preview", map[string]any{"templateContent": "Hi {{name}} €", "placeholders": map[string]any{"name": "Ada"}})
	e.do("POST", "/api/v1/templates/preview", map[string]any{"placeholders": map[string]any{"name": "Ada"}})
	e.do("GET", "/api/v1/templates?page=1&pageSize=2", nil)
	e.do("GET", "/api/v1/templates?pageSize=101", nil)
	e.do("GET", "/api/v1/templates/"+sms, nil)
	e.do("GET", "/api/v1/templates/"+chat, nil)
	e.do("GET", "/api/v1/templates/"+otherTemplate, nil)
	e.do("GET", "/api/v1/templates/not-a-uuid", nil)
	e.do("PUT", "/api/v1/templates/"+sms, map[string]any{"name": "sms", "templateContent": "Hey {{name}}", "smsSenderId": e.sender})
	e.do("PUT", "/api/v1/templates/"+chat, map[string]any{"name": "chat", "messageType": 1, "chatServiceId": e.chat, "templateContent": "Yo"})
	e.do("PUT", "/api/v1/templates/"+missing, map[string]any{"name": "x"})
	e.do("POST", "/api/v1/templates/sms", map[string]any{"name": "sms", "templateContent": "dup"})
	e.do("POST", "/api/v1/templates/chat", `{"name": "broken"`)
	gone := e.smsTemplate("gone", "bye")
	e.do("DELETE", "/api/v1/templates/"+gone, nil)
	e.do("DELETE", "/api/v1/templates/"+gone, nil)

	smsTx := e.transactional("sms", sms)
	chatTx := e.transactional("chat", chat)
	e.do("POST", "/api/v1/sms/campaigns", map[string]any{"name": "x", "templateId": chat})
	e.do("POST", "/api/v1/chat/campaigns", map[string]any{"name": "x", "templateId": missing})
	e.do("POST", "/api/v1/sms/campaigns/"+smsTx+"/messages", map[string]any{"phoneNumber": phone(1), "placeholders": map[string]any{"name": "Ada"}})
	e.do("POST", "/api/v1/chat/campaigns/"+chatTx+"/messages", map[string]any{"phoneNumber": phone(2), "externalUserId": "u2"})
	e.do("POST", "/api/v1/chat/campaigns/"+smsTx+"/messages", map[string]any{"phoneNumber": phone(2)})
	e.do("POST", "/api/v1/sms/campaigns/"+missing+"/messages", map[string]any{"phoneNumber": phone(2)})

	bulk := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": append(recipients(2), map[string]any{"phoneNumber": "12"})}).obj()["campaignId"].(string)
	e.do("POST", "/api/v1/chat/send", map[string]any{"templateId": survey, "recipients": recipients(1), "placeholders": map[string]any{"name": "all"}})
	e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(6)})
	e.do("POST", "/api/v1/chat/send", map[string]any{"templateId": sms, "recipients": recipients(1)})
	e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": missing, "recipients": recipients(1)})
	e.wait()
	e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(3)}) // 429: 2 + 1 + 2 pending
	e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "hi", "smsSenderId": 999, "recipients": recipients(1)})
	e.do("POST", "/api/v1/chat/send-text", map[string]any{"messageContent": "hi", "chatServiceId": 999, "recipients": recipients(1)})

	e.do("GET", "/api/v1/campaigns?sendingMode=Bulk", nil)
	e.do("GET", "/api/v1/campaigns?sendingMode=Nope", nil)
	e.do("GET", "/api/v1/campaigns/"+bulk, nil)
	e.do("GET", "/api/v1/campaigns/"+chatTx, nil)
	e.do("GET", "/api/v1/campaigns/"+missing, nil)
	e.do("POST", "/api/v1/campaigns/"+bulk+"/start", nil)
	e.do("POST", "/api/v1/campaigns/"+bulk+"/start", nil)
	e.do("POST", "/api/v1/campaigns/"+missing+"/start", nil)

	direct := newEnv(t)
	direct.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "hi", "smsSenderId": direct.sender, "recipients": recipients(2)})
	direct.do("POST", "/api/v1/chat/send-text", map[string]any{"messageContent": "hi", "chatServiceId": direct.chat,
		"smsFallbackText": "hi", "smsFallbackSenderId": direct.sender, "recipients": []map[string]any{{"phoneNumber": phone(1), "externalUserId": "u1"}}})

	e.do("GET", "/api/v1/messages?phoneNumber="+strings.TrimPrefix(phone(1), "+")+"&startDate=2020-01-01&endDate=2999-12-31", nil)
	e.do("GET", "/api/v1/messages?externalUserId=u2&page=1&pageSize=5", nil)
	e.do("GET", "/api/v1/messages", nil)
	e.do("GET", "/api/v1/messages?phoneNumber=1&startDate=yesterday", nil)
	e.do("GET", "/api/v1/summary", nil)
	e.do("GET", "/api/v1/summary?since=yesterday", nil)

	surveyCampaign := e.lastCampaign(t)
	e.do("GET", "/api/v1/survey-results?campaignId="+surveyCampaign+"&selectedOptionIndex=0&startDate=2020-01-01", nil)
	e.do("GET", "/api/v1/survey-results?campaignId="+bulk, nil)
	e.do("GET", "/api/v1/survey-results", nil)
	e.do("GET", "/api/v1/survey-results?campaignId="+missing, nil)
	e.do("GET", "/api/v1/survey-results/"+surveyCampaign+"/summary", nil)
	e.do("GET", "/api/v1/survey-results/"+missing+"/summary", nil)
	e.do("GET", "/api/v1/chat-services", nil)
	e.do("GET", "/api/v1/sms-senders", nil)
	e.do("GET", "/api/v1/sms-senders", nil, noKey())
	e.do("GET", "/api/v1/sms-senders", nil, withKey("om_"+strings.Repeat("x", 32)))
	hooks := newEnv(t)
	hooks.inboundSMS(t, "447700900555", "ACME", "STOP")
	ctl := hooks.transactional("sms", hooks.smsTemplate("ctl", "Hi"))
	hooks.do("POST", "/api/v1/campaigns/"+ctl+"/pause", nil)
	hooks.do("POST", "/api/v1/campaigns/"+ctl+"/pause", nil)
	hooks.do("POST", "/api/v1/campaigns/"+ctl+"/resume", nil)
	hooks.do("POST", "/api/v1/campaigns/"+ctl+"/cancel", nil)
	hooks.do("POST", "/api/v1/campaigns/"+ctl+"/cancel", nil)
	hooks.do("POST", "/api/v1/campaigns/"+missing+"/cancel", nil)
	added := hooks.do("POST", "/api/v1/sms/campaigns/"+hooks.transactional("sms", hooks.smsTemplate("read", "Hi"))+"/messages",
		map[string]any{"phoneNumber": phone(9)}).obj()["messageId"].(string)
	hooks.do("GET", "/api/v1/messages/"+added, nil)
	hooks.do("GET", "/api/v1/campaigns/"+ctl+"/messages.csv", nil)
	hooks.do("GET", "/api/v1/messages/"+missing, nil)
	hooks.do("GET", "/api/v1/campaigns?status=Completed", nil)
	hooks.do("GET", "/api/v1/campaigns?status=Done", nil)
	hooks.do("GET", "/api/v1/inbound?phoneNumber=447700900555&page=1&pageSize=5", nil)
	hooks.do("GET", "/api/v1/inbound?phoneNumber=12", nil)
	hooks.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "+447700900556"})
	hooks.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "447700900556", "channel": "All"})
	hooks.do("POST", "/api/v1/opt-outs", map[string]any{"phoneNumber": "12", "channel": "Fax"})
	hooks.do("GET", "/api/v1/opt-outs?page=1&pageSize=5", nil)
	hooks.do("GET", "/api/v1/opt-outs?phoneNumber=12", nil)
	hooks.do("DELETE", "/api/v1/opt-outs/447700900556?channel=All", nil)
	hooks.do("DELETE", "/api/v1/opt-outs/447700900556", nil)
	hooks.do("DELETE", "/api/v1/opt-outs/nope", nil)
	hooks.do("GET", "/api/v1/opt-outs/keywords", nil)
	hooks.do("PUT", "/api/v1/opt-outs/keywords", map[string]any{"optOut": []string{"arret"}, "optIn": []string{"start"}})
	hooks.do("PUT", "/api/v1/opt-outs/keywords", map[string]any{"optOut": []string{"two words"}, "optIn": []string{}})
	hook := hooks.do("POST", "/api/v1/webhooks", map[string]any{"url": "https://hooks.example.com/herald", "events": []string{"message.status"}}).obj()["id"].(string)
	hooks.do("POST", "/api/v1/webhooks", map[string]any{"url": "http://hooks.example.com/herald", "events": []string{"message.sent"}})
	hooks.do("GET", "/api/v1/webhooks", nil)
	hooks.do("GET", "/api/v1/webhooks/"+hook, nil)
	hooks.do("GET", "/api/v1/webhooks/"+missing, nil)
	hooks.do("POST", "/api/v1/webhooks/"+hook+"/rotate-secret", nil)
	hooks.do("POST", "/api/v1/webhooks/"+missing+"/rotate-secret", nil)
	hooks.sentDirect(t, 1)
	log := hooks.do("GET", "/api/v1/webhooks/"+hook+"/deliveries?page=1&pageSize=5", nil).obj()["deliveries"].([]any)
	require.NotEmpty(t, log)
	hooks.do("GET", "/api/v1/webhooks/"+missing+"/deliveries", nil)
	hooks.do("POST", "/api/v1/webhooks/"+hook+"/deliveries/"+log[0].(map[string]any)["eventId"].(string)+"/redeliver", nil)
	hooks.do("POST", "/api/v1/webhooks/"+hook+"/deliveries/"+missing+"/redeliver", nil)
	hooks.do("DELETE", "/api/v1/webhooks/"+hook, nil)
	hooks.do("DELETE", "/api/v1/webhooks/"+hook, nil)
	ops := newEnv(t, func(c *envConfig) {
		c.tune = func(sc *server.Config) {
			sc.ConnectorStates = connectorStates{"eu-main": {Binds: 2, BindsUp: 1, WindowInUse: 3, Healthy: true, SubmitsPerSecond: 12.5,
				Submits: 40, Errors: 1, LastError: "throttled", LastErrorAt: time.Now()}}
		}
	})
	tour(t, ops, missing)
	e.do("GET", "/api/v1/openapi.json", nil, noKey())
	e.do("GET", "/healthz", nil, noKey())
	e.do("GET", "/readyz", nil, noKey())

	seen := map[string]map[int]bool{}
	for _, c := range []*contract{e.verify, direct.verify, hooks.verify, ops.verify} {
		for id, st := range c.seen {
			if seen[id] == nil {
				seen[id] = map[int]bool{}
			}
			for code := range st {
				seen[id][code] = true
			}
		}
	}
	var missed []string
	for _, id := range e.verify.operations() {
		ok := false
		for code := range seen[id] {
			ok = ok || code < 300
		}
		if !ok {
			missed = append(missed, id)
		}
	}
	require.Empty(t, missed, "operations never answered a success")
	var statuses []string
	for id, st := range seen {
		for code := range st {
			statuses = append(statuses, id+" "+strconv.Itoa(code))
		}
	}
	sort.Strings(statuses)
	for _, want := range []string{"smsPromotional 429", "smsPromotional 400", "smsPromotional 404", "getTemplate 404",
		"getTemplate 400", "listTemplates 400", "smsCreateCampaign 400", "chatCreateCampaign 404", "chatAddMessage 400",
		"smsAddMessage 404", "startCampaign 400", "startCampaign 404", "listMessages 400", "listSurveyResults 400",
		"listSurveyResults 404", "surveySummary 404", "listSmsSenders 401", "smsSend 400", "chatSendText 400",
		"createChatTemplate 400", "createSmsTemplate 400", "updateTemplate 404", "deleteTemplate 404", "listCampaigns 400",
		"createCompany 400", "createCompany 401", "activateCompany 400", "activateCompany 404", "deactivateCompany 404",
		"createCompanyApiKey 404", "registerSmsSender 400", "registerSmsSender 404", "approveCompanySmsSender 400",
		"approveCompanySmsSender 404", "approveSmsSender 400", "approveSmsSender 404", "addChatService 400", "addChatService 404",
		"createSmppConnector 400", "listSmppConnectors 401", "getSmppConnector 404", "updateSmppConnector 400",
		"updateSmppConnector 404", "deleteSmppConnector 404", "deleteSmppConnector 409", "createRoute 400", "listRoutes 401",
		"updateRoute 400", "updateRoute 404", "deleteRoute 400", "deleteRoute 404"} {
		require.Contains(t, statuses, want)
	}
}

// connectorStates is the live state of the connectors a process runs.
type connectorStates map[string]routing.State

func (c connectorStates) ConnectorState(name string) (routing.State, bool) {
	st, ok := c[name]
	return st, ok
}

// tour drives every operation of the admin API through e's server, with
// its success and its main errors; e's server runs the connector eu-main.
func tour(t *testing.T, e *env, missing string) {
	t.Helper()
	e.do("GET", "/admin/v1/whoami", nil, admin())
	e.do("GET", "/admin/v1/summary", nil, admin())
	company := e.do("POST", "/admin/v1/companies", map[string]any{"name": "Globex"}, admin()).obj()["id"].(string)
	e.do("POST", "/admin/v1/companies", map[string]any{"name": "x"})
	e.do("POST", "/admin/v1/companies", map[string]any{"name": "x"}, withHeader("Authorization", "Bearer nope"))
	e.do("POST", "/admin/v1/companies", `{"name":`, admin())
	e.do("POST", "/admin/v1/companies", map[string]any{"name": " "}, admin())
	e.do("GET", "/admin/v1/companies/"+company, nil, admin())
	e.do("GET", "/admin/v1/companies/"+missing, nil, admin())
	e.do("GET", "/admin/v1/companies/"+company, nil, withHeader("Authorization", "Bearer nope"))
	e.do("PUT", "/admin/v1/companies/"+company+"/rate-limit", map[string]any{"maxPerSecond": 25.5}, admin())
	e.do("PUT", "/admin/v1/companies/"+company+"/rate-limit", map[string]any{"maxPerSecond": -1}, admin())
	e.do("PUT", "/admin/v1/companies/"+company+"/rate-limit", map[string]any{}, admin())
	e.do("PUT", "/admin/v1/companies/"+missing+"/rate-limit", map[string]any{"maxPerSecond": 5}, admin())
	e.do("POST", "/admin/v1/companies/"+company+"/activate", nil, admin())
	e.do("POST", "/admin/v1/companies/"+missing+"/activate", nil, admin())
	e.do("POST", "/admin/v1/companies/x/activate", nil, admin())
	e.do("POST", "/admin/v1/companies/"+company+"/deactivate", nil, admin())
	e.do("POST", "/admin/v1/companies/"+missing+"/deactivate", nil, admin())
	e.do("POST", "/admin/v1/companies/"+company+"/api-keys", nil, admin())
	keyID := ftoa(e.do("POST", "/admin/v1/companies/"+company+"/api-keys", map[string]any{"name": "ci"}, admin()).obj()["id"].(float64))
	e.do("POST", "/admin/v1/companies/"+company+"/api-keys", map[string]any{"name": "bad\x01"}, admin())
	e.do("POST", "/admin/v1/companies/"+missing+"/api-keys", nil, admin())
	e.do("GET", "/admin/v1/companies/"+company+"/api-keys", nil, admin())
	e.do("GET", "/admin/v1/companies/"+missing+"/api-keys", nil, admin())
	e.do("DELETE", "/admin/v1/companies/"+company+"/api-keys/"+keyID, nil, admin())
	e.do("DELETE", "/admin/v1/companies/"+company+"/api-keys/"+keyID, nil, admin())
	e.do("DELETE", "/admin/v1/companies/"+company+"/api-keys/x", nil, admin())
	e.do("GET", "/admin/v1/companies?page=1&pageSize=2", nil, admin())
	e.do("GET", "/admin/v1/companies?pageSize=500", nil, admin())
	e.do("POST", "/admin/v1/companies", map[string]any{"name": " globex"}, admin())
	sender := ftoa(e.do("POST", "/admin/v1/companies/"+company+"/sms-senders", map[string]any{"senderId": "GLOBEX"}, admin()).obj()["id"].(float64))
	e.do("POST", "/admin/v1/companies/"+company+"/sms-senders", map[string]any{"senderId": "GLOBEX-1"}, admin())
	e.do("POST", "/admin/v1/companies/"+missing+"/sms-senders", map[string]any{"senderId": "GLOBEX"}, admin())
	e.do("POST", "/admin/v1/companies/"+company+"/sms-senders/"+sender+"/approve", nil, admin())
	e.do("POST", "/admin/v1/companies/"+company+"/sms-senders/"+ftoa(float64(e.sender))+"/approve", nil, admin())
	e.do("POST", "/admin/v1/companies/"+company+"/sms-senders/abc/approve", nil, admin())
	e.do("POST", "/admin/v1/sms-senders/"+sender+"/approve", nil, admin())
	e.do("POST", "/admin/v1/sms-senders/9999/approve", nil, admin())
	e.do("POST", "/admin/v1/sms-senders/0/approve", nil, admin())
	svc := e.do("POST", "/admin/v1/companies/"+company+"/chat-services", map[string]any{"brandName": "Globex", "providerServiceId": "pv-1",
		"provider": "herald", "channel": "viber", "baseUrl": "https://chat.example.com", "credentials": map[string]any{"token": "t"}}, admin())
	svcPath := "/admin/v1/companies/" + company + "/chat-services/" + ftoa(svc.obj()["id"].(float64))
	e.do("GET", svcPath, nil, admin())
	e.do("GET", "/admin/v1/companies/"+company+"/chat-services/9999", nil, admin())
	e.do("PUT", svcPath, map[string]any{"brandName": "Globex", "providerServiceId": "pv-2", "baseUrl": nil, "credentials": nil}, admin())
	e.do("PUT", svcPath, map[string]any{"brandName": "Globex", "providerServiceId": "pv-2", "provider": "nope"}, admin())
	e.do("POST", "/admin/v1/companies/"+company+"/chat-services", map[string]any{"brandName": "Globex"}, admin())
	e.do("POST", "/admin/v1/companies/"+missing+"/chat-services", map[string]any{"brandName": "Globex", "providerServiceId": "pv-1"}, admin())
	e.do("GET", "/admin/v1/companies/"+company+"/sms-senders", nil, admin())
	e.do("GET", "/admin/v1/companies/"+missing+"/sms-senders", nil, admin())
	e.do("GET", "/admin/v1/companies/"+company+"/chat-services", nil, admin())
	e.do("GET", "/admin/v1/companies/"+missing+"/chat-services", nil, admin())

	ca := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	e.do("POST", "/admin/v1/smpp-connectors", map[string]any{"name": "eu-main", "addr": "smsc.example.com:2775", "systemId": "herald",
		"password": "secret", "systemType": "cmt", "bindType": "transmitter", "binds": 4, "window": 50, "maxPerSecond": 500, "tls": true,
		"caCert": ca, "sourceTon": 5, "sourceNpi": 0, "destTon": 1, "destNpi": 1, "submitIdFormat": "hex", "receiptIdFormat": "decimal",
		"enquireLinkSeconds": 15}, admin())
	e.do("POST", "/admin/v1/smpp-connectors", map[string]any{"name": "backup", "addr": "10.0.0.2:2775"}, admin())
	e.do("POST", "/admin/v1/smpp-connectors", map[string]any{"name": "backup", "addr": "10.0.0.2:2775"}, admin())
	e.do("POST", "/admin/v1/smpp-connectors", map[string]any{"name": "x", "addr": "a:1", "bindType": "receiver"}, admin())
	e.do("GET", "/admin/v1/smpp-connectors", nil, admin())
	e.do("GET", "/admin/v1/smpp-connectors", nil)
	e.do("GET", "/admin/v1/smpp-connectors/eu-main", nil, admin())
	e.do("GET", "/admin/v1/smpp-connectors/backup", nil, admin())
	e.do("GET", "/admin/v1/smpp-connectors/nope", nil, admin())
	e.do("PUT", "/admin/v1/smpp-connectors/eu-main", map[string]any{"addr": "smsc2.example.com:2775", "binds": 8, "password": nil}, admin())
	e.do("PUT", "/admin/v1/smpp-connectors/eu-main", map[string]any{"addr": "nowhere"}, admin())
	e.do("PUT", "/admin/v1/smpp-connectors/nope", map[string]any{"addr": "a:1"}, admin())

	route := e.do("POST", "/admin/v1/routes", map[string]any{"position": 10, "prefixes": []string{"44"}, "companyIds": []string{company},
		"senderIds": []string{"GLOBEX"}, "strategy": "weighted",
		"connectors": []any{map[string]any{"name": "eu-main", "weight": 3}, map[string]any{"name": "backup"}}}, admin()).obj()["id"].(float64)
	e.do("POST", "/admin/v1/routes", map[string]any{"position": 100, "connectors": []any{map[string]any{"name": "default"}}}, admin())
	e.do("POST", "/admin/v1/routes", map[string]any{"connectors": []any{map[string]any{"name": "ghost"}}}, admin())
	e.do("GET", "/admin/v1/routes", nil, admin())
	e.do("GET", "/admin/v1/routes", nil, withHeader("Authorization", "Basic "+adminToken))
	e.do("PUT", "/admin/v1/routes/"+ftoa(route), map[string]any{"position": 200, "strategy": "round-robin",
		"connectors": []any{map[string]any{"name": "eu-main"}}}, admin())
	e.do("PUT", "/admin/v1/routes/"+ftoa(route), map[string]any{"strategy": "random", "connectors": []any{map[string]any{"name": "eu-main"}}}, admin())
	e.do("PUT", "/admin/v1/routes/9999", map[string]any{"connectors": []any{map[string]any{"name": "eu-main"}}}, admin())
	e.do("DELETE", "/admin/v1/smpp-connectors/eu-main", nil, admin())
	e.do("DELETE", "/admin/v1/routes/"+ftoa(route), nil, admin())
	e.do("DELETE", "/admin/v1/routes/"+ftoa(route), nil, admin())
	e.do("DELETE", "/admin/v1/routes/x", nil, admin())
	e.do("DELETE", "/admin/v1/smpp-connectors/eu-main", nil, admin())
	e.do("DELETE", "/admin/v1/smpp-connectors/eu-main", nil, admin())
}
