package chaos_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// answers counts the HTTP answers herald gave during a scenario, and keeps
// every 5xx.
type answers struct {
	mu       sync.Mutex
	byStatus map[int]int
	errors   []answer // 5xx answers
	refused  int      // requests that got no answer (herald down)
}

// answer is one 5xx answer.
type answer struct {
	Method, Path string
	Status       int
	RetryAfter   string
	Body         string
}

// newAnswers returns an empty record of answers.
func newAnswers() *answers { return &answers{byStatus: map[int]int{}} }

// record counts one answer.
func (a *answers) record(method, path string, resp *http.Response, body []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byStatus[resp.StatusCode]++
	if resp.StatusCode >= 500 {
		a.errors = append(a.errors, answer{Method: method, Path: path, Status: resp.StatusCode,
			RetryAfter: resp.Header.Get("Retry-After"), Body: string(body)})
	}
}

// noAnswer counts a request that got no answer.
func (a *answers) noAnswer() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused++
}

// undocumented returns the 5xx answers that are not a 503 with Retry-After.
func (a *answers) undocumented() []answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []answer
	for _, e := range a.errors {
		if e.Status != http.StatusServiceUnavailable || e.RetryAfter == "" {
			out = append(out, e)
		}
	}
	return out
}

// summary is the answers by status, for the figures.
func (a *answers) summary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	codes := make([]int, 0, len(a.byStatus))
	for c := range a.byStatus {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d x%d", c, a.byStatus[c]))
	}
	if a.refused > 0 {
		parts = append(parts, fmt.Sprintf("no answer x%d", a.refused))
	}
	return strings.Join(parts, ", ")
}

// client calls herald's HTTP API. Its base can change (another process).
type client struct {
	t    *testing.T
	mu   sync.Mutex
	base string
	key  string
	http *http.Client
	log  *answers
}

// newClient returns a client of the herald at base, recording its answers
// in log.
func newClient(t *testing.T, base string, log *answers) *client {
	return &client{t: t, base: base, log: log, http: &http.Client{Timeout: 30 * time.Second}}
}

// use points the client at another herald process.
func (c *client) use(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base = base
}

// do sends a request and returns its status, headers and body; err is the
// transport's error (herald down).
func (c *client) do(method, path string, headers map[string]string, body string) (int, http.Header, []byte, error) {
	c.mu.Lock()
	base := c.base
	c.mu.Unlock()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(path, "/api/") && c.key != "" {
		req.Header.Set("X-API-Key", c.key)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.log.noAnswer()
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	c.log.record(method, path, resp, data)
	return resp.StatusCode, resp.Header, data, nil
}

// call sends a request, requires the status want and decodes the JSON
// answer into out when not nil.
func (c *client) call(method, path string, headers map[string]string, body string, want int, out any) {
	c.t.Helper()
	status, _, data, err := c.do(method, path, headers, body)
	require.NoError(c.t, err, "%s %s", method, path)
	require.Equal(c.t, want, status, "%s %s: %s", method, path, data)
	if out != nil {
		require.NoError(c.t, json.Unmarshal(data, out), "%s %s: %s", method, path, data)
	}
}

// api calls the API v1 with the client's key.
func (c *client) api(method, path, body string, want int, out any) {
	c.t.Helper()
	c.call(method, "/api/v1"+path, nil, body, want, out)
}

// admin calls the admin API.
func (c *client) admin(method, path, body string, want int, out any) {
	c.t.Helper()
	c.call(method, "/admin/v1"+path, map[string]string{"Authorization": "Bearer " + adminToken}, body, want, out)
}

// company is a company provisioned through the admin API.
type company struct {
	id            string
	senderID      int64
	chatServiceID int64
}

// provision sets a company up through the admin API (create, API key,
// activate, approved sender, chat service) and gives the client its key.
func (c *client) provision(name string) company {
	c.t.Helper()
	var co struct{ ID string }
	// Company names are unique: scenarios sharing a database each get one.
	c.admin("POST", "/companies", fmt.Sprintf(`{"name":%q}`, fmt.Sprintf("%s %d", name, time.Now().UnixNano())), http.StatusCreated, &co)
	var key struct{ APIKey string }
	c.admin("POST", "/companies/"+co.ID+"/api-keys", "", http.StatusCreated, &key)
	c.key = key.APIKey
	c.admin("POST", "/companies/"+co.ID+"/activate", "", http.StatusOK, nil)
	var sender struct{ ID int64 }
	c.admin("POST", "/companies/"+co.ID+"/sms-senders", `{"senderId":"CHAOS"}`, http.StatusCreated, &sender)
	c.admin("POST", fmt.Sprintf("/sms-senders/%d/approve", sender.ID), "", http.StatusOK, nil)
	var service struct{ ID int64 }
	c.admin("POST", "/companies/"+co.ID+"/chat-services", `{"brandName":"Chaos","providerServiceId":"chaos-1"}`, http.StatusCreated, &service)
	return company{id: co.ID, senderID: sender.ID, chatServiceID: service.ID}
}

// phones returns n distinct numbers of series s.
func phones(s, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("4477%02d%06d", s, i)
	}
	return out
}

