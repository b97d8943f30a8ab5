package server_test

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"net/http/httptest"
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

// TestExportCSV: GET /campaigns/{id}/messages.csv gives a header row and
// one row per message, in the order they were made, with the statuses and
// texts of GET /messages; a text that a spreadsheet would take for a
// formula is quoted; another company's or an unknown campaign is a 404,
// and a campaign without messages the header alone.
func TestExportCSV(t *testing.T) {
	e := newEnv(t)
	sms := e.smsTemplate("otp", "{{code}}")
	tx := e.transactional("sms", sms)
	var ids []string
	for i, code := range []string{"1234", "=HYPERLINK(\"http://x\")", "-5, \"quoted\"\nline"} {
		r := e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages", map[string]any{"phoneNumber": phone(i + 1),
			"externalUserId": map[bool]string{true: "@", false: ""}[i == 1] + "user-" + code[:1], "placeholders": map[string]any{"code": code}})
		require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
		ids = append(ids, r.obj()["messageId"].(string))
	}
	r := e.do("GET", "/api/v1/campaigns/"+tx+"/messages.csv", nil)
	require.Equal(t, http.StatusOK, r.Code, "body: %s", r.Body)
	require.Equal(t, "text/csv; charset=utf-8", r.Header.Get("Content-Type"))
	require.Equal(t, `attachment; filename="campaign-`+tx+`-messages.csv"`, r.Header.Get("Content-Disposition"))
	rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"id", "phoneNumber", "externalUserId", "channelType", "status", "details", "smsErrorCode",
		"fallbackFor", "messageContent", "createdAt", "sentAt", "deliveredAt", "updatedAt", "route"}, rows[0])
	require.Len(t, rows, 4)
	for i, row := range rows[1:] {
		require.Equal(t, ids[i], row[0], "in the order they were made")
		m := e.do("GET", "/api/v1/messages/"+ids[i], nil).obj()
		require.Equal(t, m["phoneNumber"], row[1])
		require.Equal(t, m["channelType"], row[3])
		require.Equal(t, "Pending", row[4])
		require.Equal(t, m["createdAt"], row[9])
		require.Empty(t, row[10])
	}
	require.Equal(t, "1234", rows[1][8])
	require.Equal(t, `'=HYPERLINK("http://x")`, rows[2][8], "a formula is quoted")
	require.Equal(t, "'-5, \"quoted\"\nline", rows[3][8])
	require.Equal(t, "'@user-=", rows[2][2], "the external user id is guarded too")
	require.Equal(t, "user-1", rows[1][2])

	other := e.newCompany(t, "Other")
	requireError(t, e.do("GET", "/api/v1/campaigns/"+tx+"/messages.csv", nil, withKey(other.key)), http.StatusNotFound, "Not Found", "")
	requireError(t, e.do("GET", "/api/v1/campaigns/0190f5c0-0000-7000-8000-000000000000/messages.csv", nil), http.StatusNotFound, "Not Found", "")
	empty := e.transactional("sms", sms)
	r = e.do("GET", "/api/v1/campaigns/"+empty+"/messages.csv", nil)
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, "id,phoneNumber,externalUserId,channelType,status,details,smsErrorCode,fallbackFor,messageContent,createdAt,sentAt,deliveredAt,updatedAt,route\n", string(r.Body))
}

// heldExport lets an export read its first batch and holds the next one
// until release is closed.
type heldExport struct {
	*memstore.Store
	calls   atomic.Int32
	release chan struct{}
}

func (s *heldExport) CampaignMessagesAfter(ctx context.Context, companyID, campaignID, after messaging.ID, limit int) ([]messaging.Message, error) {
	if s.calls.Add(1) == 2 {
		<-s.release
	}
	return s.Store.CampaignMessagesAfter(ctx, companyID, campaignID, after, limit)
}

// TestExportStreams: the export's first rows reach the client while the
// rest is still being read from the store: the answer is streamed, not
// put together in memory; the whole of it comes once the store goes on.
func TestExportStreams(t *testing.T) {
	held := &heldExport{release: make(chan struct{})}
	e := newEnv(t, func(c *envConfig) {
		c.wrap = func(s *memstore.Store) appStore { held.Store = s; return held }
		c.limits = campaign.Limits{MaxPending: 10_000}
		c.noVerify = true
	})
	sms := e.smsTemplate("promo", "Hi")
	all, _ := recipientsJSON(2500)
	r := e.do("POST", "/api/v1/sms/promotional", `{"templateId":"`+sms+`","recipients":`+all+`}`)
	require.Equal(t, http.StatusAccepted, r.Code, "body: %s", r.Body)
	id := r.obj()["campaignId"].(string)
	e.wait()

	srv := httptest.NewServer(e.h)
	defer srv.Close()
	var release sync.Once
	free := func() { release.Do(func() { close(held.release) }) }
	defer free() // before srv.Close: a failed assertion must not leave the handler held
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/campaigns/"+id+"/messages.csv", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", e.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "the answer starts while the store is held")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rd := csv.NewReader(resp.Body)
	for range 1001 { // the header and the first batch
		_, err := rd.Read()
		require.NoError(t, err)
	}
	// The handler asks for the second batch once the first is written:
	// it is held there.
	require.Eventually(t, func() bool { return held.calls.Load() == 2 }, 10*time.Second, time.Millisecond)
	free()
	rest, err := rd.ReadAll()
	require.NoError(t, err)
	require.Len(t, rest, 1500)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
}
