package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

var (
	sendKeys           = []string{"campaignId", "messageCount", "skippedCount", "invalidPhoneNumbers", "contentTooLong", "status", "queuedAt", "message"}
	bulkSendKeys       = append(append([]string(nil), sendKeys...), "optedOutPhoneNumbers", "missingPlaceholders", "missingPlaceholderPhoneNumbers")
	campaignListKeys   = []string{"campaignId", "name", "description", "status", "channel", "sendingMode", "totalMessages", "preparedCount", "deliveredCount", "failedCount", "pendingCount", "seenCount", "unconfirmedCount", "createdAt"}
	campaignDetailKeys = append(append([]string(nil), campaignListKeys...), "chatServiceId", "templateId", "templateName", "startedAt",
		"completedAt", "failureReason", "smsFallbackCount", "smsFallbackDeliveredCount", "smsFallbackFailedCount", "overallDeliveryRate", "validityPeriod", "sendWindow", "waitingForWindowCount")
	messageKeys = []string{"id", "campaignId", "phoneNumber", "externalUserId", "messageContent", "status", "channelType", "details",
		"smsErrorCode", "route", "createdAt", "sentAt", "deliveredAt", "updatedAt"}
)

func TestTransactionalCampaign(t *testing.T) {
	for _, ch := range []string{"sms", "chat"} {
		t.Run(ch, func(t *testing.T) {
			e := newEnv(t)
			var tpl string
			if ch == "sms" {
				tpl = e.smsTemplate("otp", "Code {{code}}")
			} else {
				tpl = e.chatTemplate("otp", "Code {{code}}", nil)
			}
			r := e.doT(t, "POST", "/api/v1/"+ch+"/campaigns", map[string]any{"name": "OTP", "description": "one-time codes", "templateId": tpl})
			require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
			m := r.obj()
			requireKeys(t, m, "campaignId", "name", "status", "createdAt")
			require.Equal(t, "OTP", m["name"])
			require.Equal(t, "InProgress", m["status"])
			requireTime(t, m["createdAt"])
			id := m["campaignId"].(string)

			r = e.doT(t, "POST", "/api/v1/"+ch+"/campaigns/"+id+"/messages", map[string]any{"phoneNumber": "+447700900123",
				"externalUserId": "user-1", "placeholders": map[string]any{"code": 1234}})
			require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
			msg := r.obj()
			requireKeys(t, msg, "messageId", "campaignId", "phoneNumber", "status", "missingPlaceholders", "queuedAt")
			require.Equal(t, id, msg["campaignId"])
			require.Equal(t, "447700900123", msg["phoneNumber"])
			require.Equal(t, "Pending", msg["status"])
			requireTime(t, msg["queuedAt"])

			list := e.doT(t, "GET", "/api/v1/messages?externalUserId=user-1", nil).obj()
			require.Equal(t, float64(1), list["totalCount"])
			got := list["messages"].([]any)[0].(map[string]any)
			requireKeys(t, got, messageKeys...)
			require.Equal(t, msg["messageId"], got["id"])
			require.Equal(t, "Code 1234", got["messageContent"], "a number placeholder is used as written")
			require.Equal(t, map[string]string{"sms": "Smpp", "chat": "Chat"}[ch], got["channelType"])
			for _, k := range []string{"details", "smsErrorCode", "sentAt", "deliveredAt", "updatedAt"} {
				require.Nil(t, got[k], k)
			}

			d := e.doT(t, "GET", "/api/v1/campaigns/"+id, nil).obj()
			requireKeys(t, d, campaignDetailKeys...)
			require.Equal(t, "Transactional", d["sendingMode"])
			require.Equal(t, "one-time codes", d["description"])
			require.Equal(t, float64(1), d["totalMessages"])
			require.Equal(t, float64(1), d["pendingCount"])
			require.Equal(t, tpl, d["templateId"])
			require.Equal(t, "otp", d["templateName"])
			requireTime(t, d["startedAt"])
			if ch == "sms" {
				require.Nil(t, d["chatServiceId"])
				require.Equal(t, "Smpp", d["channel"])
			} else {
				require.Equal(t, float64(e.chat), d["chatServiceId"])
				require.Equal(t, "Chat", d["channel"])
			}
		})
	}
}

