package chatsim_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatsim"
	"github.com/stretchr/testify/require"
)

const tok = "tok"

type answer struct {
	HTTP    int
	Status  int    `json:"status"`
	Message string `json:"status_message"`
	Seq     int64  `json:"seq"`
	Token   string `json:"message_token"`
}

// send posts a raw body to the simulator.
func send(t *testing.T, url, token, contentType, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/send_message", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Auth-Token", token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	a := answer{HTTP: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	}
	return a
}

func start(t *testing.T, cfg chatsim.Config) (*chatsim.Server, string) {
	t.Helper()
	if cfg.LateFailureSuffix == "" {
		cfg.LateFailureSuffix = "0011"
	}
	sim := chatsim.New(cfg)
	require.NoError(t, sim.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = sim.Close() })
	return sim, sim.URL()
}

const base = `"service_id":"acme","seq":SEQ,"ttl":3600,"tracking_data":"0192f3a1-7b2c-7def-8123-456789abcdef"`

// body builds a request: base fields, dest and the rest.
func body(seq, dest, rest string) string {
	return `{` + strings.Replace(base, "SEQ", seq, 1) + `,"dest":"` + dest + `",` + rest + `}`
}

func TestValidation(t *testing.T) {
	sim, url := start(t, chatsim.Config{Token: tok, ServiceIDs: []string{"acme"}, Record: true})
	btn := `"button":{"caption":"Go","action":"https://x.example"}`
	items2 := `"carousel":{"items":[{"title":"A","image_url":"https://i/a","primary_button":{"label":"L","action_url":"https://a"}},{"title":"B","image_url":"https://i/b","primary_button":{"label":"L","action_url":"https://b"}}]}`
	tests := []struct {
		name string
		body string
		ct   string
		want int
	}{
		{"text", body("1", "998901234567", `"type":1,"message":{"text":"hi"}`), "", 0},
		{"charset content type", body("2", "998901234567", `"type":1,"message":{"text":"hi"}`), "application/json; charset=utf-8", 0},
		{"no ttl", `{"service_id":"acme","seq":3,"dest":"998901234567","type":1,"message":{"text":"hi"}}`, "", 0},
		{"image only", body("4", "998901234567", `"type":2,"message":{"image":"https://i/x.png"}`), "", 0},
		{"button", body("5", "998901234567", `"type":3,"message":{"text":"t",`+btn+`}`), "", 0},
		{"image plus text", body("6", "998901234567", `"type":4,"message":{"text":"t","image":"https://i",`+btn+`}`), "", 0},
		{"carousel", body("7", "998901234567", `"type":5,"message":{},`+items2), "", 0},
		{"survey", body("8", "998901234567", `"type":6,"message":{"text":"q"},"survey":{"options":[{"text":"a","value":"1"},{"text":"b","value":"2"}]}`), "", 0},
		{"video", body("9", "998901234567", `"type":7,"message":{},"video":{"url":"https://v","file_size":1,"duration":2}`), "", 0},
		{"file", body("10", "998901234567", `"type":8,"message":{},"file":{"url":"https://f","file_name":"a.pdf","file_type":"pdf"}`), "", 0},

		{"text content type", body("20", "998901234567", `"type":1,"message":{"text":"hi"}`), "text/plain", 3},
		{"malformed", `{"service_id":`, "", 3},
		{"unknown field", body("21", "998901234567", `"type":1,"message":{"text":"hi"},"colour":"red"`), "", 3},
		{"no dest", `{"service_id":"acme","seq":22,"type":1,"message":{"text":"hi"}}`, "", 3},
		{"no service", `{"seq":23,"dest":"998901234567","type":1,"message":{"text":"hi"}}`, "", 3},
		{"no seq", `{"service_id":"acme","dest":"998901234567","type":1,"message":{"text":"hi"}}`, "", 3},
		{"unknown service", strings.Replace(body("24", "998901234567", `"type":1,"message":{"text":"hi"}`), `"acme"`, `"other"`, 1), "", 2},
		{"letters in number", body("25", "99890123456a", `"type":1,"message":{"text":"hi"}`), "", 27},
		{"short number", body("26", "123456", `"type":1,"message":{"text":"hi"}`), "", 27},
		{"ttl too short", strings.Replace(body("27", "998901234567", `"type":1,"message":{"text":"hi"}`), `"ttl":3600`, `"ttl":29`, 1), "", 20},
		{"ttl too long", strings.Replace(body("28", "998901234567", `"type":1,"message":{"text":"hi"}`), `"ttl":3600`, `"ttl":1209601`, 1), "", 20},
		{"type 0", body("29", "998901234567", `"type":0,"message":{"text":"hi"}`), "", 5},
		{"type 9", body("30", "998901234567", `"type":9,"message":{"text":"hi"}`), "", 5},
		{"text without text", body("31", "998901234567", `"type":1,"message":{}`), "", 6},
		{"image only without image", body("32", "998901234567", `"type":2,"message":{"text":"t"}`), "", 6},
		{"image on a text", body("33", "998901234567", `"type":1,"message":{"text":"t","image":"https://i"}`), "", 6},
		{"button without action", body("34", "998901234567", `"type":3,"message":{"text":"t","button":{"caption":"Go"}}`), "", 6},
		{"video on a text", body("35", "998901234567", `"type":1,"message":{"text":"t"},"video":{"url":"https://v","file_size":1,"duration":1}`), "", 6},
		{"one carousel item", body("36", "998901234567", `"type":5,"message":{},"carousel":{"items":[{"title":"A","image_url":"https://i/a","primary_button":{"label":"L","action_url":"https://a"}}]}`), "", 6},
		{"one survey option", body("37", "998901234567", `"type":6,"message":{"text":"q"},"survey":{"options":[{"text":"a","value":"1"}]}`), "", 6},
		{"upper-case file type", body("38", "998901234567", `"type":8,"message":{},"file":{"url":"https://f","file_name":"a.pdf","file_type":"PDF"}`), "", 6},
		{"survey without question", body("39", "998901234567", `"type":6,"message":{},"survey":{"options":[{"text":"a","value":"1"},{"text":"b","value":"2"}]}`), "", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := tt.ct
			if ct == "" {
				ct = "application/json"
			}
			a := send(t, url, tok, ct, tt.body)
			require.Equal(t, http.StatusOK, a.HTTP)
			require.Equal(t, tt.want, a.Status, a.Message)
			if tt.want == 0 {
				require.NotEmpty(t, a.Token)
				require.Empty(t, a.Message)
			} else {
				require.Empty(t, a.Token)
				require.NotEmpty(t, a.Message)
			}
		})
	}
	require.EqualValues(t, len(tests), sim.Stats().Requests)
}

