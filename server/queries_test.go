package server_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func withClock(c *clock) func(*envConfig) { return func(e *envConfig) { e.now = c.now } }

// messageIDs returns the ids of the company's messages to a number.
func (e *env) messageIDs(t *testing.T, phone string) []messaging.ID {
	t.Helper()
	p, _ := messaging.NormalizePhone(phone)
	ms, _, err := e.store.ListMessages(context.Background(), e.id, messaging.MessageFilter{Phone: p, PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
	require.NoError(t, err)
	ids := make([]messaging.ID, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// apply applies status updates as the dispatcher would.
func (e *env) apply(t *testing.T, ups ...delivery.StatusUpdate) {
	t.Helper()
	ok, err := e.store.ApplyUpdates(context.Background(), ups)
	require.NoError(t, err)
	for i := range ok {
		require.True(t, ok[i], "update %d applied", i)
	}
}

func TestMessagesQuery(t *testing.T) {
	clk := &clock{t: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)}
	e := newEnv(t, withClock(clk))
	tx := e.transactional("sms", e.smsTemplate("sms", "Hello"))
	add := func(p, user string) {
		t.Helper()
		r := e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": p, "externalUserId": user})
		require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	}
	add(phone(1), "u1")
	clk.t = clk.t.Add(24 * time.Hour) // 2024-05-02T10:00
	add(phone(1), "")
	add(phone(2), "u1")

	count := func(query string) float64 {
		t.Helper()
		r := e.do("GET", "/api/v1/messages?"+query, nil)
		require.Equal(t, http.StatusOK, r.Code, "%s: %s", query, r.Body)
		m := r.obj()
		requireKeys(t, m, "messages", "totalCount", "page", "pageSize", "totalPages")
		require.Len(t, m["messages"], int(min(m["totalCount"].(float64), m["pageSize"].(float64))))
		return m["totalCount"].(float64)
	}
	p1 := url.QueryEscape(phone(1))
	require.Equal(t, float64(2), count("phoneNumber="+p1))
	require.Equal(t, float64(2), count("phoneNumber="+phone(1)[1:]), "the number is normalised")
	require.Equal(t, float64(2), count("phoneNumber="+phone(1)), "an unencoded '+' arrives as a space and stands for '+'")
	require.Equal(t, float64(2), count("phoneNumber=%20"+phone(1)[1:]), "so does a leading space")
	require.Equal(t, float64(2), count("externalUserId=u1"))
	require.Equal(t, float64(1), count("phoneNumber="+p1+"&externalUserId=u1"))
	require.Equal(t, float64(1), count("phoneNumber="+p1+"&endDate=2024-05-01"), "a date endDate covers its whole day")
	require.Equal(t, float64(2), count("phoneNumber="+p1+"&endDate=2024-05-02"))
	require.Equal(t, float64(1), count("phoneNumber="+p1+"&startDate=2024-05-02"))
	require.Equal(t, float64(0), count("phoneNumber="+p1+"&startDate=2024-05-02T10:00:00.001Z"))
	require.Equal(t, float64(1), count("phoneNumber="+p1+"&startDate=2024-05-01T09:00:00Z&endDate="+url.QueryEscape("2024-05-01T12:00:00+02:00")))
	require.Equal(t, float64(0), count("phoneNumber="+p1+"&endDate=2024-04-30"))
	require.Equal(t, float64(0), count("phoneNumber=447700999999"))

	page := e.do("GET", "/api/v1/messages?phoneNumber="+p1+"&page=2&pageSize=1", nil).obj()
	require.Equal(t, float64(2), page["totalPages"])
	require.Equal(t, float64(2), page["page"])
	oldest := page["messages"].([]any)[0].(map[string]any)
	require.Equal(t, "2024-05-01T10:00:00.000Z", oldest["createdAt"], "newest first: page 2 holds the first message")
	require.Equal(t, "u1", oldest["externalUserId"])

	// Delivery moves show in the message and in the campaign counters.
	ids := e.messageIDs(t, phone(2))
	require.Len(t, ids, 1)
	sent := clk.t.Add(time.Second)
	e.apply(t, delivery.StatusUpdate{MessageID: ids[0], Status: messaging.StatusSending, At: sent},
		delivery.StatusUpdate{MessageID: ids[0], Status: messaging.StatusSent, At: sent, ProviderMessageID: "p1"},
		delivery.StatusUpdate{MessageID: ids[0], Status: messaging.StatusFailed, At: sent.Add(time.Second), Details: "UNDELIVERED", SMSErrorCode: "0x0B"})
	got := e.do("GET", "/api/v1/messages?phoneNumber="+url.QueryEscape(phone(2)), nil).obj()["messages"].([]any)[0].(map[string]any)
	requireKeys(t, got, messageKeys...)
	require.Equal(t, "Failed", got["status"])
	require.Equal(t, "UNDELIVERED", got["details"])
	require.Equal(t, "0x0B", got["smsErrorCode"])
	require.Equal(t, "2024-05-02T10:00:01.000Z", got["sentAt"])
	require.Nil(t, got["deliveredAt"])
	require.NotNil(t, got["updatedAt"])
	d := e.do("GET", "/api/v1/campaigns/"+tx, nil).obj()
	require.Equal(t, float64(3), d["totalMessages"])
	require.Equal(t, float64(1), d["failedCount"])
	require.Equal(t, float64(2), d["pendingCount"])
}

func TestCampaignList(t *testing.T) {
	e := newEnv(t)
	sms := e.smsTemplate("sms", "x")
	e.transactional("sms", sms)
	e.transactional("sms", sms)
	require.Equal(t, http.StatusAccepted, e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(2)}).Code)
	require.Equal(t, http.StatusAccepted, e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "x", "smsSenderId": e.sender, "recipients": recipients(1)}).Code)
	e.wait()
	total := func(q string) (float64, []any) {
		m := e.do("GET", "/api/v1/campaigns"+q, nil).obj()
		return m["totalCount"].(float64), m["campaigns"].([]any)
	}
	n, cs := total("")
	require.Equal(t, float64(3), n, "the direct send's campaign is hidden")
	require.Equal(t, "Bulk", cs[0].(map[string]any)["sendingMode"], "newest first")
	require.Nil(t, cs[1].(map[string]any)["description"])
	n, cs = total("?sendingMode=Transactional")
	require.Equal(t, float64(2), n)
	for _, c := range cs {
		require.Equal(t, "Transactional", c.(map[string]any)["sendingMode"])
	}
	n, cs = total("?sendingMode=Bulk&pageSize=1")
	require.Equal(t, float64(1), n)
	bulk := cs[0].(map[string]any)
	require.Equal(t, float64(2), bulk["totalMessages"])
	require.Equal(t, float64(2), bulk["pendingCount"])
	require.Equal(t, "Ready", bulk["status"])
	other := e.newCompany(t, "Other")
	m := e.do("GET", "/api/v1/campaigns", nil, withKey(other.key)).obj()
	require.Equal(t, float64(0), m["totalCount"], "companies see their own campaigns only")
	require.Equal(t, float64(0), m["totalPages"])
	require.Equal(t, []any{}, m["campaigns"])
}