func TestAddMessageErrors(t *testing.T) {
	e := newEnv(t)
	other := e.newCompany(t, "Other")
	sms := e.smsTemplate("sms", "x")
	chat := e.chatTemplate("chat", "x", nil)
	smsTx := e.transactional("sms", sms)
	chatTx := e.transactional("chat", chat)
	closed := e.transactional("sms", sms)
	require.NoError(t, e.store.TransitionCampaign(context.Background(), messaging.CampaignTransition{CompanyID: e.id, CampaignID: messaging.MustParseID(closed), From: []messaging.CampaignStatus{messaging.CampaignInProgress}, To: messaging.CampaignCompleted, At: time.Now()}))
	bulk := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(1)}).obj()["campaignId"].(string)
	theirs := func() string {
		tpl := e.smsTemplate("theirs", "x", withKey(other.key))
		r := e.do("POST", "/api/v1/sms/campaigns", map[string]any{"name": "x", "templateId": tpl}, withKey(other.key))
		return r.obj()["campaignId"].(string)
	}()
	e.wait()
	ok := map[string]any{"phoneNumber": phone(1)}
	cases := []struct {
		name, path string
		body       any
		status     int
		error      string
		field      string
	}{
		{"not an SMS campaign", "/api/v1/sms/campaigns/" + chatTx + "/messages", ok, 400, "Campaign is not an SMS campaign", ""},
		{"not a Chat campaign", "/api/v1/chat/campaigns/" + smsTx + "/messages", ok, 400, "Campaign is not a Chat campaign", ""},
		{"bulk campaign", "/api/v1/sms/campaigns/" + bulk + "/messages", ok, 400, "Cannot add messages to bulk campaign", ""},
		{"campaign not active", "/api/v1/sms/campaigns/" + closed + "/messages", ok, 400, "Campaign is not active", ""},
		{"invalid phone number", "/api/v1/sms/campaigns/" + smsTx + "/messages", map[string]any{"phoneNumber": "+44 7700 900123"}, 400, "Bad Request", "phoneNumber"},
		{"missing phone number", "/api/v1/sms/campaigns/" + smsTx + "/messages", map[string]any{}, 400, "Bad Request", "phoneNumber"},
		{"externalUserId too long", "/api/v1/sms/campaigns/" + smsTx + "/messages", map[string]any{"phoneNumber": phone(1), "externalUserId": strings.Repeat("u", 101)}, 400, "Bad Request", "externalUserId"},
		{"placeholder of the wrong type", "/api/v1/sms/campaigns/" + smsTx + "/messages", map[string]any{"phoneNumber": phone(1), "placeholders": map[string]any{"a": map[string]any{}}}, 400, "Bad Request", "placeholders.a"},
		{"placeholders not an object", "/api/v1/sms/campaigns/" + smsTx + "/messages", map[string]any{"phoneNumber": phone(1), "placeholders": "a=b"}, 400, "Bad Request", "placeholders"},
		{"unknown campaign", "/api/v1/sms/campaigns/0190f5c0-0000-7000-8000-000000000000/messages", ok, 404, "Not Found", ""},
		{"another company's campaign", "/api/v1/sms/campaigns/" + theirs + "/messages", ok, 404, "Not Found", ""},
		{"bad uuid", "/api/v1/sms/campaigns/abc/messages", ok, 400, "Bad Request", "id"},
		{"malformed JSON", "/api/v1/sms/campaigns/" + smsTx + "/messages", `{"phoneNumber":`, 400, "Bad Request", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.pending(e.id)
			requireError(t, e.doT(t, "POST", c.path, c.body), c.status, c.error, c.field)
			require.Equal(t, before, e.pending(e.id), "a failed request admits nothing")
		})
	}
	require.Equal(t, 0, e.messageCount(e.id, phone(1)))
}

func TestCreateCampaignErrors(t *testing.T) {
	e := newEnv(t)
	other := e.newCompany(t, "Other")
	sms := e.smsTemplate("sms", "x")
	chat := e.chatTemplate("chat", "x", nil)
	theirs := e.smsTemplate("theirs", "x", withKey(other.key))
	cases := []struct {
		name, path string
		body       any
		status     int
		error      string
		field      string
	}{
		{"chat template on sms", "/api/v1/sms/campaigns", map[string]any{"name": "x", "templateId": chat}, 400, "Invalid template channel type", ""},
		{"sms template on chat", "/api/v1/chat/campaigns", map[string]any{"name": "x", "templateId": sms}, 400, "Invalid template channel type", ""},
		{"unknown template", "/api/v1/sms/campaigns", map[string]any{"name": "x", "templateId": "0190f5c0-0000-7000-8000-000000000000"}, 404, "Not Found", ""},
		{"another company's template", "/api/v1/sms/campaigns", map[string]any{"name": "x", "templateId": theirs}, 404, "Not Found", ""},
		{"template id not a uuid", "/api/v1/sms/campaigns", map[string]any{"name": "x", "templateId": "42"}, 400, "Bad Request", "templateId"},
		{"template id missing", "/api/v1/sms/campaigns", map[string]any{"name": "x"}, 400, "Bad Request", "templateId"},
		{"name missing", "/api/v1/sms/campaigns", map[string]any{"templateId": sms}, 400, "Bad Request", "name"},
		{"name too long", "/api/v1/sms/campaigns", map[string]any{"name": strings.Repeat("n", 201), "templateId": sms}, 400, "Bad Request", "name"},
		{"description too long", "/api/v1/sms/campaigns", map[string]any{"name": "n", "description": strings.Repeat("d", 1001), "templateId": sms}, 400, "Bad Request", "description"},
		{"malformed JSON on sms", "/api/v1/sms/campaigns", `{"name": "x", "templateId": "` + sms + `"`, 400, "Bad Request", ""},
		{"malformed JSON on chat", "/api/v1/chat/campaigns", `{"name": "x", "templateId": ` + chat, 400, "Bad Request", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, e.doT(t, "POST", c.path, c.body), c.status, c.error, c.field)
			require.Equal(t, written{}, e.written(e.id))
		})
	}
	// An SMS template without a sender needs an approved sender of the
	// company.
	bare := e.newCompanyWithout(t)
	tpl := e.smsTemplate("no sender", "x", withKey(bare))
	requireError(t, e.do("POST", "/api/v1/sms/campaigns", map[string]any{"name": "x", "templateId": tpl}, withKey(bare)),
		http.StatusBadRequest, "Invalid SMS Sender", "")
	requireError(t, e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": tpl, "recipients": recipients(1)}, withKey(bare)),
		http.StatusBadRequest, "Invalid SMS Sender", "")
}