func TestIdempotentSeq(t *testing.T) {
	sim, url := start(t, chatsim.Config{Token: tok, SeqMemory: 2, Record: true})
	text := `"type":1,"message":{"text":"hi"}`
	first := send(t, url, tok, "application/json", body("1", "998901234567", text))
	require.Equal(t, 0, first.Status)
	require.EqualValues(t, 1, first.Seq)

	again := send(t, url, tok, "application/json", body("1", "998901234567", text))
	require.Equal(t, 12, again.Status)
	require.Equal(t, "ALREADY_SENT", again.Message)
	require.Equal(t, first.Token, again.Token, "12 carries the first token")

	// A rejected seq is not remembered.
	for range 2 {
		require.Equal(t, 8, send(t, url, tok, "application/json", body("5", "998901230008", text)).Status)
	}

	// Only the last SeqMemory accepted seqs are remembered.
	require.Equal(t, 0, send(t, url, tok, "application/json", body("2", "998901234567", text)).Status)
	require.Equal(t, 0, send(t, url, tok, "application/json", body("3", "998901234567", text)).Status)
	again = send(t, url, tok, "application/json", body("1", "998901234567", text))
	require.Equal(t, 0, again.Status, "seq 1 was forgotten")
	require.NotEqual(t, first.Token, again.Token)
	require.Equal(t, 12, send(t, url, tok, "application/json", body("3", "998901234567", text)).Status)

	st := sim.Stats()
	require.EqualValues(t, 4, st.Accepted)
	require.EqualValues(t, 2, st.AlreadySent)
	require.EqualValues(t, 2, st.Rejected)
	got := sim.Received("998901234567")
	require.Len(t, got, 6)
	require.Equal(t, []int{0, 12, 0, 0, 0, 12}, []int{got[0].Status, got[1].Status, got[2].Status, got[3].Status, got[4].Status, got[5].Status})
	require.Len(t, sim.Requests(), 8)
}