func TestCampaignDetailCounters(t *testing.T) {
	e := newEnv(t)
	tpl := e.chatTemplate("chat", "x", map[string]any{"smsFallbackEnabled": true, "smsFallbackTemplateContent": "x", "smsFallbackSenderId": e.sender})
	r := e.do("POST", "/api/v1/chat/send", map[string]any{"templateId": tpl, "recipients": recipients(4)})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	id := r.obj()["campaignId"].(string)
	e.wait()
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/campaigns/"+id+"/start", nil).Code)
	now := time.Now()
	seq := func(p string, to ...messaging.MessageStatus) {
		ids := e.messageIDs(t, p)
		require.Len(t, ids, 1)
		for _, s := range to {
			e.apply(t, delivery.StatusUpdate{MessageID: ids[0], Status: s, At: now})
		}
	}
	seq(phone(0), messaging.StatusSending, messaging.StatusSent, messaging.StatusDelivered)
	seq(phone(1), messaging.StatusSending, messaging.StatusSent, messaging.StatusDelivered, messaging.StatusSeen)
	seq(phone(2), messaging.StatusSending, messaging.StatusFailed)
	d := e.do("GET", "/api/v1/campaigns/"+id, nil).obj()
	requireKeys(t, d, campaignDetailKeys...)
	require.Equal(t, float64(4), d["totalMessages"])
	require.Equal(t, float64(2), d["deliveredCount"])
	require.Equal(t, float64(1), d["seenCount"])
	require.Equal(t, float64(1), d["failedCount"])
	require.Equal(t, float64(1), d["pendingCount"])
	require.Equal(t, float64(0), d["smsFallbackCount"])
	require.Equal(t, float64(0), d["smsFallbackDeliveredCount"])
	require.Equal(t, float64(0), d["smsFallbackFailedCount"])
	require.Equal(t, 50.0, d["overallDeliveryRate"])
	require.Equal(t, "InProgress", d["status"])
	requireTime(t, d["startedAt"])
	require.Nil(t, d["completedAt"])
	require.Nil(t, d["failureReason"])
	require.Equal(t, float64(e.chat), d["chatServiceId"])
}

