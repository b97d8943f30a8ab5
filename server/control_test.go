package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// Pause, resume and cancel through the API: the moves the state table
// allows, the answers of the others, a paused transactional campaign
// refusing messages, and a cancelled one's waiting messages Failed.
func TestCampaignControl(t *testing.T) {
	e := newEnv(t)
	sms := e.smsTemplate("promo", "Hi")
	bulk := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(3)}).obj()["campaignId"].(string)
	e.wait()

	requireError(t, e.do("POST", "/api/v1/campaigns/"+bulk+"/pause", nil), http.StatusBadRequest, "Campaign is not active", "")
	requireError(t, e.do("POST", "/api/v1/campaigns/"+bulk+"/resume", nil), http.StatusBadRequest, "Bad Request", "")
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/campaigns/"+bulk+"/start", nil).Code)
	r := e.do("POST", "/api/v1/campaigns/"+bulk+"/pause", nil)
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, "Paused", r.obj()["status"])
	r = e.do("POST", "/api/v1/campaigns/"+bulk+"/resume", nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, "InProgress", r.obj()["status"])
	r = e.do("POST", "/api/v1/campaigns/"+bulk+"/cancel", nil)
	require.Equal(t, http.StatusOK, r.Code)
	c := r.obj()
	require.Equal(t, "Completed", c["status"])
	require.NotNil(t, c["cancelledAt"])
	require.EqualValues(t, 3, c["failedCount"], "nothing was handed to a provider: all cancelled")
	require.EqualValues(t, 0, c["pendingCount"])
	requireError(t, e.do("POST", "/api/v1/campaigns/"+bulk+"/cancel", nil), http.StatusBadRequest, "Bad Request", "")

	tx := e.transactional("sms", sms)
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/campaigns/"+tx+"/pause", nil).Code)
	requireError(t, e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(7)}),
		http.StatusBadRequest, "Campaign is not active", "")
	require.Equal(t, http.StatusOK, e.do("POST", "/api/v1/campaigns/"+tx+"/resume", nil).Code)
	require.Equal(t, http.StatusAccepted, e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(7)}).Code)

	other := e.newCompany(t, "Other")
	requireError(t, e.do("POST", "/api/v1/campaigns/"+tx+"/cancel", nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
}

// A message is read by the id its send answered; campaigns are listed by
// status.
func TestReadByIDAndStatus(t *testing.T) {
	e := newEnv(t)
	sms := e.smsTemplate("promo", "Hi")
	tx := e.transactional("sms", sms)
	id := e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(1)}).obj()["messageId"].(string)
	m := e.do("GET", "/api/v1/messages/"+id, nil)
	require.Equal(t, http.StatusOK, m.Code, "body: %s", m.Body)
	require.Equal(t, id, m.obj()["id"])
	require.Equal(t, "Pending", m.obj()["status"])
	other := e.newCompany(t, "Other")
	requireError(t, e.do("GET", "/api/v1/messages/"+id, nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")

	bulk := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(1)}).obj()["campaignId"].(string)
	e.wait()
	ready := e.do("GET", "/api/v1/campaigns?status=Ready", nil).obj()["campaigns"].([]any)
	require.Len(t, ready, 1)
	require.Equal(t, bulk, ready[0].(map[string]any)["campaignId"])
	inProgress := e.do("GET", "/api/v1/campaigns?status=InProgress", nil).obj()["campaigns"].([]any)
	require.Len(t, inProgress, 1)
	require.Equal(t, tx, inProgress[0].(map[string]any)["campaignId"])
	requireError(t, e.do("GET", "/api/v1/campaigns?status=Done", nil), http.StatusBadRequest, "Bad Request", "status")

	// The transactional campaign's messages: one more, then one failed
	// by an opt-out; by campaign, newest first, and by status.
	second := e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(2)}).obj()["messageId"].(string)
	list := func(query string) []string {
		r := e.do("GET", "/api/v1/messages?"+query, nil)
		require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
		var ids []string
		for _, m := range r.obj()["messages"].([]any) {
			ids = append(ids, m.(map[string]any)["id"].(string))
		}
		if !strings.Contains(query, "pageSize") {
			require.Equal(t, float64(len(ids)), r.obj()["totalCount"])
		} else {
			require.Equal(t, float64(2), r.obj()["totalCount"])
		}
		return ids
	}
	require.Equal(t, []string{second, id}, list("campaignId="+tx))
	require.Equal(t, []string{second}, list("campaignId="+tx+"&pageSize=1"))
	require.Equal(t, []string{id}, list("campaignId="+tx+"&pageSize=1&page=2"))
	require.Empty(t, list("campaignId="+tx+"&status=Failed"))
	require.Len(t, list("campaignId="+bulk+"&status=Pending"), 1)
	require.Equal(t, []string{second}, list("campaignId="+tx+"&phoneNumber="+phone(2)))
	requireError(t, e.do("GET", "/api/v1/messages?campaignId="+tx+"&status=Gone", nil), http.StatusBadRequest, "Bad Request", "status")
	requireError(t, e.do("GET", "/api/v1/messages?status=Pending", nil), http.StatusBadRequest, "Bad Request", "")
	requireError(t, e.do("GET", "/api/v1/messages?campaignId="+tx, nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
}

// TestScheduledStart: a start with sendAt keeps the campaign Ready with
// scheduledAt until the time comes, then the scheduler starts it; a
// sendAt within the last minute starts at once; a bad sendAt, one further
// in the past or more than 90 days ahead is a 400 on sendAt, a campaign
// not Ready a 400, and a cancel unschedules.
func TestScheduledStart(t *testing.T) {
	clk := &clock{t: time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)}
	e := newEnv(t, withClock(clk))
	sms := e.smsTemplate("promo", "Hi")
	bulk := func() string {
		id := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(2)}).obj()["campaignId"].(string)
		e.wait()
		return id
	}
	c := bulk()
	r := e.do("POST", "/api/v1/campaigns/"+c+"/start", map[string]any{"sendAt": "2026-05-01T09:30:00+01:00"})
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, "Ready", r.obj()["status"])
	require.Equal(t, "2026-05-01T08:30:00.000Z", r.obj()["scheduledAt"])
	r = e.do("POST", "/api/v1/campaigns/"+c+"/start", map[string]any{"sendAt": "2026-05-01T10:00:00Z"})
	require.Equal(t, "2026-05-01T10:00:00.000Z", r.obj()["scheduledAt"], "a new sendAt replaces the first")
	got := e.do("GET", "/api/v1/campaigns/"+c, nil).obj()
	require.Equal(t, "Ready", got["status"])
	require.Equal(t, "2026-05-01T10:00:00.000Z", got["scheduledAt"])

	n, err := e.svc.StartDue(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "not its time yet")
	clk.t = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	n, err = e.svc.StartDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got = e.do("GET", "/api/v1/campaigns/"+c, nil).obj()
	require.Equal(t, "InProgress", got["status"])
	require.Equal(t, "2026-05-01T10:00:00.000Z", got["startedAt"])
	requireError(t, e.do("POST", "/api/v1/campaigns/"+c+"/start", map[string]any{"sendAt": "2026-05-02T10:00:00Z"}),
		http.StatusBadRequest, "Campaign is not ready", "")

	past := bulk()
	r = e.do("POST", "/api/v1/campaigns/"+past+"/start", map[string]any{"sendAt": "2026-05-01T09:59:30Z"})
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, "InProgress", r.obj()["status"], "a sendAt within the last minute (a client's clock behind) starts at once")

	later := bulk()
	for _, bad := range []any{"tomorrow", "2026-05-01 12:00", 42, "2026-05-01T09:58:59Z", "2026-04-01T10:00:00Z", "2026-07-30T10:00:01Z", "2027-05-03T10:00:00Z"} {
		requireError(t, e.do("POST", "/api/v1/campaigns/"+later+"/start", map[string]any{"sendAt": bad}), http.StatusBadRequest, "Bad Request", "sendAt")
	}
	e.do("POST", "/api/v1/campaigns/"+later+"/start", map[string]any{"sendAt": "2026-05-01T11:00:00Z"})
	r = e.do("POST", "/api/v1/campaigns/"+later+"/cancel", nil)
	require.Equal(t, "Completed", r.obj()["status"])
	clk.t = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	n, err = e.svc.StartDue(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "a cancelled campaign does not start")
}

