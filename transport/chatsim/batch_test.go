package chatsim_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatsim"
)

// rawReceiver keeps the raw bodies of the callbacks, and answers 503 to
// the first fail of them.
type rawReceiver struct {
	mu     sync.Mutex
	bodies []string
	codes  []int
	fail   int
}

func (r *rawReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(b)
	code := http.StatusOK
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case req.Header.Get("X-Content-Signature") != hex.EncodeToString(mac.Sum(nil)):
		code = http.StatusUnauthorized
	case r.fail > 0:
		r.fail--
		code = http.StatusServiceUnavailable
	}
	r.bodies, r.codes = append(r.bodies, string(b)), append(r.codes, code)
	w.WriteHeader(code)
}

func TestBatchedCallbacks(t *testing.T) {
	rcv := &rawReceiver{fail: 1}
	cb := httptest.NewServer(rcv)
	defer cb.Close()
	at := time.Date(2024, 11, 10, 10, 29, 27, 890_000_000, time.UTC)
	sim, url := start(t, chatsim.Config{Token: tok, CallbackURL: cb.URL, CallbackSecret: "s3cret",
		CallbackBatch: 3, CallbackBatchWait: 10 * time.Second,
		CallbackBackoff: messaging.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond},
		Now:             func() time.Time { return at }})
	var tokens []string
	for i := range 3 {
		a := send(t, url, tok, "application/json", body(fmt.Sprint(i+1), fmt.Sprintf("99890123456%d", i+1), `"type":1,"message":{"text":"hi"}`))
		require.Equal(t, 0, a.Status)
		tokens = append(tokens, a.Token)
	}
	require.NoError(t, sim.WaitIdle(context.Background()))

	batch := func(status string, step int) string {
		var evs []string
		for i, tk := range tokens {
			evs = append(evs, fmt.Sprintf(`{"id":"%s.%d","event":"status","message_token":"%s",`+
				`"tracking_data":"0192f3a1-7b2c-7def-8123-456789abcdef","status":"%s","error_code":0,`+
				`"timestamp":1731234567890,"phone_number":"99890123456%d"}`, tk, step, tk, status, i+1))
		}
		return "[" + strings.Join(evs, ",") + "]"
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	require.Equal(t, []int{503, 200, 200}, rcv.codes, "one request a step of the three messages; the refused one posted again")
	require.Equal(t, batch("delivered", 0), rcv.bodies[0])
	require.Equal(t, rcv.bodies[0], rcv.bodies[1], "posted again byte for byte")
	require.Equal(t, batch("seen", 1), rcv.bodies[2])
	st := sim.Stats()
	require.EqualValues(t, 6, st.CallbacksSent)
	require.EqualValues(t, 3, st.CallbackFailures)
}

func TestBatchedCallbacksWait(t *testing.T) {
	rcv := &rawReceiver{}
	cb := httptest.NewServer(rcv)
	defer cb.Close()
	sim, url := start(t, chatsim.Config{Token: tok, CallbackURL: cb.URL, CallbackSecret: "s3cret",
		CallbackBatch: 100, CallbackBatchWait: 20 * time.Millisecond})
	require.Equal(t, 0, send(t, url, tok, "application/json", body("1", "998901234561", `"type":1,"message":{"text":"hi"}`)).Status)
	require.NoError(t, sim.WaitIdle(context.Background()))
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	require.Len(t, rcv.bodies, 2, "a lone event goes once its wait is over")
	require.True(t, strings.HasPrefix(rcv.bodies[0], `[{"id":"`), rcv.bodies[0])
}
