package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/client"
	"github.com/heraldhq/herald/messaging"
)

// fullEnv is a server whose company's pending capacity (2) is held by a
// Ready bulk campaign, so that any further send is a 429 asking to wait
// retryAfter; it returns the env and that campaign's id.
func fullEnv(t *testing.T, retryAfter time.Duration) (*env, string) {
	t.Helper()
	e := newEnv(t, func(c *serverConfig) {
		c.limits = campaign.Limits{MaxPending: 2, RetryAfter: retryAfter}
	})
	tpl := e.smsTemplate("t", "x")
	res, err := e.c.SendSMSPromotional(e.ctx(), client.BulkSend{TemplateID: tpl.ID, Recipients: recipients(1, 2)})
	require.NoError(t, err)
	e.waitStatus(res.CampaignID, client.CampaignReady)
	return e, res.CampaignID
}

// direct is a direct SMS of one message.
func (e *env) direct(i int) client.DirectSMS {
	return client.DirectSMS{MessageContent: "code", SMSSenderID: e.SenderID, Recipients: []client.DirectRecipient{{PhoneNumber: phone(i)}}}
}

// TestRateLimitedWithoutRetries: with retries off, a 429 is returned at
// once with its capacity, its Retry-After and its message.
func TestRateLimitedWithoutRetries(t *testing.T) {
	t.Parallel()
	e, _ := fullEnv(t, time.Second)
	_, err := e.c.SendSMS(e.ctx(), e.direct(9))
	ae := apiError(t, err, http.StatusTooManyRequests, "Too many pending messages")
	require.True(t, client.IsRateLimited(err))
	require.Equal(t, time.Second, ae.RetryAfter)
	require.Contains(t, ae.Message, "nothing is being sent")
	require.Equal(t, &client.Capacity{CurrentPending: 2, RequestedCount: 1, MaxAllowed: 2, AvailableCapacity: 0,
		HeldBy: map[string]int{"Ready": 2}}, ae.Capacity)
	require.Nil(t, ae.ValidationErrors)
	require.Equal(t, []int{429}, e.calls.statuses("POST", "/api/v1/sms/send"), "no retry")
}

// TestRateLimitedRetried: the client waits the Retry-After of a 429 and
// sends the request again; once capacity is freed (here: the campaign
// holding it is cancelled when the first 429 comes), the retry succeeds.
func TestRateLimitedRetried(t *testing.T) {
	t.Parallel()
	e, holder := fullEnv(t, time.Second)
	var once sync.Once
	freed := make(chan error, 1)
	hc := &http.Client{Transport: e.transport(func(resp *http.Response) {
		if resp.StatusCode != http.StatusTooManyRequests {
			return
		}
		once.Do(func() {
			id, err := messaging.ParseID(holder)
			if err == nil {
				_, err = e.Herald.Campaigns().Cancel(context.Background(), e.CompanyID, id)
			}
			freed <- err
		})
	})}
	c, err := client.New(e.URL, e.APIKey, client.WithHTTPClient(hc), client.WithRetries(2))
	require.NoError(t, err)
	start := time.Now()
	res, err := c.SendSMS(e.ctx(), e.direct(9))
	require.NoError(t, err)
	require.NoError(t, <-freed)
	require.Equal(t, 1, res.MessageCount)
	require.Equal(t, []int{429, 202}, e.calls.statuses("POST", "/api/v1/sms/send"))
	require.GreaterOrEqual(t, time.Since(start), time.Second, "the retry waited the Retry-After")
}

// TestRateLimitedRetriesRunOut: a 429 that stays is retried as many times
// as asked, then returned.
func TestRateLimitedRetriesRunOut(t *testing.T) {
	t.Parallel()
	e, _ := fullEnv(t, time.Second)
	c := e.client(client.WithRetries(1))
	_, err := c.SendSMS(e.ctx(), e.direct(9))
	require.True(t, client.IsRateLimited(err), "%v", err)
	require.Equal(t, []int{429, 429}, e.calls.statuses("POST", "/api/v1/sms/send"))
}

// TestRateLimitedDeadline: a retry that would wait past the context's
// deadline, or longer than the maximum wait, is not made: the 429 is
// returned at once, not a deadline error.
func TestRateLimitedDeadline(t *testing.T) {
	t.Parallel()
	e, _ := fullEnv(t, 30*time.Second)
	c := e.client(client.WithRetries(5))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.SendSMS(ctx, e.direct(9))
	ae := apiError(t, err, http.StatusTooManyRequests, "Too many pending messages")
	require.Equal(t, 30*time.Second, ae.RetryAfter)
	require.False(t, errors.Is(err, context.DeadlineExceeded))
	require.NoError(t, ctx.Err(), "returned before the deadline")
	require.Equal(t, []int{429}, e.calls.statuses("POST", "/api/v1/sms/send"))

	c = e.client(client.WithRetries(5), client.WithMaxRetryWait(10*time.Second))
	_, err = c.SendSMS(e.ctx(), e.direct(9))
	require.True(t, client.IsRateLimited(err))
	require.Equal(t, []int{429, 429}, e.calls.statuses("POST", "/api/v1/sms/send"), "one more request, no retry")
}