// unapprovingStore reports the senders in revoked as not approved, as if
// an operator had withdrawn an approval: the API has no way to.
type unapprovingStore struct {
	*memstore.Store
	mu      sync.Mutex
	revoked map[int64]bool
}

func (s *unapprovingStore) revoke(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked[id] = true
}

func (s *unapprovingStore) GetSMSSender(ctx context.Context, companyID messaging.ID, id int64) (messaging.SMSSender, error) {
	sd, err := s.Store.GetSMSSender(ctx, companyID, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.revoked[id] {
		sd.Approved = false
	}
	return sd, err
}

// TestTemplateSenderNoLongerApproved creates campaigns from templates
// whose SMS sender or fallback sender was approved when the template was
// made and no longer is: each is refused, and nothing is written.
func TestTemplateSenderNoLongerApproved(t *testing.T) {
	st := &unapprovingStore{revoked: map[int64]bool{}}
	e := newEnv(t, func(c *envConfig) { c.wrap = func(s *memstore.Store) appStore { st.Store = s; return st } })
	backup, err := e.acc.RegisterSMSSender(t.Context(), e.id, "BACKUP")
	require.NoError(t, err)
	require.NoError(t, e.acc.ApproveSMSSender(t.Context(), backup.ID))
	chat := e.chatTemplate("chat", "x", map[string]any{"smsFallbackEnabled": true,
		"smsFallbackTemplateContent": strings.Repeat("f", 1600), "smsFallbackSenderId": backup.ID})
	r := e.do("POST", "/api/v1/templates/sms", map[string]any{"name": "sms", "templateContent": "x", "smsSenderId": backup.ID})
	require.Equal(t, http.StatusCreated, r.Code, "body: %s", r.Body)
	sms := r.obj()["id"].(string)

	cases := []struct {
		name, path string
		body       map[string]any
		accepted   int // the status while the sender is approved
		error      string
	}{
		{"chat transactional", "/api/v1/chat/campaigns", map[string]any{"name": "x", "templateId": chat}, http.StatusCreated, "Invalid SMS fallback sender"},
		{"chat bulk", "/api/v1/chat/send", map[string]any{"templateId": chat, "recipients": recipients(2)}, http.StatusAccepted, "Invalid SMS fallback sender"},
		{"sms transactional", "/api/v1/sms/campaigns", map[string]any{"name": "x", "templateId": sms}, http.StatusCreated, "Invalid SMS Sender"},
		{"sms bulk", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(2)}, http.StatusAccepted, "Invalid SMS Sender"},
	}
	for _, c := range cases {
		r := e.do("POST", c.path, c.body)
		require.Equal(t, c.accepted, r.Code, "%s while the sender is approved: %s", c.name, r.Body)
	}
	e.wait()
	before, pending := e.written(e.id), e.pending(e.id)
	require.Equal(t, 4, before.campaigns)
	st.revoke(backup.ID)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, e.doT(t, "POST", c.path, c.body), http.StatusBadRequest, c.error, "")
			e.wait()
			require.Equal(t, before, e.written(e.id), "nothing is written")
			require.Equal(t, pending, e.pending(e.id))
		})
	}
}