// secondInsertHeld lets a preparation write its first batch and holds the
// next until release is closed.
type secondInsertHeld struct {
	*memstore.Store
	calls   atomic.Int32
	second  chan struct{}
	release chan struct{}
}

func (s *secondInsertHeld) InsertMessages(ctx context.Context, msgs []*messaging.Message) error {
	if s.calls.Add(1) == 2 {
		close(s.second)
		<-s.release
	}
	return s.Store.InsertMessages(ctx, msgs)
}

// TestPreparedCount: while a large bulk is Queuing, preparedCount shows
// the messages written so far (a batch of 10,000 here) against
// totalMessages; once Ready, the two are equal.
func TestPreparedCount(t *testing.T) {
	held := &secondInsertHeld{second: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, func(c *envConfig) {
		c.wrap = func(s *memstore.Store) appStore { held.Store = s; return held }
		c.limits = campaign.Limits{MaxPending: 100_000}
		c.noVerify = true // a large body
	})
	sms := e.smsTemplate("promo", "Hi")
	all, _ := recipientsJSON(25_000)
	r := e.do("POST", "/api/v1/sms/promotional", `{"templateId":"`+sms+`","recipients":`+all+`}`)
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	id := r.obj()["campaignId"].(string)
	<-held.second
	var once sync.Once
	free := func() { once.Do(func() { close(held.release) }) }
	defer free() // a failed assertion must not leave the preparation held
	d := e.do("GET", "/api/v1/campaigns/"+id, nil).obj()
	require.Equal(t, "Queuing", d["status"])
	require.Equal(t, float64(25_000), d["totalMessages"])
	require.Equal(t, float64(10_000), d["preparedCount"])
	listed := e.do("GET", "/api/v1/campaigns", nil).obj()["campaigns"].([]any)[0].(map[string]any)
	require.Equal(t, float64(10_000), listed["preparedCount"])
	free()
	e.wait()
	d = e.do("GET", "/api/v1/campaigns/"+id, nil).obj()
	require.Equal(t, "Ready", d["status"])
	require.Equal(t, float64(25_000), d["preparedCount"])
}