func TestConcurrentSameSeqAcceptedOnce(t *testing.T) {
	sim, url := start(t, chatsim.Config{Token: tok})
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, url+"/send_message",
				strings.NewReader(body("77", "998901234567", `"type":1,"message":{"text":"hi"}`)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Auth-Token", tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses[i] = -1
				return
			}
			defer resp.Body.Close()
			var a answer
			_ = json.NewDecoder(resp.Body).Decode(&a)
			statuses[i] = a.Status
		})
	}
	wg.Wait()
	zeros := 0
	for _, s := range statuses {
		require.Contains(t, []int{0, 12}, s)
		if s == 0 {
			zeros++
		}
	}
	require.Equal(t, 1, zeros)
	require.EqualValues(t, 1, sim.Stats().Accepted)
}

func TestHTTPAnswers(t *testing.T) {
	sim, url := start(t, chatsim.Config{Token: tok, Faults: chatsim.Faults{FailFirst: 1, ThrottleFirst: 1, RetryAfter: 3}})
	good := body("1", "998901234567", `"type":1,"message":{"text":"hi"}`)
	require.Equal(t, http.StatusUnauthorized, send(t, url, "wrong", "application/json", good).HTTP)
	require.Equal(t, http.StatusInternalServerError, send(t, url, tok, "application/json", good).HTTP)

	req, _ := http.NewRequest(http.MethodPost, url+"/send_message", strings.NewReader(good))
	req.Header.Set("X-Auth-Token", tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "3", resp.Header.Get("Retry-After"))

	require.Equal(t, 0, send(t, url, tok, "application/json", good).Status)

	resp, err = http.Get(url + "/send_message")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	resp, err = http.Post(url+"/other", "application/json", strings.NewReader(good))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	st := sim.Stats()
	require.EqualValues(t, 3, st.HTTPErrors)
	require.EqualValues(t, 1, st.Accepted)

	// Throttling every 2nd request, after SetFaults restarted the count.
	sim.SetFaults(chatsim.Faults{ThrottleEvery: 2})
	got := []int{}
	for i := range 4 {
		a := send(t, url, tok, "application/json", body(string(rune('2'+i)), "998901234567", `"type":1,"message":{"text":"hi"}`))
		got = append(got, a.HTTP)
	}
	require.Equal(t, []int{200, 429, 200, 429}, got)
}

// receiver is a callback endpoint that checks signatures independently.
type receiver struct {
	mu     sync.Mutex
	bodies []map[string]any
	fail   int // answer 503 to the first ones
	bad    int // bodies with a wrong signature
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Header.Get("X-Content-Signature") != hex.EncodeToString(mac.Sum(nil)) {
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.fail > 0 {
		r.fail--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	r.bodies = append(r.bodies, m)
}

func (r *receiver) got() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.bodies...)
}

func TestCallbacks(t *testing.T) {
	rcv := &receiver{fail: 1}
	cb := httptest.NewServer(rcv)
	defer cb.Close()
	at := time.Date(2024, 11, 10, 10, 29, 27, 890_000_000, time.UTC)
	sim, url := start(t, chatsim.Config{Token: tok, CallbackURL: cb.URL, CallbackSecret: "s3cret",
		CallbackBackoff: messaging.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond},
		Now:             func() time.Time { return at }})
	a := send(t, url, tok, "application/json", body("1", "998901234562", `"type":6,"message":{"text":"q"},"survey":{"options":[{"text":"Yes","value":"y"},{"text":"No","value":"n"},{"text":"Maybe","value":"m"}]}`))
	require.Equal(t, 0, a.Status)
	require.NoError(t, sim.WaitIdle(context.Background()))

	got := rcv.got()
	require.Len(t, got, 3)
	common := map[string]any{"message_token": a.Token, "tracking_data": "0192f3a1-7b2c-7def-8123-456789abcdef",
		"timestamp": float64(1731234567890), "phone_number": "998901234562"}
	want := []map[string]any{
		{"event": "status", "status": "delivered", "error_code": float64(0)},
		{"event": "status", "status": "seen", "error_code": float64(0)},
		{"event": "reply", "text": "Maybe", "survey": map[string]any{"option_index": float64(2), "option_value": "m"}},
	}
	for i := range want {
		for k, v := range common {
			want[i][k] = v
		}
		require.Equal(t, want[i], got[i])
	}
	st := sim.Stats()
	require.EqualValues(t, 3, st.CallbacksSent)
	require.EqualValues(t, 1, st.CallbackFailures)
	require.Zero(t, rcv.bad)

	// 0011: accepted, then failed with error_code 9.
	a = send(t, url, tok, "application/json", body("2", "998901230011", `"type":1,"message":{"text":"hi"}`))
	require.Equal(t, 0, a.Status)
	require.NoError(t, sim.WaitIdle(context.Background()))
	got = rcv.got()
	require.Len(t, got, 4)
	require.Equal(t, "failed", got[3]["status"])
	require.Equal(t, float64(9), got[3]["error_code"])
}