func TestBulkSendLifecycle(t *testing.T) {
	for _, ch := range []string{"sms", "chat"} {
		t.Run(ch, func(t *testing.T) {
			e := newEnv(t)
			path := map[string]string{"sms": "/api/v1/sms/promotional", "chat": "/api/v1/chat/send"}[ch]
			var tpl string
			if ch == "sms" {
				tpl = e.smsTemplate("promo", "Hi {{name}}, {{offer}}")
			} else {
				tpl = e.chatTemplate("promo", "Hi {{name}}, {{offer}}", nil)
			}
			body := map[string]any{"templateId": tpl, "placeholders": map[string]any{"offer": "20% off", "name": "friend"},
				"recipients": []map[string]any{
					{"phoneNumber": "+447700900001", "externalUserId": "a", "placeholders": map[string]any{"name": "Ada"}},
					{"phoneNumber": "447700900002"},
					{"phoneNumber": "07700 900003"},
				}}
			r := e.doT(t, "POST", path, body)
			require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
			m := r.obj()
			requireKeys(t, m, bulkSendKeys...)
			require.Equal(t, "Queuing", m["status"])
			require.Equal(t, float64(2), m["messageCount"])
			require.Equal(t, float64(1), m["skippedCount"])
			require.Equal(t, []any{"07700 900003"}, m["invalidPhoneNumbers"])
			requireTime(t, m["queuedAt"])
			id := m["campaignId"].(string)
			msg := m["message"].(string)
			require.Contains(t, msg, "GET /api/v1/campaigns/"+id)
			require.Contains(t, msg, "Ready")
			require.Contains(t, msg, "POST /api/v1/campaigns/"+id+"/start")
			require.Contains(t, msg, "1 invalid phone number skipped (see invalidPhoneNumbers)")

			e.wait()
			d := e.doT(t, "GET", "/api/v1/campaigns/"+id, nil).obj()
			requireKeys(t, d, campaignDetailKeys...)
			require.Equal(t, "Ready", d["status"])
			require.Equal(t, "Bulk", d["sendingMode"])
			require.Equal(t, float64(2), d["totalMessages"])
			require.Nil(t, d["startedAt"])

			st := e.doT(t, "POST", "/api/v1/campaigns/"+id+"/start", nil)
			require.Equal(t, http.StatusOK, st.Code, "body: %s", st.Body)
			sm := st.obj()
			requireKeys(t, sm, "campaignId", "status")
			require.Equal(t, id, sm["campaignId"])
			require.Equal(t, "InProgress", sm["status"])
			requireError(t, e.doT(t, "POST", "/api/v1/campaigns/"+id+"/start", nil), http.StatusBadRequest, "Campaign is not ready", "")

			msgs := e.doT(t, "GET", "/api/v1/messages?phoneNumber=%2B447700900001", nil).obj()
			require.Equal(t, float64(1), msgs["totalCount"])
			first := msgs["messages"].([]any)[0].(map[string]any)
			require.Equal(t, "Hi Ada, 20% off", first["messageContent"], "recipient placeholders first, request ones as fallback")
			require.Equal(t, "a", first["externalUserId"])
			second := e.doT(t, "GET", "/api/v1/messages?phoneNumber=447700900002", nil).obj()["messages"].([]any)[0].(map[string]any)
			require.Equal(t, "Hi friend, 20% off", second["messageContent"])
			require.Nil(t, second["externalUserId"])

			list := e.doT(t, "GET", "/api/v1/campaigns", nil).obj()
			requireKeys(t, list, "campaigns", "totalCount", "page", "pageSize", "totalPages")
			require.Equal(t, float64(1), list["totalCount"])
			item := list["campaigns"].([]any)[0].(map[string]any)
			requireKeys(t, item, campaignListKeys...)
			require.Equal(t, id, item["campaignId"])
		})
	}
}

// heldStore holds back the writing of bulk messages until release is
// closed, then fails it when fail is set: a campaign can be seen Queuing,
// then Failed.
type heldStore struct {
	*memstore.Store
	release chan struct{}
	fail    atomic.Bool
}

func (s *heldStore) InsertMessages(ctx context.Context, msgs []*messaging.Message) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.fail.Load() {
		return errors.New("disk full")
	}
	return s.Store.InsertMessages(ctx, msgs)
}