// TestValidityPeriod: validityPeriod on a template is the default of its
// sends; a bulk send's own counts from the campaign's start (shown on the
// campaign), an add-message's from now (the message's expiry); values out
// of 60..604800 are a 400 on validityPeriod.
func TestValidityPeriod(t *testing.T) {
	clk := &clock{t: time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)}
	e := newEnv(t, withClock(clk))
	r := e.do("POST", "/api/v1/templates/sms", map[string]any{"name": "otp", "templateContent": "Code {{code}}", "validityPeriod": 600})
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	tpl := r.obj()["id"].(string)
	require.Equal(t, float64(600), r.obj()["validityPeriod"])
	plain := e.smsTemplate("plain", "Hi")
	require.Nil(t, e.do("GET", "/api/v1/templates/"+plain, nil).obj()["validityPeriod"])

	bulk := func(tpl string, validity any) map[string]any {
		body := map[string]any{"templateId": tpl, "recipients": recipients(1), "placeholders": map[string]any{"code": "1"}}
		if validity != nil {
			body["validityPeriod"] = validity
		}
		r := e.do("POST", "/api/v1/sms/promotional", body)
		require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
		e.wait()
		return e.do("GET", "/api/v1/campaigns/"+r.obj()["campaignId"].(string), nil).obj()
	}
	require.Equal(t, float64(600), bulk(tpl, nil)["validityPeriod"], "the template's default")
	require.Equal(t, float64(120), bulk(tpl, 120)["validityPeriod"])
	require.Nil(t, bulk(plain, nil)["validityPeriod"])

	tx := e.transactional("sms", tpl)
	add := func(validity any) messaging.Message {
		body := map[string]any{"phoneNumber": phone(1), "placeholders": map[string]any{"code": "1"}}
		if validity != nil {
			body["validityPeriod"] = validity
		}
		r := e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", body)
		require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
		m, err := e.store.GetMessage(t.Context(), e.id, messaging.MustParseID(r.obj()["messageId"].(string)))
		require.NoError(t, err)
		return m
	}
	m := add(nil)
	require.NotNil(t, m.ExpiresAt)
	require.Equal(t, clk.t.Add(600*time.Second), *m.ExpiresAt)
	m = add(90)
	require.Equal(t, clk.t.Add(90*time.Second), *m.ExpiresAt)

	for _, bad := range []any{59, 604801, -1, "soon"} {
		requireError(t, e.do("POST", "/api/v1/templates/sms", map[string]any{"name": "x", "templateContent": "x", "validityPeriod": bad}),
			http.StatusBadRequest, "Bad Request", "validityPeriod")
		requireError(t, e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": tpl, "recipients": recipients(1), "validityPeriod": bad}),
			http.StatusBadRequest, "Bad Request", "validityPeriod")
		requireError(t, e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "x", "smsSenderId": e.sender, "recipients": recipients(1), "validityPeriod": bad}),
			http.StatusBadRequest, "Bad Request", "validityPeriod")
		requireError(t, e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(1), "validityPeriod": bad}),
			http.StatusBadRequest, "Bad Request", "validityPeriod")
	}
	r = e.do("POST", "/api/v1/chat/send-text", map[string]any{"messageContent": "x", "chatServiceId": e.chat, "recipients": recipients(1), "validityPeriod": 3600})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	require.Equal(t, float64(3600), e.do("GET", "/api/v1/campaigns/"+r.obj()["campaignId"].(string), nil).obj()["validityPeriod"])
}