// TestRateLimitedCancelled: a context cancelled when a 429 comes, or
// while the client waits to retry, ends the call; the error is both the
// 429 and the cancellation.
func TestRateLimitedCancelled(t *testing.T) {
	t.Parallel()
	e, _ := fullEnv(t, time.Second)
	for _, during := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		hc := &http.Client{Transport: e.transport(func(resp *http.Response) {
			switch {
			case resp.StatusCode != http.StatusTooManyRequests:
			case during:
				time.AfterFunc(100*time.Millisecond, cancel) // the wait is a second
			default:
				cancel()
			}
		})}
		c, err := client.New(e.URL, e.APIKey, client.WithHTTPClient(hc))
		require.NoError(t, err)
		_, err = c.SendSMS(ctx, e.direct(9))
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, client.IsRateLimited(err), "%v", err)
		cancel()
	}
	require.Equal(t, []int{429, 429}, e.calls.statuses("POST", "/api/v1/sms/send"), "one request each, no retry")
}

// TestIdempotencyKey: a request sent again with the same key gets the
// first answer (the same campaign) and sends nothing more; the same key
// with another body is a 422; a bad key a 400; a context without a key
// sends none.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := client.WithIdempotencyKey(e.ctx(), "otp-4711")
	var keys []string
	var mu sync.Mutex
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		keys = append(keys, r.Method+" "+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		return e.transport(nil).RoundTrip(r)
	})}
	c, err := client.New(e.URL, e.APIKey, client.WithHTTPClient(hc))
	require.NoError(t, err)

	first, err := c.SendSMS(ctx, e.direct(1))
	require.NoError(t, err)
	again, err := c.SendSMS(ctx, e.direct(1))
	require.NoError(t, err)
	require.Equal(t, first.CampaignID, again.CampaignID)
	require.Equal(t, first, again, "the first answer, replayed")
	msgs, err := c.ListMessages(ctx, client.MessageListOptions{PhoneNumber: phone(1)})
	require.NoError(t, err)
	require.Equal(t, 1, msgs.TotalCount, "sent once")

	_, err = c.SendSMS(ctx, e.direct(2))
	apiError(t, err, http.StatusUnprocessableEntity, "Unprocessable Entity")
	long := strings.Repeat("k", 256)
	_, err = c.SendSMS(client.WithIdempotencyKey(e.ctx(), long), e.direct(2))
	invalid(t, err, "Idempotency-Key")
	other, err := c.SendSMS(e.ctx(), e.direct(1))
	require.NoError(t, err)
	require.NotEqual(t, first.CampaignID, other.CampaignID, "without the key: a new send")

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"POST otp-4711", "POST otp-4711", "GET ", "POST otp-4711", "POST " + long, "POST "}, keys,
		"POSTs carry the context's key; GETs never")
}

// TestErrorsNotFromTheAPI: an answer that is not the API's JSON error is
// still a *client.Error, with the HTTP phrase and the start of the body;
// a transport error is wrapped with the method and path, and is no
// *client.Error.
func TestErrorsNotFromTheAPI(t *testing.T) {
	t.Parallel()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>" + strings.Repeat("bad gateway ", 50) + "</html>"))
	}))
	defer proxy.Close()
	c, err := client.New(proxy.URL+"/herald", "om_key")
	require.NoError(t, err)
	_, err = c.GetCampaign(context.Background(), "abc")
	var ae *client.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusBadGateway, ae.StatusCode)
	require.Equal(t, "Bad Gateway", ae.Name)
	require.True(t, strings.HasPrefix(ae.Message, "<html>bad gateway"), ae.Message)
	require.LessOrEqual(t, len(ae.Message), 203)
	require.Equal(t, "/herald/api/v1/campaigns/abc", ae.Path, "the base URL's path is kept")

	proxy.Close()
	_, err = c.GetCampaign(context.Background(), "abc")
	require.Error(t, err)
	require.False(t, errors.As(err, &ae), "a transport error is no *client.Error")
	require.Contains(t, err.Error(), "GET /herald/api/v1/campaigns/abc")
}