func TestStartErrors(t *testing.T) {
	held := &heldStore{release: make(chan struct{})}
	e := newEnv(t, func(c *envConfig) {
		c.wrap = func(s *memstore.Store) appStore { held.Store = s; return held }
		c.quiet = true // the failed preparation is logged
	})
	sms := e.smsTemplate("sms", "x")
	tx := e.transactional("sms", sms)
	completed := e.transactional("sms", sms)
	require.NoError(t, e.store.TransitionCampaign(context.Background(), messaging.CampaignTransition{CompanyID: e.id, CampaignID: messaging.MustParseID(completed), From: []messaging.CampaignStatus{messaging.CampaignInProgress}, To: messaging.CampaignCompleted, At: time.Now()}))
	r := e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(2)})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	bulk := r.obj()["campaignId"].(string)

	// notReady asserts that starting the campaign is refused and changes
	// nothing of it.
	notReady := func(t *testing.T, id, status string) {
		t.Helper()
		before := e.doT(t, "GET", "/api/v1/campaigns/"+id, nil).obj()
		require.Equal(t, status, before["status"])
		requireError(t, e.doT(t, "POST", "/api/v1/campaigns/"+id+"/start", nil), http.StatusBadRequest, "Campaign is not ready", "")
		require.Equal(t, before, e.doT(t, "GET", "/api/v1/campaigns/"+id, nil).obj(), "a refused start changes nothing")
	}
	t.Run("Queuing", func(t *testing.T) { notReady(t, bulk, "Queuing") })
	t.Run("InProgress", func(t *testing.T) { notReady(t, tx, "InProgress") })
	t.Run("Completed", func(t *testing.T) { notReady(t, completed, "Completed") })
	held.fail.Store(true)
	close(held.release)
	e.wait()
	t.Run("Failed", func(t *testing.T) {
		notReady(t, bulk, "Failed")
		require.NotNil(t, e.doT(t, "GET", "/api/v1/campaigns/"+bulk, nil).obj()["failureReason"])
		require.Equal(t, 0, e.pending(e.id), "a failed preparation releases its reservation")
	})

	requireError(t, e.do("POST", "/api/v1/campaigns/0190f5c0-0000-7000-8000-000000000000/start", nil), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("POST", "/api/v1/campaigns/nope/start", nil), http.StatusBadRequest, "Bad Request", "id")
	other := e.newCompany(t, "Other")
	requireError(t, e.do("POST", "/api/v1/campaigns/"+tx+"/start", nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("GET", "/api/v1/campaigns/"+tx, nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
}

func TestDirectSends(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "Raw {{text}}", "smsSenderId": e.sender,
		"recipients": []map[string]any{{"phoneNumber": phone(1), "externalUserId": "x1"}, {"phoneNumber": "bad"}, {"phoneNumber": phone(2)}}})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	m := r.obj()
	requireKeys(t, m, sendKeys...)
	require.Equal(t, "Pending", m["status"])
	require.Equal(t, float64(2), m["messageCount"])
	require.Equal(t, float64(1), m["skippedCount"])
	require.Equal(t, []any{"bad"}, m["invalidPhoneNumbers"])
	require.Contains(t, m["message"], "2 messages queued")
	require.Contains(t, m["message"], "1 invalid phone number skipped (see invalidPhoneNumbers)")
	require.Equal(t, written{campaigns: 1, messages: 2}, e.written(e.id), "the hidden campaign and its messages are counted")
	id := m["campaignId"].(string)

	d := e.do("GET", "/api/v1/campaigns/"+id, nil).obj()
	require.Equal(t, "InProgress", d["status"])
	require.Nil(t, d["templateId"])
	require.Nil(t, d["templateName"])
	require.Equal(t, float64(2), d["totalMessages"])
	require.Equal(t, float64(0), e.do("GET", "/api/v1/campaigns", nil).obj()["totalCount"], "direct sends are not listed")
	got := e.do("GET", "/api/v1/messages?externalUserId=x1", nil).obj()["messages"].([]any)[0].(map[string]any)
	require.Equal(t, "Raw {{text}}", got["messageContent"], "direct text is sent as written")

	r = e.do("POST", "/api/v1/chat/send-text", map[string]any{"messageContent": "Hello", "chatServiceId": e.chat,
		"smsFallbackText": "Hello by SMS {}", "smsFallbackSenderId": e.sender, "recipients": recipients(3)})
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	m = r.obj()
	requireKeys(t, m, sendKeys...)
	require.Equal(t, "Pending", m["status"])
	require.Equal(t, float64(3), m["messageCount"])
	require.Equal(t, []any{}, m["invalidPhoneNumbers"])
	require.Equal(t, written{campaigns: 2, messages: 5}, e.written(e.id))
	d = e.do("GET", "/api/v1/campaigns/"+m["campaignId"].(string), nil).obj()
	require.Equal(t, "Chat", d["channel"])
	require.Equal(t, float64(e.chat), d["chatServiceId"])
}