// TestSendWindowAPI: a bulk send takes a sendWindow (with or without a
// zone of its own) and the campaign shows it with waitingForWindowCount;
// a malformed window is a 400 naming the field, and sends nothing.
func TestSendWindowAPI(t *testing.T) {
	e := newEnv(t)
	sms := e.smsTemplate("promo", "Hi")
	send := func(window any) response {
		return e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(2), "sendWindow": window})
	}
	r := send(map[string]any{"from": "09:00", "to": "20:00"})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	e.wait()
	d := e.do("GET", "/api/v1/campaigns/"+r.obj()["campaignId"].(string), nil).obj()
	require.Equal(t, map[string]any{"from": "09:00", "to": "20:00"}, d["sendWindow"])
	require.Equal(t, float64(0), d["waitingForWindowCount"])
	r = send(map[string]any{"from": "20:00", "to": "08:30", "timeZone": "America/New_York"})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	e.wait()
	d = e.do("GET", "/api/v1/campaigns/"+r.obj()["campaignId"].(string), nil).obj()
	require.Equal(t, map[string]any{"from": "20:00", "to": "08:30", "timeZone": "America/New_York"}, d["sendWindow"])
	plain := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(1)}).obj()["campaignId"].(string)
	e.wait()
	require.Nil(t, e.do("GET", "/api/v1/campaigns/"+plain, nil).obj()["sendWindow"])

	before := e.pending(e.id)
	for field, window := range map[string]any{
		"sendWindow.from":     map[string]any{"from": "9am", "to": "20:00"},
		"sendWindow.to":       map[string]any{"from": "09:00", "to": "09:00"},
		"sendWindow.timeZone": map[string]any{"from": "09:00", "to": "20:00", "timeZone": "Europe/Atlantis"},
		"sendWindow":          "09:00-20:00",
	} {
		requireError(t, send(window), http.StatusBadRequest, "Bad Request", field)
	}
	require.Equal(t, before, e.pending(e.id), "refused sends admit nothing")
}