func TestSurveyResults(t *testing.T) {
	e := newEnv(t)
	tpl := e.chatTemplate("poll", "Coffee or tea?", map[string]any{"messageType": 6, "typeSpecificConfig": map[string]any{
		"options": []map[string]string{{"optionText": "Coffee", "optionValue": "c"}, {"optionText": "Tea", "optionValue": "t"}, {"optionText": "Neither", "optionValue": "n"}}}})
	r := e.do("POST", "/api/v1/chat/send", map[string]any{"templateId": tpl, "recipients": []map[string]any{
		{"phoneNumber": phone(1), "externalUserId": "a"}, {"phoneNumber": phone(2)}, {"phoneNumber": phone(3)}, {"phoneNumber": phone(4)}}})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	id := r.obj()["campaignId"].(string)
	e.wait()
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/campaigns/"+id+"/start", nil).Code)
	at := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= 4; i++ {
		ids := e.messageIDs(t, phone(i))
		e.apply(t, delivery.StatusUpdate{MessageID: ids[0], Status: messaging.StatusSending, At: at},
			delivery.StatusUpdate{MessageID: ids[0], Status: messaging.StatusSent, At: at})
	}
	answer := func(i, option int, day int, tracking string) {
		ids := e.messageIDs(t, phone(i))
		p, _ := messaging.NormalizePhone(phone(i))
		ext := map[int]string{1: "a"}[i]
		ok, err := e.store.RecordResults(context.Background(), []*messaging.SurveyResult{{ID: messaging.NewIDGenerator(nil).New(), CompanyID: e.id,
			CampaignID: messaging.MustParseID(id), MessageID: ids[0], Phone: p, ExternalUserID: ext, OptionIndex: option,
			OptionText: []string{"Coffee", "Tea", "Neither"}[option], TrackingData: tracking, RespondedAt: at.AddDate(0, 0, day)}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, ok)
	}
	answer(1, 0, 0, "t-1")
	answer(2, 1, 1, "")
	answer(3, 0, 2, "")

	res := e.do("GET", "/api/v1/survey-results?campaignId="+id, nil)
	require.Equal(t, http.StatusOK, res.Code, "body: %s", res.Body)
	m := res.obj()
	requireKeys(t, m, "results", "totalCount", "page", "pageSize", "totalPages")
	require.Equal(t, float64(3), m["totalCount"])
	first := m["results"].([]any)[0].(map[string]any)
	requireKeys(t, first, "id", "campaignId", "phoneNumber", "externalUserId", "selectedOptionText", "selectedOptionIndex", "trackingData", "respondedAt")
	require.Equal(t, id, first["campaignId"])
	require.Equal(t, phone(1)[1:], first["phoneNumber"])
	require.Equal(t, "a", first["externalUserId"])
	require.Equal(t, "Coffee", first["selectedOptionText"])
	require.Equal(t, float64(0), first["selectedOptionIndex"])
	require.Equal(t, "t-1", first["trackingData"])
	require.Equal(t, "2024-06-01T12:00:00.000Z", first["respondedAt"])
	second := m["results"].([]any)[1].(map[string]any)
	require.Nil(t, second["trackingData"])
	require.Nil(t, second["externalUserId"])

	filtered := func(q string) float64 {
		r := e.do("GET", "/api/v1/survey-results?campaignId="+id+"&"+q, nil)
		require.Equal(t, http.StatusOK, r.Code, "%s: %s", q, r.Body)
		return r.obj()["totalCount"].(float64)
	}
	require.Equal(t, float64(2), filtered("selectedOptionIndex=0"))
	require.Equal(t, float64(0), filtered("selectedOptionIndex=2"))
	require.Equal(t, float64(1), filtered("phoneNumber="+url.QueryEscape(phone(2))))
	require.Equal(t, float64(1), filtered("phoneNumber="+phone(2)), "an unencoded '+' arrives as a space and stands for '+'")
	require.Equal(t, float64(1), filtered("externalUserId=a"))
	require.Equal(t, float64(2), filtered("startDate=2024-06-02"))
	require.Equal(t, float64(2), filtered("endDate=2024-06-02"), "a date endDate covers its whole day")
	require.Equal(t, float64(1), filtered("startDate=2024-06-02&endDate=2024-06-02"))

	sum := e.do("GET", "/api/v1/survey-results/"+id+"/summary", nil)
	require.Equal(t, http.StatusOK, sum.Code, "body: %s", sum.Body)
	s := sum.obj()
	requireKeys(t, s, "campaignId", "campaignName", "totalResponses", "totalMessagesSent", "responseRate", "optionBreakdown")
	require.Equal(t, id, s["campaignId"])
	require.Contains(t, s["campaignName"], "poll")
	require.Equal(t, float64(3), s["totalResponses"])
	require.Equal(t, float64(4), s["totalMessagesSent"])
	require.Equal(t, 75.0, s["responseRate"])
	require.Equal(t, []any{
		map[string]any{"optionIndex": float64(0), "optionText": "Coffee", "count": float64(2), "percentage": 66.67},
		map[string]any{"optionIndex": float64(1), "optionText": "Tea", "count": float64(1), "percentage": 33.33},
		map[string]any{"optionIndex": float64(2), "optionText": "Neither", "count": float64(0), "percentage": float64(0)},
	}, s["optionBreakdown"])

	// Errors: not a survey campaign, unknown, another company's.
	plain := e.transactional("sms", e.smsTemplate("sms", "x"))
	requireError(t, e.do("GET", "/api/v1/survey-results?campaignId="+plain, nil), http.StatusBadRequest, "Bad Request", "")
	requireError(t, e.do("GET", "/api/v1/survey-results/"+plain+"/summary", nil), http.StatusBadRequest, "Bad Request", "")
	requireError(t, e.do("GET", "/api/v1/survey-results/0190f5c0-0000-7000-8000-000000000000/summary", nil), http.StatusNotFound, "Not Found", "")
	other := e.newCompany(t, "Other")
	requireError(t, e.do("GET", "/api/v1/survey-results?campaignId="+id, nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("GET", "/api/v1/survey-results/"+id+"/summary", nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
}

func TestLookups(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.acc.RegisterSMSSender(ctx, e.id, "PENDING") // not approved: not listed
	require.NoError(t, err)
	second, err := e.acc.AddChatService(ctx, e.id, "Second Brand", "svc-2")
	require.NoError(t, err)
	e.newCompany(t, "Other") // others' senders and services are not listed

	r := e.do("GET", "/api/v1/sms-senders", nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, []any{map[string]any{"id": float64(e.sender), "senderId": "ACME"}}, r.arr())
	r = e.do("GET", "/api/v1/chat-services", nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, []any{
		map[string]any{"id": float64(e.chat), "brandName": "Acme Brand", "channel": "viber", "provider": "herald"},
		map[string]any{"id": float64(second.ID), "brandName": "Second Brand", "channel": "viber", "provider": "herald"},
	}, r.arr())

	empty := e.newCompanyWithout(t)
	require.Equal(t, "[]\n", string(e.do("GET", "/api/v1/sms-senders", nil, withKey(empty)).Body))
	require.Equal(t, "[]\n", string(e.do("GET", "/api/v1/chat-services", nil, withKey(empty)).Body))
}

// newCompanyWithout sets up an active company with a key and nothing
// else, and returns its key.
func (e *env) newCompanyWithout(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	c, err := e.acc.CreateCompany(ctx, "Bare")
	require.NoError(t, err)
	require.NoError(t, e.acc.SetCompanyActive(ctx, c.ID, true))
	key, err := e.acc.GenerateAPIKey(ctx, c.ID)
	require.NoError(t, err)
	return key
}