func TestDirectSendErrors(t *testing.T) {
	e := newEnv(t)
	other := e.newCompany(t, "Other")
	unapproved, err := e.acc.RegisterSMSSender(t.Context(), e.id, "WAITING")
	require.NoError(t, err)
	sms := func(kv ...any) map[string]any {
		b := map[string]any{"messageContent": "hi", "smsSenderId": e.sender, "recipients": recipients(2)}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	chat := func(kv ...any) map[string]any {
		b := map[string]any{"messageContent": "hi", "chatServiceId": e.chat, "recipients": recipients(2)}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	cases := []struct {
		name, path string
		body       any
		error      string
		field      string
	}{
		{"unknown sender", "/api/v1/sms/send", sms("smsSenderId", 9999), "Invalid SMS Sender", ""},
		{"unapproved sender", "/api/v1/sms/send", sms("smsSenderId", unapproved.ID), "Invalid SMS Sender", ""},
		{"another company's sender", "/api/v1/sms/send", sms("smsSenderId", other.sender), "Invalid SMS Sender", ""},
		{"sender missing", "/api/v1/sms/send", sms("smsSenderId", nil), "Bad Request", "smsSenderId"},
		{"sender of the wrong type", "/api/v1/sms/send", sms("smsSenderId", "ACME"), "Bad Request", "smsSenderId"},
		{"content missing", "/api/v1/sms/send", sms("messageContent", ""), "Bad Request", "messageContent"},
		{"sms content too long", "/api/v1/sms/send", sms("messageContent", strings.Repeat("x", 1601)), "Bad Request", "messageContent"},
		{"no valid phone numbers", "/api/v1/sms/send", sms("recipients", []map[string]any{{"phoneNumber": "1"}, {"phoneNumber": "abc"}}), "No valid phone numbers", ""},
		{"no valid chat phone numbers", "/api/v1/chat/send-text", chat("recipients", []map[string]any{{"phoneNumber": "+44 7700 900001"}, {"phoneNumber": "4477009000011234"}}), "No valid phone numbers", ""},
		{"externalUserId too long", "/api/v1/sms/send", sms("recipients", []map[string]any{{"phoneNumber": phone(1), "externalUserId": strings.Repeat("u", 101)}}), "Bad Request", "recipients[0].externalUserId"},
		{"recipient placeholders", "/api/v1/sms/send", sms("recipients", []map[string]any{{"phoneNumber": phone(1), "placeholders": map[string]any{"a": "b"}}}), "Bad Request", "recipients[0].placeholders"},
		{"request placeholders", "/api/v1/chat/send-text", chat("placeholders", map[string]any{"a": "b"}), "Bad Request", "placeholders"},
		{"recipients missing", "/api/v1/sms/send", sms("recipients", nil), "Bad Request", "recipients"},
		{"recipients empty", "/api/v1/chat/send-text", chat("recipients", []any{}), "Bad Request", "recipients"},
		{"recipients not an array", "/api/v1/chat/send-text", chat("recipients", map[string]any{"phoneNumber": phone(1)}), "Bad Request", "recipients"},
		{"recipient not an object", "/api/v1/chat/send-text", chat("recipients", []any{phone(1)}), "Bad Request", "recipients[0]"},
		{"unknown chat service", "/api/v1/chat/send-text", chat("chatServiceId", 9999), "Invalid Chat Service", ""},
		{"another company's chat service", "/api/v1/chat/send-text", chat("chatServiceId", other.chat), "Invalid Chat Service", ""},
		{"chat content too long", "/api/v1/chat/send-text", chat("messageContent", strings.Repeat("x", 1001)), "Bad Request", "messageContent"},
		{"fallback unsupported characters", "/api/v1/chat/send-text", chat("smsFallbackText", "Привет", "smsFallbackSenderId", e.sender), "SMS fallback text contains unsupported characters", ""},
		{"fallback sender required", "/api/v1/chat/send-text", chat("smsFallbackText", "hello"), "SMS fallback sender required", ""},
		{"fallback sender unknown", "/api/v1/chat/send-text", chat("smsFallbackText", "hello", "smsFallbackSenderId", 9999), "Invalid SMS fallback sender", ""},
		{"fallback sender unapproved", "/api/v1/chat/send-text", chat("smsFallbackText", "hello", "smsFallbackSenderId", unapproved.ID), "Invalid SMS fallback sender", ""},
		{"fallback sender of another company", "/api/v1/chat/send-text", chat("smsFallbackText", "hello", "smsFallbackSenderId", other.sender), "Invalid SMS fallback sender", ""},
		{"fallback text too long", "/api/v1/chat/send-text", chat("smsFallbackText", strings.Repeat("x", 1601), "smsFallbackSenderId", e.sender), "Bad Request", "smsFallbackText"},
		{"malformed JSON", "/api/v1/sms/send", `{"messageContent": "hi", "recipients": [`, "Bad Request", ""},
		{"duplicate recipients", "/api/v1/sms/send", `{"recipients": [], "recipients": []}`, "Bad Request", "recipients"},
		{"not an object", "/api/v1/sms/send", `"hi"`, "Bad Request", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, e.doT(t, "POST", c.path, c.body), http.StatusBadRequest, c.error, c.field)
			require.Equal(t, 0, e.pending(e.id), "a failed request admits nothing")
			require.Equal(t, written{}, e.written(e.id), "a failed request creates no campaign, hidden or not, and no message")
		})
	}
}