// sendJSON is the answer of a bulk send.
type sendJSON struct {
	CampaignID   string
	MessageCount int
	Status       string
}

// bulk sends template tpl through path to phones, with externalUserID on
// every recipient, and returns the campaign id once it is Ready.
func (c *client) bulk(path, tpl string, phones []string, externalUserID string) string {
	c.t.Helper()
	recipients := make([]string, len(phones))
	for i, p := range phones {
		recipients[i] = fmt.Sprintf(`{"phoneNumber":"+%s","externalUserId":%q}`, p, externalUserID)
	}
	var out sendJSON
	c.api("POST", path, fmt.Sprintf(`{"templateId":%q,"placeholders":{"name":"friend"},"recipients":[%s]}`, tpl, strings.Join(recipients, ",")),
		http.StatusAccepted, &out)
	require.Equal(c.t, len(phones), out.MessageCount)
	c.waitCampaign(out.CampaignID, time.Minute, func(cj campaignJSON) bool { return cj.Status == "Ready" })
	return out.CampaignID
}

// smsCampaign creates an SMS template and a Ready bulk campaign to phones.
func (c *client) smsCampaign(co company, phones []string, externalUserID string) string {
	c.t.Helper()
	var tpl struct{ ID string }
	c.api("POST", "/templates/sms", fmt.Sprintf(`{"name":%q,"templateContent":"Hi {{name}}, chaos test","smsSenderId":%d}`, "sms-"+externalUserID, co.senderID),
		http.StatusCreated, &tpl)
	return c.bulk("/sms/promotional", tpl.ID, phones, externalUserID)
}

// start starts a Ready campaign.
func (c *client) start(id string) {
	c.t.Helper()
	c.api("POST", "/campaigns/"+id+"/start", "", http.StatusOK, nil)
}

// campaignJSON is a campaign's detail.
type campaignJSON struct {
	Status         string
	TotalMessages  int
	DeliveredCount int
	FailedCount    int
	PendingCount   int
	SeenCount      int
}

// campaign reads a campaign; ok is false when herald did not answer 200.
func (c *client) campaign(id string) (campaignJSON, bool) {
	var out campaignJSON
	status, _, data, err := c.do("GET", "/api/v1/campaigns/"+id, nil, "")
	if err != nil || status != http.StatusOK {
		return out, false
	}
	require.NoError(c.t, json.Unmarshal(data, &out))
	return out, true
}

// waitCampaign polls campaign id until done holds of it, riding out the
// times herald does not answer.
func (c *client) waitCampaign(id string, timeout time.Duration, done func(campaignJSON) bool) campaignJSON {
	c.t.Helper()
	var got campaignJSON
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		cj, ok := c.campaign(id)
		if ok {
			got = cj
			if done(cj) {
				return cj
			}
		}
	}
	c.t.Fatalf("campaign %s did not get there within %s: %+v", id, timeout, got)
	return got
}

// completed waits until campaign id is Completed.
func (c *client) completed(id string, timeout time.Duration) campaignJSON {
	c.t.Helper()
	return c.waitCampaign(id, timeout, func(cj campaignJSON) bool { return cj.Status == "Completed" })
}

// messageJSON is a message as GET /messages answers it.
type messageJSON struct {
	ID          string
	PhoneNumber string
	Status      string
	ChannelType string
	Details     *string
}

// messages returns the messages sent to phone.
func (c *client) messages(phone string) []messageJSON {
	c.t.Helper()
	var page struct{ Messages []messageJSON }
	c.api("GET", "/messages?phoneNumber="+phone, "", http.StatusOK, &page)
	return page.Messages
}

// deref returns the string s points to, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// messagesOf returns every message of the given externalUserId.
func (c *client) messagesOf(externalUserID string) []messageJSON {
	c.t.Helper()
	var all []messageJSON
	for page := 1; ; page++ {
		var p struct {
			Messages   []messageJSON
			TotalPages int
		}
		c.api("GET", fmt.Sprintf("/messages?externalUserId=%s&pageSize=100&page=%d", externalUserID, page), "", http.StatusOK, &p)
		all = append(all, p.Messages...)
		if page >= p.TotalPages {
			return all
		}
	}
}
