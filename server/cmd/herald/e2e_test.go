package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBinaryEndToEnd builds the herald binary, runs `herald serve --demo`
// on a SQLite file, provisions a company through the admin API and sends a
// bulk SMS campaign through the real SMPP transport to the SMSC
// simulator: the campaign goes Queuing -> Ready -> InProgress ->
// Completed, and each message ends as the simulator's outcome for its
// number says. SIGTERM then stops the process with exit code 0.
func TestBinaryEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "herald")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	addr := freePort(t)
	cmd := exec.Command(bin, "serve", "--demo")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HERALD_ADDR="+addr, "HERALD_DATABASE_URL=sqlite://"+filepath.Join(dir, "herald.db"),
		"HERALD_ADMIN_TOKEN=e2e-admin-token", "HERALD_LOG_LEVEL=warn")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("herald stderr:\n%s", stderr.String())
		}
	})

	// The demo prints its key once it is set up.
	keys := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`om_[A-Za-z0-9]{32}`)
		for sc.Scan() {
			if k := re.FindString(sc.Text()); k != "" {
				keys <- k
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case demoKey := <-keys:
		require.NotEmpty(t, demoKey)
	case err := <-exited:
		t.Fatalf("herald exited: %v\n%s", err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("herald printed no demo key")
	}

	base := "http://" + addr
	c := &apiClient{t: t, base: base}

	// A company of its own, through the admin API.
	admin := "Bearer e2e-admin-token"
	var company struct {
		ID     string `json:"id"`
		Active bool   `json:"active"`
	}
	c.do("POST", "/admin/v1/companies", "Authorization", admin, `{"name":"Acme"}`, http.StatusCreated, &company)
	require.False(t, company.Active)
	var key struct {
		APIKey string `json:"apiKey"`
	}
	c.do("POST", "/admin/v1/companies/"+company.ID+"/api-keys", "Authorization", admin, "", http.StatusCreated, &key)
	c.key = key.APIKey
	c.api("GET", "/sms-senders", "", http.StatusServiceUnavailable, nil) // not active yet
	c.do("POST", "/admin/v1/companies/"+company.ID+"/activate", "Authorization", admin, "", http.StatusOK, nil)
	var sender struct {
		ID int64 `json:"id"`
	}
	c.do("POST", "/admin/v1/companies/"+company.ID+"/sms-senders", "Authorization", admin, `{"senderId":"ACME"}`, http.StatusCreated, &sender)
	c.do("POST", fmt.Sprintf("/admin/v1/sms-senders/%d/approve", sender.ID), "Authorization", admin, "", http.StatusOK, nil)

	var tpl struct {
		ID string `json:"id"`
	}
	c.api("POST", "/templates/sms", fmt.Sprintf(`{"name":"promo","templateContent":"Hello {{name}}","smsSenderId":%d}`, sender.ID), http.StatusCreated, &tpl)

	const n = 300
	var recipients []string
	for i := range n {
		recipients = append(recipients, fmt.Sprintf(`{"phoneNumber":"+4477009%05d","placeholders":{"name":"R%d"}}`, i, i))
	}
	recipients = append(recipients, `{"phoneNumber":"12-34"}`)
	var sent struct {
		CampaignID   string   `json:"campaignId"`
		MessageCount int      `json:"messageCount"`
		Skipped      int      `json:"skippedCount"`
		Invalid      []string `json:"invalidPhoneNumbers"`
		Status       string   `json:"status"`
	}
	c.api("POST", "/sms/promotional", fmt.Sprintf(`{"templateId":%q,"recipients":[%s]}`, tpl.ID, strings.Join(recipients, ",")), http.StatusAccepted, &sent)
	require.Equal(t, n, sent.MessageCount)
	require.Equal(t, []string{"12-34"}, sent.Invalid)
	require.Equal(t, "Queuing", sent.Status)

	type campaignJSON struct {
		Status         string `json:"status"`
		TotalMessages  int    `json:"totalMessages"`
		DeliveredCount int    `json:"deliveredCount"`
		FailedCount    int    `json:"failedCount"`
		PendingCount   int    `json:"pendingCount"`
	}
	waitFor := func(status string) campaignJSON {
		var got campaignJSON
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			c.api("GET", "/campaigns/"+sent.CampaignID, "", http.StatusOK, &got)
			if got.Status == status {
				return got
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("campaign still %s, want %s", got.Status, status)
		return got
	}
	ready := waitFor("Ready")
	require.Equal(t, n, ready.TotalMessages)
	require.Equal(t, n, ready.PendingCount)

	var started struct {
		Status string `json:"status"`
	}
	c.api("POST", "/campaigns/"+sent.CampaignID+"/start", "", http.StatusOK, &started)
	require.Equal(t, "InProgress", started.Status)
	done := waitFor("Completed")
	// Numbers ...00001, ...00002, ...00003 fail; every other is delivered
	// (once its receipt is applied, which may follow completion).
	deadline := time.Now().Add(30 * time.Second)
	for done.DeliveredCount+done.FailedCount < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		c.api("GET", "/campaigns/"+sent.CampaignID, "", http.StatusOK, &done)
	}
	require.Equal(t, 3, done.FailedCount)
	require.Equal(t, n-3, done.DeliveredCount)

	for phone, want := range map[string][2]string{
		"447700900001": {"Failed", "UNDELIVERED"}, "447700900002": {"Failed", "EXPIRED"},
		"447700900003": {"Failed", "REJECTED"}, "447700900004": {"Delivered", ""},
	} {
		var page struct {
			Messages []struct {
				Status  string  `json:"status"`
				Details *string `json:"details"`
				Content string  `json:"messageContent"`
			} `json:"messages"`
		}
		c.api("GET", "/messages?phoneNumber="+phone, "", http.StatusOK, &page)
		require.Len(t, page.Messages, 1, phone)
		m := page.Messages[0]
		require.Equal(t, want[0], m.Status, phone)
		if want[1] != "" {
			require.NotNil(t, m.Details)
			require.Equal(t, want[1], *m.Details, phone)
		}
		require.Equal(t, "Hello R"+phone[len(phone)-1:], m.Content)
	}

	// Metrics count what the dispatcher did.
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(body), `herald_messages_total{channel="Smpp",status="Sent"} 300`)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "a SIGTERM stop exits 0")
	case <-time.After(60 * time.Second):
		t.Fatal("herald did not stop on SIGTERM")
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

type apiClient struct {
	t    *testing.T
	base string
	key  string
}

func (c *apiClient) do(method, path, header, value, body string, want int, out any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(header, value)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	require.Equal(c.t, want, resp.StatusCode, "%s %s: %s", method, path, data)
	if out != nil {
		require.NoError(c.t, json.Unmarshal(data, out), string(data))
	}
}

func (c *apiClient) api(method, path, body string, want int, out any) {
	c.t.Helper()
	c.do(method, "/api/v1"+path, "X-API-Key", c.key, body, want, out)
}