func TestBulkSendErrors(t *testing.T) {
	e := newEnv(t, withLimits(campaignLimits(0, 5)))
	sms := e.smsTemplate("sms", "x")
	chat := e.chatTemplate("chat", "x", nil)
	other := e.newCompany(t, "Other")
	theirs := e.smsTemplate("theirs", "x", withKey(other.key))
	cases := []struct {
		name, path string
		body       any
		status     int
		error      string
		field      string
	}{
		{"chat template on sms", "/api/v1/sms/promotional", map[string]any{"templateId": chat, "recipients": recipients(1)}, 400, "Invalid template channel type", ""},
		{"sms template on chat", "/api/v1/chat/send", map[string]any{"templateId": sms, "recipients": recipients(1)}, 400, "Invalid template channel type", ""},
		{"no valid phone numbers", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": []map[string]any{{"phoneNumber": "+1"}}}, 400, "No valid phone numbers", ""},
		{"no valid chat phone numbers", "/api/v1/chat/send", map[string]any{"templateId": chat, "recipients": []map[string]any{{"phoneNumber": "+1"}, {"phoneNumber": "(0)7700 900001"}}}, 400, "No valid phone numbers", ""},
		{"too many recipients", "/api/v1/chat/send", map[string]any{"templateId": chat, "recipients": recipients(6)}, 400, "Too many recipients", ""},
		{"unknown template", "/api/v1/sms/promotional", map[string]any{"templateId": "0190f5c0-0000-7000-8000-000000000000", "recipients": recipients(1)}, 404, "Not Found", ""},
		{"another company's template", "/api/v1/sms/promotional", map[string]any{"templateId": theirs, "recipients": recipients(1)}, 404, "Not Found", ""},
		{"template id missing", "/api/v1/sms/promotional", map[string]any{"recipients": recipients(1)}, 400, "Bad Request", "templateId"},
		{"template id not a uuid", "/api/v1/sms/promotional", map[string]any{"templateId": "x", "recipients": recipients(1)}, 400, "Bad Request", "templateId"},
		{"phone number of the wrong type", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": []any{map[string]any{"phoneNumber": phone(1)}, map[string]any{"phoneNumber": 447700900000}}}, 400, "Bad Request", "recipients[1].phoneNumber"},
		{"recipient placeholder of the wrong type", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": []any{map[string]any{"phoneNumber": phone(1), "placeholders": map[string]any{"a": []int{1}}}}}, 400, "Bad Request", "recipients[0].placeholders.a"},
		{"request placeholder of the wrong type", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(1), "placeholders": map[string]any{"a": map[string]any{}}}, 400, "Bad Request", "placeholders.a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			requireError(t, e.doT(t, "POST", c.path, c.body), c.status, c.error, c.field)
			e.wait()
			require.Equal(t, 0, e.pending(e.id))
			require.Equal(t, written{}, e.written(e.id))
		})
	}
}

func TestPendingCapacity(t *testing.T) {
	e := newEnv(t, withLimits(campaignLimits(3, 0)))
	sms := e.smsTemplate("sms", "x")
	chat := e.chatTemplate("chat", "x", nil)
	tx := e.transactional("sms", sms)
	chatTx := e.transactional("chat", chat)
	require.Equal(t, http.StatusAccepted, e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(2)}).Code)
	e.wait()
	require.Equal(t, written{campaigns: 3, messages: 2}, e.written(e.id))

	check := func(r response, pending, requested int) {
		t.Helper()
		require.Equal(t, http.StatusTooManyRequests, r.Code, "body: %s", r.Body)
		m := r.obj()
		requireKeys(t, m, "error", "message", "currentPending", "requestedCount", "maxAllowed", "availableCapacity", "retryAfterSeconds",
			"drainRatePerSecond", "heldBy")
		require.Equal(t, float64(0), m["drainRatePerSecond"], "nothing is sent in this test")
		held := map[string]any{"Ready": float64(2)}
		if pending == 3 {
			held["InProgress"] = float64(1)
			require.Contains(t, m["message"], "nothing was sent in the last")
		} else {
			require.Contains(t, m["message"], "nothing is being sent")
		}
		require.Equal(t, held, m["heldBy"])
		require.Contains(t, m["message"], "2 of the pending messages belong to Ready or Paused campaigns")
		require.Equal(t, "Too many pending messages", m["error"])
		require.Equal(t, float64(pending), m["currentPending"])
		require.Equal(t, float64(requested), m["requestedCount"])
		require.Equal(t, float64(3), m["maxAllowed"])
		require.Equal(t, float64(3-pending), m["availableCapacity"])
		require.Equal(t, float64(30), m["retryAfterSeconds"])
		require.Equal(t, "30", r.Header.Get("Retry-After"))
	}
	check(e.do("POST", "/api/v1/sms/promotional", map[string]any{"templateId": sms, "recipients": recipients(2)}), 2, 2)
	check(e.do("POST", "/api/v1/chat/send", map[string]any{"templateId": chat, "recipients": recipients(2)}), 2, 2)
	check(e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "x", "smsSenderId": e.sender, "recipients": recipients(2)}), 2, 2)
	check(e.do("POST", "/api/v1/chat/send-text", map[string]any{"messageContent": "x", "chatServiceId": e.chat, "recipients": recipients(2)}), 2, 2)
	e.wait()
	require.Equal(t, written{campaigns: 3, messages: 2}, e.written(e.id), "the 429s created no campaign, hidden or not, and no message")
	require.Equal(t, 3, e.campaignCount(e.id))
	require.Equal(t, 2, e.pending(e.id))

	require.Equal(t, http.StatusAccepted, e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(9)}).Code)
	check(e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(8)}), 3, 1)
	check(e.do("POST", "/api/v1/chat/campaigns/"+chatTx+"/messages", map[string]any{"phoneNumber": phone(7)}), 3, 1)
	require.Equal(t, 0, e.messageCount(e.id, phone(8)))
	require.Equal(t, 0, e.messageCount(e.id, phone(7)))
	require.Equal(t, written{campaigns: 3, messages: 3}, e.written(e.id), "only the accepted add-message wrote")
	require.Equal(t, 3, e.pending(e.id))
	d := e.do("GET", "/api/v1/campaigns/"+chatTx, nil).obj()
	require.Equal(t, float64(0), d["totalMessages"], "the refused chat message was not added to its campaign")
}

