package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testControl kills herald serve with SIGKILL while a campaign is
// scheduled and after a send made with an Idempotency-Key, lets the
// scheduled time pass, and starts it again on the same database: the
// campaign starts at once, and the send retried with its key is answered
// as the first time without a second message.
func testControl(t *testing.T, bin, dbURL string) {
	env := heraldEnv("HERALD_DATABASE_URL="+dbURL, "HERALD_ADMIN_TOKEN=admin-secret")
	h := startHerald(t, bin, env, "serve")
	co := provision(t, h.client(""), "admin-secret")
	api := h.client(co.key)

	var tpl struct{ ID string }
	api.api("POST", "/templates/sms", fmt.Sprintf(`{"name":"promo","templateContent":"Hi {{name}}","smsSenderId":%d}`, co.senderID), http.StatusCreated, &tpl)
	sent := api.bulk("/sms/promotional", tpl.ID, numbers(20, 0), "")
	api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Ready" })
	sendAt := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
	var scheduled struct {
		Status      string
		ScheduledAt time.Time
	}
	api.api("POST", "/campaigns/"+sent.CampaignID+"/start", fmt.Sprintf(`{"sendAt":%q}`, sendAt.Format(time.RFC3339Nano)), http.StatusOK, &scheduled)
	require.Equal(t, "Ready", scheduled.Status)
	require.True(t, sendAt.Equal(scheduled.ScheduledAt), "%s, %s", sendAt, scheduled.ScheduledAt)

	direct := fmt.Sprintf(`{"messageContent":"Your code is 1234","smsSenderId":%d,"recipients":[{"phoneNumber":"+447700900999"}]}`, co.senderID)
	first, firstHeader := postWithKey(t, api, "/api/v1/sms/send", "otp-42", direct)
	require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
	require.Empty(t, firstHeader.Get("Idempotent-Replayed"))

	require.NoError(t, h.cmd.Process.Kill())
	<-h.exited
	time.Sleep(time.Until(sendAt) + 500*time.Millisecond)

	h = startHerald(t, bin, env, "serve")
	api = h.client(co.key)
	restarted := time.Now()
	c := api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status != "Ready" })
	require.Equal(t, "InProgress", c.Status, "started by the process that came back")
	require.Less(t, time.Since(restarted), 5*time.Second)
	require.False(t, c.StartedAt.Before(sendAt), "started at %s, scheduled at %s", c.StartedAt, sendAt)
	require.True(t, sendAt.Equal(*c.ScheduledAt))

	again, againHeader := postWithKey(t, api, "/api/v1/sms/send", "otp-42", direct)
	require.Equal(t, first.status, again.status)
	require.JSONEq(t, first.body, again.body)
	require.Equal(t, "true", againHeader.Get("Idempotent-Replayed"))
	require.Len(t, api.messages("447700900999"), 1, "the retry after the restart sent nothing")
	other, _ := postWithKey(t, api, "/api/v1/sms/send", "otp-42", strings.Replace(direct, "1234", "9999", 1))
	require.Equal(t, http.StatusUnprocessableEntity, other.status, "%s", other.body)
	h.stop()
}

// answer is a status and a body.
type answer struct {
	status int
	body   string
}

// postWithKey posts body to path with an Idempotency-Key.
func postWithKey(t *testing.T, c *client, path, key, body string) (answer, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", c.key)
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, string(data)}, resp.Header
}

// testPauseThenKill pauses a campaign mid-send and kills herald serve with
// SIGKILL right after the pause answered, then starts it again on the same
// database: the pause holds (the campaign stays Paused, the SMSC gets no
// more submits, the messages the dead process had claimed go back to
// Pending and stay there) until a resume, after which the campaign
// completes with every message delivered.
func testPauseThenKill(t *testing.T, bin, dbURL string) {
	const n = 1500
	control := freeAddr(t)
	smsc := startProcess(t, bin, heraldEnv(), smscLine, "simulate", "smsc", "-addr", "127.0.0.1:0", "-control", control)
	accepted := func() uint64 {
		t.Helper()
		resp, err := http.Get("http://" + control + "/stats")
		require.NoError(t, err)
		defer resp.Body.Close()
		var st struct{ Accepted uint64 }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		return st.Accepted
	}
	env := heraldEnv("HERALD_DATABASE_URL="+dbURL, "HERALD_ADMIN_TOKEN=admin-secret", "HERALD_SMPP_ADDR="+smsc.ready[1],
		"HERALD_SMPP_MAX_RATE=300", "HERALD_CLAIM_LEASE=2s")
	h := startHerald(t, bin, env, "serve")
	co := provision(t, h.client(""), "admin-secret")
	api := h.client(co.key)
	var tpl struct{ ID string }
	api.api("POST", "/templates/sms", fmt.Sprintf(`{"name":"promo","templateContent":"Hi {{name}}","smsSenderId":%d}`, co.senderID), http.StatusCreated, &tpl)
	phones := numbers(n, 1)
	failing := 0 // numbers ending 0001, 0002, 0003: the simulator's failed receipts
	for _, p := range phones {
		if e := p[len(p)-4:]; e == "0001" || e == "0002" || e == "0003" {
			failing++
		}
	}
	sent := api.bulk("/sms/promotional", tpl.ID, phones, "")
	api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Ready" })
	api.api("POST", "/campaigns/"+sent.CampaignID+"/start", "", http.StatusOK, nil)
	for deadline := time.Now().Add(30 * time.Second); accepted() < 300 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	api.api("POST", "/campaigns/"+sent.CampaignID+"/pause", "", http.StatusOK, nil)
	require.NoError(t, h.cmd.Process.Kill())
	<-h.exited
	time.Sleep(500 * time.Millisecond) // the submits in flight at the kill are answered
	atKill := accepted()

	h = startHerald(t, bin, env, "serve")
	api = h.client(co.key)
	// Past the claim lease: the dead process's claims are back to Pending.
	time.Sleep(4 * time.Second)
	c := api.campaign(sent.CampaignID)
	require.Equal(t, "Paused", c.Status, "the pause outlived the kill")
	require.Equal(t, atKill, accepted(), "nothing submitted after the kill while paused")
	require.Positive(t, c.PendingCount, "messages wait")
	require.Less(t, atKill, uint64(n), "the pause came before the end")

	api.api("POST", "/campaigns/"+sent.CampaignID+"/resume", "", http.StatusOK, nil)
	c = api.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Completed" && c.DeliveredCount+c.FailedCount == n })
	require.Equal(t, failing, c.FailedCount, "the numbers the simulator fails, nothing else")
	t.Logf("%d of %d submitted before the pause and kill, %d in all after the resume (duplicates: the claims the dead process left)",
		atKill, n, accepted())
	require.GreaterOrEqual(t, accepted(), uint64(n))
	require.Contains(t, h.stderr.String(), "HERALD_ADMIN_TOKEN is short", "a 12-character admin token is warned about")
	require.Contains(t, h.stderr.String(), `"msg":"campaign completed","campaign":"`+sent.CampaignID+`","name":"promo `,
		"the log names the campaign completed")
	require.NotContains(t, h.stderr.String(), `"msg":"http request"`, "requests are logged at debug only")
	h.stop()
}
