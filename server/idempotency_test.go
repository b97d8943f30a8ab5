package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// TestIdempotencyKey: a POST retried with its Idempotency-Key gets the
// first answer again, marked replayed, and sends nothing more; the key
// with another body is a 422; keys are per company; a refused request's
// answer is kept too; a bad key is a 400 on the header.
func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	send := func(key string, body map[string]any, opts ...reqOpt) response {
		return e.do("POST", "/api/v1/sms/send", body, append(opts, withHeader("Idempotency-Key", key))...)
	}
	direct := func(text string, sender int64, phones ...string) map[string]any {
		rs := make([]map[string]any, len(phones))
		for i, p := range phones {
			rs[i] = map[string]any{"phoneNumber": p}
		}
		return map[string]any{"messageContent": text, "smsSenderId": sender, "recipients": rs}
	}
	count := func() int { e.wait(); return len(e.messageIDs(t, phone(1))) }
	body := direct("Your code is 1234", e.sender, phone(1))
	first := send("order-1", body)
	require.Equal(t, http.StatusAccepted, first.Code, "body: %s", first.Body)
	require.Empty(t, first.Header.Get("Idempotent-Replayed"))
	again := send("order-1", body)
	require.Equal(t, first.Code, again.Code)
	require.JSONEq(t, string(first.Body), string(again.Body))
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, count(), "the retry sent nothing")

	other := direct("Your code is 9999", e.sender, phone(1))
	requireError(t, send("order-1", other), http.StatusUnprocessableEntity, "Unprocessable Entity", "")
	require.Equal(t, 1, count())
	require.Equal(t, http.StatusAccepted, send("order-2", body).Code, "another key is another request")
	require.Equal(t, 2, count())
	require.Equal(t, http.StatusAccepted, e.do("POST", "/api/v1/sms/send", body).Code, "no key: no check")
	require.Equal(t, 3, count())

	b := e.newCompany(t, "B")
	bbody := direct("Your code is 1234", b.sender, phone(1))
	r := send("order-1", bbody, withKey(b.key))
	require.Equal(t, http.StatusAccepted, r.Code, "keys are per company: body %s", r.Body)
	require.Empty(t, r.Header.Get("Idempotent-Replayed"))

	bad := direct("x", e.sender)
	refused := send("bad-1", bad)
	require.Equal(t, http.StatusBadRequest, refused.Code)
	again = send("bad-1", bad)
	require.Equal(t, http.StatusBadRequest, again.Code)
	require.JSONEq(t, string(refused.Body), string(again.Body))
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))

	requireError(t, send(strings.Repeat("k", 256), body), http.StatusBadRequest, "Bad Request", "Idempotency-Key")
	requireError(t, send("", body), http.StatusBadRequest, "Bad Request", "Idempotency-Key")
	require.Equal(t, http.StatusAccepted, send(strings.Repeat("k", 255), body).Code)

	// A template creation, replayed: one template.
	tpl := map[string]any{"name": "welcome", "templateContent": "Hi"}
	r1 := e.do("POST", "/api/v1/templates/sms", tpl, withHeader("Idempotency-Key", "tpl"))
	r2 := e.do("POST", "/api/v1/templates/sms", tpl, withHeader("Idempotency-Key", "tpl"))
	require.Equal(t, http.StatusCreated, r1.Code, "body: %s", r1.Body)
	require.Equal(t, r1.obj()["id"], r2.obj()["id"])
	require.Equal(t, float64(1), e.do("GET", "/api/v1/templates", nil).obj()["totalCount"])
}

// blockingAdmit holds add-message requests until release is closed.
type blockingAdmit struct {
	*memstore.Store
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *blockingAdmit) AdmitMessages(ctx context.Context, companyID messaging.ID, msgs []*messaging.Message, maxPending int) error {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	return s.Store.AdmitMessages(ctx, companyID, msgs, maxPending)
}

// TestIdempotencyKeyInFlight: a retry that comes while the first request
// with its key is still running waits for its answer and does nothing
// more; one that waits longer than the wait is a 409 and does nothing.
func TestIdempotencyKeyInFlight(t *testing.T) {
	held := &blockingAdmit{entered: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, func(c *envConfig) {
		c.wrap = func(s *memstore.Store) appStore { held.Store = s; return held }
		c.idem.Wait = 300 * time.Millisecond
		c.idem.Poll = 5 * time.Millisecond
	})
	sms := e.smsTemplate("otp", "Code {{code}}")
	close(held.release) // creating the campaign admits nothing
	tx := e.transactional("sms", sms)
	held.release = make(chan struct{})
	add := func() response {
		return e.do("POST", "/api/v1/sms/campaigns/"+tx+"/messages",
			map[string]any{"phoneNumber": phone(1), "placeholders": map[string]any{"code": "42"}}, withHeader("Idempotency-Key", "otp-1"))
	}
	var first response
	done := make(chan struct{})
	go func() { first = add(); close(done) }()
	<-held.entered
	requireError(t, add(), http.StatusConflict, "Conflict", "")
	retried := make(chan response)
	go func() { retried <- add() }()
	time.Sleep(50 * time.Millisecond)
	close(held.release)
	<-done
	second := <-retried
	require.Equal(t, http.StatusAccepted, first.Code, "body: %s", first.Body)
	require.Equal(t, first.Code, second.Code)
	require.JSONEq(t, string(first.Body), string(second.Body))
	require.Equal(t, "true", second.Header.Get("Idempotent-Replayed"))
	require.Len(t, e.messageIDs(t, phone(1)), 1)
}
