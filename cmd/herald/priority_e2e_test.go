package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// simStats returns the submits an SMSC simulator accepted so far, through
// its control address.
func simStats(t *testing.T, control string) uint64 {
	t.Helper()
	resp, err := http.Get("http://" + control + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st struct{ Accepted uint64 }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st.Accepted
}

// provisionNamed sets up a second company, name, with an approved sender
// sender.
func provisionNamed(t *testing.T, c *client, token, name, sender string) company {
	t.Helper()
	admin := map[string]string{"Authorization": "Bearer " + token}
	var co struct{ ID string }
	c.call("POST", "/admin/v1/companies", admin, fmt.Sprintf(`{"name":%q}`, name), http.StatusCreated, &co)
	var key struct{ APIKey string }
	c.call("POST", "/admin/v1/companies/"+co.ID+"/api-keys", admin, "", http.StatusCreated, &key)
	c.call("POST", "/admin/v1/companies/"+co.ID+"/activate", admin, "", http.StatusOK, nil)
	var sd struct{ ID int64 }
	c.call("POST", "/admin/v1/companies/"+co.ID+"/sms-senders", admin, fmt.Sprintf(`{"senderId":%q}`, sender), http.StatusCreated, &sd)
	c.call("POST", fmt.Sprintf("/admin/v1/sms-senders/%d/approve", sd.ID), admin, "", http.StatusOK, nil)
	return company{id: co.ID, key: key.APIKey, senderID: sd.ID}
}

// testCappedBulkAndPause runs a 3,000-SMS bulk of one company through a
// connector capped at 50 a second (a route of its own, to its own SMSC):
// another company's direct SMS through the idle default connector reach
// their SMSC within a second of their 202 each (they waited for the bulk's
// last claims before); then the bulk is paused, and the capped SMSC gets
// only the few submits on the wire at the pause's answer (up to 256 came
// after it before).
func testCappedBulkAndPause(t *testing.T, bin, dbURL string) {
	const n = 3000
	slowCtl, fastCtl := freeAddr(t), freeAddr(t)
	slow := startProcess(t, bin, heraldEnv(), smscLine, "simulate", "smsc", "-addr", "127.0.0.1:0", "-control", slowCtl)
	fast := startProcess(t, bin, heraldEnv(), smscLine, "simulate", "smsc", "-addr", "127.0.0.1:0", "-control", fastCtl)
	env := heraldEnv("HERALD_DATABASE_URL="+dbURL, "HERALD_ADMIN_TOKEN=admin-secret-token", "HERALD_SMPP_ADDR="+fast.ready[1])
	h := startHerald(t, bin, env, "serve")
	c := h.client("")
	a := provision(t, c, "admin-secret-token")
	b := provisionNamed(t, c, "admin-secret-token", "Beta", "BETA")
	admin := map[string]string{"Authorization": "Bearer admin-secret-token"}
	c.call("POST", "/admin/v1/smpp-connectors", admin, fmt.Sprintf(`{"name":"capped","addr":%q,"systemId":"herald","maxPerSecond":50}`, slow.ready[1]),
		http.StatusCreated, nil)
	c.call("POST", "/admin/v1/routes", admin, fmt.Sprintf(`{"position":1,"companyIds":[%q],"connectors":[{"name":"capped"}]}`, a.id),
		http.StatusCreated, nil)
	require.Eventually(t, func() bool {
		var st struct{ State struct{ BindsUp int } }
		c.call("GET", "/admin/v1/smpp-connectors/capped", admin, "", http.StatusOK, &st)
		return st.State.BindsUp == 1
	}, 15*time.Second, 50*time.Millisecond, "the capped connector bound")
	time.Sleep(2500 * time.Millisecond) // the route read by the router

	apiA, apiB := h.client(a.key), h.client(b.key)
	var tpl struct{ ID string }
	apiA.api("POST", "/templates/sms", fmt.Sprintf(`{"name":"promo","templateContent":"Hi {{name}}","smsSenderId":%d}`, a.senderID), http.StatusCreated, &tpl)
	sent := apiA.bulk("/sms/promotional", tpl.ID, numbers(n, 1), "")
	apiA.waitCampaign(sent.CampaignID, func(c campaignJSON) bool { return c.Status == "Ready" })
	apiA.api("POST", "/campaigns/"+sent.CampaignID+"/start", "", http.StatusOK, nil)
	require.Eventually(t, func() bool { return simStats(t, slowCtl) >= 50 }, 30*time.Second, 10*time.Millisecond, "the bulk under way")
	time.Sleep(time.Second) // the capped connector has had time to fill what it may

	var latencies []time.Duration
	for i := range 5 {
		before := simStats(t, fastCtl)
		start := time.Now()
		apiB.api("POST", "/sms/send", fmt.Sprintf(`{"messageContent":"Your code is %04d","smsSenderId":%d,"recipients":[{"phoneNumber":"+4479330%05d"}]}`,
			i, b.senderID, i), http.StatusAccepted, nil)
		for simStats(t, fastCtl) == before {
			require.Less(t, time.Since(start), 30*time.Second, "direct SMS %d never reached its SMSC", i)
			time.Sleep(2 * time.Millisecond)
		}
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	t.Logf("direct SMS through the idle connector, beside a bulk capped at 50/s: request to SMSC %v (sorted)", latencies)
	require.Less(t, latencies[len(latencies)-1], time.Second, "a direct SMS through an idle connector within a second")
	require.Less(t, simStats(t, slowCtl), uint64(n/2), "the bulk still runs")

	apiA.api("POST", "/campaigns/"+sent.CampaignID+"/pause", "", http.StatusOK, nil)
	atPause := simStats(t, slowCtl)
	time.Sleep(2 * time.Second)
	late := simStats(t, slowCtl) - atPause
	got := apiA.campaign(sent.CampaignID)
	t.Logf("pause: %d submits reached the capped SMSC after the pause answered (%d before); %d messages pending",
		late, atPause, got.PendingCount)
	require.LessOrEqual(t, late, uint64(5), "only what was on the wire at the pause")
	require.Equal(t, "Paused", got.Status)
	require.Equal(t, n-int(atPause+late), got.PendingCount, "the claimed ones went back to Pending")
	require.NoError(t, h.cmd.Process.Kill())
	<-h.exited
}