// TestTooManyRecipientsIsNever429 sends 200,001 recipients (one past the limit) to
// every sending endpoint, for a company whose capacity they would also
// exceed: the recipient limit wins. At 200,000, capacity decides.
func TestTooManyRecipientsIsNever429(t *testing.T) {
	e := newEnv(t, withLimits(campaignLimits(10, 0)), func(c *envConfig) { c.noVerify = true })
	sms := e.smsTemplate("sms", "x")
	chat := e.chatTemplate("chat", "x", nil)
	over, at := recipientsJSON(200_001)
	cases := []struct{ name, path, fields string }{
		{"sms promotional", "/api/v1/sms/promotional", `"templateId":"` + sms + `"`},
		{"chat send", "/api/v1/chat/send", `"templateId":"` + chat + `"`},
		{"sms send", "/api/v1/sms/send", `"messageContent":"x","smsSenderId":` + strconv.FormatInt(e.sender, 10)},
		{"chat send-text", "/api/v1/chat/send-text", `"messageContent":"x","chatServiceId":` + strconv.FormatInt(e.chat, 10)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.doT(t, "POST", c.path, "{"+c.fields+`,"recipients":`+over+"}")
			requireError(t, r, http.StatusBadRequest, "Too many recipients", "")
			require.Contains(t, r.obj()["message"], "200000")
			r = e.doT(t, "POST", c.path, "{"+c.fields+`,"recipients":`+at+"}")
			require.Equal(t, http.StatusTooManyRequests, r.Code, "at the limit, capacity decides: %s", r.Body)
			require.Equal(t, 0, e.pending(e.id))
			require.Equal(t, written{}, e.written(e.id))
		})
	}
}

// recipientsJSON returns a JSON array of n recipients, and the same array
// without its last element, built in one pass.
func recipientsJSON(n int) (all, allButLast string) {
	b := make([]byte, 0, n*30)
	b = append(b, '[')
	last := 0
	for i := range n {
		if i > 0 {
			last = len(b)
			b = append(b, ',')
		}
		b = append(b, `{"phoneNumber":"+447700`...)
		b = strconv.AppendInt(b, int64(1_000_000+i), 10) // 13 digits in all
		b = append(b, `"}`...)
	}
	s := string(append(b, ']'))
	return s, s[:last] + "]"
}

// endlessRecipients is a request body whose recipients array goes on far
// longer than any limit; it counts what was read of it.
type endlessRecipients struct {
	head, tail string
	n, max     int
	buf        []byte
	read       atomic.Int64
}

func (b *endlessRecipients) Read(p []byte) (int, error) {
	for len(b.buf) < len(p) {
		switch {
		case b.head != "":
			b.buf = append(b.buf, b.head...)
			b.head = ""
		case b.n < b.max:
			if b.n > 0 {
				b.buf = append(b.buf, ',')
			}
			b.buf = append(b.buf, `{"phoneNumber":"+447700900`+strconv.Itoa(100+b.n%900)+`"}`...)
			b.n++
		case b.tail != "":
			b.buf = append(b.buf, b.tail...)
			b.tail = ""
		default:
			if len(b.buf) == 0 {
				return 0, io.EOF
			}
			n := copy(p, b.buf)
			b.buf = b.buf[n:]
			b.read.Add(int64(n))
			return n, nil
		}
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	b.read.Add(int64(n))
	return n, nil
}

func TestRecipientsAreStreamed(t *testing.T) {
	e := newEnv(t, withLimits(campaignLimits(0, 100)), func(c *envConfig) { c.noVerify = true })
	sms := e.smsTemplate("sms", "x")
	body := &endlessRecipients{head: `{"templateId":"` + sms + `","recipients":[`, tail: "]}", max: 1_000_000}
	req := httptest.NewRequest("POST", "/api/v1/sms/promotional", body)
	req.Header.Set("X-API-Key", e.key)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusBadRequest, rec.Code, "body: %s", rec.Body)
	require.Contains(t, rec.Body.String(), `"Too many recipients"`)
	require.Less(t, body.read.Load(), int64(64<<10), "the server stopped reading right after the element past the limit")
	require.Equal(t, 0, e.campaignCount(e.id))
}

func TestRequestBodyLimit(t *testing.T) {
	e := newEnv(t, func(c *envConfig) { c.maxBody = 1 << 10 })
	r := e.do("POST", "/api/v1/sms/send", map[string]any{"messageContent": "x", "smsSenderId": e.sender, "recipients": recipients(100)})
	requireError(t, r, http.StatusRequestEntityTooLarge, "Request Entity Too Large", "")
	r = e.do("POST", "/api/v1/templates/sms", map[string]any{"name": "n", "templateContent": strings.Repeat("x", 2000)})
	requireError(t, r, http.StatusRequestEntityTooLarge, "Request Entity Too Large", "")
	require.Equal(t, 0, e.pending(e.id))
	require.Equal(t, written{}, e.written(e.id))
}