func TestCallbacksGiveUp(t *testing.T) {
	rcv := &receiver{fail: 1000}
	cb := httptest.NewServer(rcv)
	defer cb.Close()
	sim, url := start(t, chatsim.Config{CallbackURL: cb.URL, CallbackSecret: "s3cret", CallbackAttempts: 3,
		CallbackBackoff: messaging.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond}})
	require.Equal(t, 0, send(t, url, "", "application/json", body("1", "998901234567", `"type":1,"message":{"text":"hi"}`)).Status)
	require.NoError(t, sim.WaitIdle(context.Background()))
	st := sim.Stats()
	require.EqualValues(t, 3, st.CallbackFailures)
	require.EqualValues(t, 1, st.CallbacksAbandoned)
	require.Zero(t, st.CallbacksSent)
	require.Zero(t, st.CallbacksPending)
	rcv.mu.Lock()
	require.Equal(t, 997, rcv.fail, "the seen callback is not sent after the delivered one was given up")
	rcv.mu.Unlock()
}

func TestCallbackDelaysAndClose(t *testing.T) {
	rcv := &receiver{}
	cb := httptest.NewServer(rcv)
	defer cb.Close()
	sim := chatsim.New(chatsim.Config{CallbackURL: cb.URL, CallbackSecret: "s3cret",
		DeliveredDelay: 20 * time.Millisecond, SeenDelay: time.Hour})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	start := time.Now()
	require.Equal(t, 0, send(t, srv.URL, "", "application/json", body("1", "998901234567", `"type":1,"message":{"text":"hi"}`)).Status)
	require.Eventually(t, func() bool { return len(rcv.got()) == 1 }, 2*time.Second, time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	require.Equal(t, "delivered", rcv.got()[0]["status"])
	require.EqualValues(t, 1, sim.Stats().CallbacksPending, "seen waits an hour")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, sim.WaitIdle(ctx), context.DeadlineExceeded)
	require.NoError(t, sim.Close())
	require.NoError(t, sim.Close(), "Close twice is fine")
}

func TestStartTwice(t *testing.T) {
	sim, url := start(t, chatsim.Config{})
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"))
	require.Error(t, sim.Start("127.0.0.1:0"))
	idle := chatsim.New(chatsim.Config{})
	require.Empty(t, idle.URL())
	require.NoError(t, idle.Close())
}

// TestCallbackConnections: callbacks reach a receiver that closes every
// connection after its answer, and one that closes idle connections
// between callbacks, without a failed attempt; texts that JSON escapes
// arrive intact.
func TestCallbackConnections(t *testing.T) {
	for name, setup := range map[string]func(*httptest.Server){
		"connection close": func(s *httptest.Server) { s.Config.SetKeepAlivesEnabled(false) },
		"idle timeout":     func(s *httptest.Server) { s.Config.IdleTimeout = time.Millisecond },
	} {
		t.Run(name, func(t *testing.T) {
			rcv := &receiver{}
			cb := httptest.NewUnstartedServer(rcv)
			setup(cb)
			cb.Start()
			defer cb.Close()
			sim, url := start(t, chatsim.Config{CallbackURL: cb.URL + "/callbacks/chat?x=1", CallbackSecret: "s3cret", CallbackWorkers: 1,
				SeenDelay: 20 * time.Millisecond, ReplyDelay: 20 * time.Millisecond})
			a := send(t, url, "", "application/json", body("1", "998901234561", `"type":6,"message":{"text":"q"},`+
				`"survey":{"options":[{"text":"a","value":"a"},{"text":"Oui \"vraiment\" \\ \u00e9\n\u2713","value":"v\t1"}]}`))
			require.Equal(t, 0, a.Status)
			require.NoError(t, sim.WaitIdle(context.Background()))
			got := rcv.got()
			require.Len(t, got, 3)
			require.Equal(t, "Oui \"vraiment\" \\ \u00e9\n\u2713", got[2]["text"])
			require.Equal(t, map[string]any{"option_index": float64(1), "option_value": "v\t1"}, got[2]["survey"])
			st := sim.Stats()
			require.EqualValues(t, 3, st.CallbacksSent)
			require.Zero(t, st.CallbackFailures)
			require.Zero(t, rcv.bad)
		})
	}
}
