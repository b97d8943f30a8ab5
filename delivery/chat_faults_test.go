package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
)

// providerAttempt is one send_message request the fake provider got.
type providerAttempt struct {
	seq      int64
	tracking string
	answer   string // what it was answered: "HTTP 500", "status 7", "timeout", ...
}

// faultyProvider is a chat provider (the wire contract of transport/chat) whose answer
// to the send of the message to number i is script(i, call): it injects
// timeouts, HTTP errors and status codes, and can post a signed callback
// of the message to the callback endpoint before it answers the send.
// Once it accepted a message, a later send of the same seq is answered
// 12 ALREADY_SENT with the first token, as a provider does.
type faultyProvider struct {
	t        testing.TB
	callback string // the callback endpoint's URL
	script   func(i, call int) providerAnswer

	mu       sync.Mutex
	attempts map[string][]providerAttempt // by number
	accepted map[int64]string             // token by seq
	early    map[string]time.Time         // time of the callback posted before the answer, by number
}

// providerAnswer is what the fake provider does with one send.
type providerAnswer struct {
	http       int    // an HTTP error status instead of an answer; 0: none
	timeout    bool   // no answer until the client gives up (the message is accepted)
	status     int    // the status of the answer
	token      string // the message token of a status 0 or 12 answer; default tok-<number>
	callback   string // a status callback to post and see stored first (delivered, seen, failed)
	errorCode  int    // of a failed callback
	retryAfter string // Retry-After header of an HTTP error
}

func newFaultyProvider(t testing.TB, callback string, script func(i, call int) providerAnswer) (*faultyProvider, string) {
	p := &faultyProvider{t: t, callback: callback, script: script,
		attempts: map[string][]providerAttempt{}, accepted: map[int64]string{}, early: map[string]time.Time{}}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *faultyProvider) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/send_message" || r.Header.Get("X-Auth-Token") != "tok" {
		http.Error(w, "unexpected request", http.StatusNotFound)
		return
	}
	var body struct {
		Dest         string `json:"dest"`
		Seq          int64  `json:"seq"`
		TrackingData string `json:"tracking_data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	i, err := strconv.Atoi(body.Dest[len(body.Dest)-4:])
	if err != nil {
		http.Error(w, "bad number", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	call := len(p.attempts[body.Dest]) + 1
	token, done := p.accepted[body.Seq]
	a := p.script(i, call)
	if a.token == "" {
		a.token = "tok-" + body.Dest
	}
	if done {
		a = providerAnswer{status: 12, token: token}
	}
	answer := fmt.Sprintf("status %d", a.status)
	switch {
	case a.http != 0:
		answer = fmt.Sprintf("HTTP %d", a.http)
	case a.timeout:
		answer = "timeout"
	}
	if a.timeout || (a.http == 0 && (a.status == 0 || a.status == 12)) {
		if _, ok := p.accepted[body.Seq]; !ok {
			p.accepted[body.Seq] = a.token
		}
	}
	p.attempts[body.Dest] = append(p.attempts[body.Dest], providerAttempt{seq: body.Seq, tracking: body.TrackingData, answer: answer})
	p.mu.Unlock()

	if a.callback != "" {
		id, err := messaging.ParseID(body.TrackingData)
		if err != nil {
			p.t.Errorf("tracking_data %q: %v", body.TrackingData, err)
		}
		at := time.Now().UTC().Truncate(time.Millisecond)
		cb := statusCallback(id, a.callback, a.errorCode, at)
		req, _ := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodPost, p.callback, bytes.NewReader(cb))
		req.Header.Set(chat.SignatureHeader, chat.Sign(callbackSecret, cb))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			p.t.Errorf("early %s callback of %s: %v %v", a.callback, body.Dest, err, resp)
		}
		if resp != nil {
			_ = resp.Body.Close()
		}
		p.mu.Lock()
		p.early[body.Dest] = at
		p.mu.Unlock()
	}
	switch {
	case a.timeout:
		select {
		case <-r.Context().Done(): // the client gave up
		case <-time.After(30 * time.Second):
		}
		return
	case a.http != 0:
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		http.Error(w, http.StatusText(a.http), a.http)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	out := map[string]any{"status": a.status, "seq": body.Seq}
	if a.status == 0 || a.status == 12 {
		out["message_token"] = a.token
	}
	_ = json.NewEncoder(w).Encode(out)
}

// of returns the attempts of the send to number.
func (p *faultyProvider) of(number string) []providerAttempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]providerAttempt(nil), p.attempts[number]...)
}

// earlyAt returns the time of the callback posted before the send of
// number was answered.
func (p *faultyProvider) earlyAt(number string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.early[number]
}

// The messages of TestChatProviderFaults, by index (the last digits of
// their numbers), and what the provider does with each.
const (
	fOK             = 0  // accepted
	fTimeout        = 1  // no answer in time (accepted all the same), then 12
	fHTTP500        = 2  // HTTP 500 twice, then accepted
	fHTTP429        = 3  // HTTP 429 with Retry-After, then accepted
	fStatus1        = 4  // INTERNAL_FAILURE, then accepted
	fStatus7        = 5  // TIMEOUT, then accepted
	fStatus12       = 6  // ALREADY_SENT at once
	fBadData        = 7  // 3
	fNotPermitted   = 8  // 13
	fBadPhone       = 9  // 27
	fUnknownCode    = 10 // 42, no such code
	fNotUser        = 11 // 9 at send, with a fallback
	fDeliveredFirst = 12 // delivered callback stored before the send is answered
	fSeenFirst      = 13 // seen callback stored before the send is answered
	fFailedFirst    = 14 // failed (8) callback stored before the send is answered, with a fallback
	fLateFailure    = 15 // accepted; failed (10) after the campaign completed, with a fallback
	fCallbacks      = 16 // accepted; duplicated and out-of-order callbacks
	fBadSignature   = 17 // accepted; callbacks with bad signatures
	fCount          = 18
)

func faultScript(i, call int) providerAnswer {
	switch {
	case i == fTimeout && call == 1:
		return providerAnswer{timeout: true}
	case i == fHTTP500 && call <= 2:
		return providerAnswer{http: http.StatusInternalServerError}
	case i == fHTTP429 && call == 1:
		return providerAnswer{http: http.StatusTooManyRequests, retryAfter: "1"}
	case i == fStatus1 && call == 1:
		return providerAnswer{status: 1}
	case i == fStatus7 && call == 1:
		return providerAnswer{status: 7}
	case i == fStatus12:
		return providerAnswer{status: 12, token: "first-token"}
	case i == fBadData:
		return providerAnswer{status: 3}
	case i == fNotPermitted:
		return providerAnswer{status: 13}
	case i == fBadPhone:
		return providerAnswer{status: 27}
	case i == fUnknownCode:
		return providerAnswer{status: 42}
	case i == fNotUser:
		return providerAnswer{status: 9}
	case i == fDeliveredFirst && call == 1:
		return providerAnswer{callback: "delivered"}
	case i == fSeenFirst && call == 1:
		return providerAnswer{callback: "seen"}
	case i == fFailedFirst && call == 1:
		return providerAnswer{callback: "failed", errorCode: 8}
	}
	return providerAnswer{}
}

// TestChatProviderFaults sends a bulk chat campaign through the dispatcher
// and the chat client over HTTP to a provider that injects faults at send
// time, while the callbacks of the messages come over HTTP to the callback
// endpoint over ChatEvents; the assertions are on the stored messages and
// counts, on SQLite and Postgres.
//
// At send time: timeouts, HTTP 500 and 429, and statuses 1 and 7 are
// retried with the same seq until accepted; 12 is a success; permanent
// codes end the message Failed with details naming the code; 9 falls back
// to SMS. Callbacks: one stored before the send's answer is recorded
// (delivered, seen, failed) is kept, and the late send result changes
// nothing; repeated and out-of-order callbacks change nothing; a failure
// reported after the campaign completed still has its fallback SMS sent,
// once; badly signed callbacks are refused with 401 and change nothing.
func TestChatProviderFaults(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			s := openStore(t, db.url(t))
			w := newWorld(t, s)
			events := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: s, Answers: answers(t, s), Logger: testLogger()})
			cbURL := callbackEndpoint(t, events)
			provider, providerURL := newFaultyProvider(t, cbURL, faultScript)
			client, err := chat.New(chat.Config{BaseURL: providerURL, Token: "tok", Retries: -1, Timeout: 500 * time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.Close() })
			sms := newFakeSMS()
			cfg := fastConfig(s)
			cfg.Chat, cfg.SMS, cfg.OnChatFailure = client, sms, events.OnChatFailure
			d, err := delivery.New(cfg)
			require.NoError(t, err)

			ps := phones(fCount, 0)
			withFallback := map[int]bool{fNotUser: true, fFailedFirst: true, fLateFailure: true}
			c, msgs := w.campaign(spec{channel: messaging.ChannelChat, phones: ps, fallback: func(i int) string {
				if withFallback[i] {
					return fmt.Sprintf("SMS %d", i)
				}
				return ""
			}})
			run(t, d)
			got := w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool {
				return c.Status == messaging.CampaignCompleted && c.FallbackCounts.Sent == 2
			})
			require.Equal(t, messaging.StatusCounts{Sent: 10, Delivered: 1, Seen: 1, Failed: 6}, got.Counts)
			require.Equal(t, messaging.StatusCounts{Sent: 2}, got.FallbackCounts)

			// Every attempt of a message carried its seq; each message has
			// its own; the provider accepted each message once at most.
			seqs := map[int64]int{}
			for i, m := range msgs {
				att := provider.of(m.Phone)
				require.NotEmpty(t, att, "message %d", i)
				for _, a := range att {
					require.Equal(t, att[0].seq, a.seq, "message %d: a retry keeps the seq", i)
					require.Equal(t, m.ID.String(), a.tracking)
				}
				require.NotContains(t, seqs, att[0].seq, "message %d", i)
				seqs[att[0].seq] = i
			}
			firstAnswers := func(i int) []string {
				var out []string
				for _, a := range provider.of(ps[i]) {
					out = append(out, a.answer)
				}
				return out
			}

			// Transient faults: retried until accepted, then Sent with the
			// provider's token.
			for i, first := range map[int][]string{
				fOK:       {"status 0"},
				fTimeout:  {"timeout", "status 12"},
				fHTTP500:  {"HTTP 500", "HTTP 500", "status 0"},
				fHTTP429:  {"HTTP 429", "status 0"},
				fStatus1:  {"status 1", "status 0"},
				fStatus7:  {"status 7", "status 0"},
				fStatus12: {"status 12"},
			} {
				m := w.message(msgs[i].ID)
				require.Equal(t, messaging.StatusSent, m.Status, "message %d", i)
				require.Equal(t, first, firstAnswers(i)[:len(first)], "message %d", i)
				require.Equal(t, len(provider.of(ps[i])), m.Attempts, "message %d: one attempt per send", i)
				require.NotNil(t, m.SentAt, "message %d", i)
				require.Empty(t, m.Details, "message %d", i)
				want := "tok-" + ps[i]
				if i == fStatus12 {
					want = "first-token"
				}
				require.Equal(t, want, m.ProviderMessageID, "message %d", i)
			}

			// Permanent codes: Failed at the first answer, named.
			for i, want := range map[int]string{
				fBadData: "BAD_DATA (3)", fNotPermitted: "NOT_PERMITTED (13)", fBadPhone: "INVALID_PHONE_NUMBER (27)",
				fUnknownCode: "BAD_DATA (3)", fNotUser: "NOT_VIBER_USER (9)",
			} {
				m := w.message(msgs[i].ID)
				require.Equal(t, messaging.StatusFailed, m.Status, "message %d", i)
				require.Equal(t, want, m.Details, "message %d", i)
				require.Len(t, provider.of(ps[i]), 1, "message %d: a permanent failure is not retried", i)
				require.Nil(t, m.SentAt, "message %d", i)
			}

			// Callbacks that came before the send's answer was recorded.
			at := provider.earlyAt(ps[fDeliveredFirst])
			m := w.message(msgs[fDeliveredFirst].ID)
			require.Equal(t, messaging.StatusDelivered, m.Status)
			require.Equal(t, at, m.DeliveredAt.UTC(), "the provider's time")
			require.Equal(t, at, m.SentAt.UTC(), "sent by the time it was delivered")
			at = provider.earlyAt(ps[fSeenFirst])
			m = w.message(msgs[fSeenFirst].ID)
			require.Equal(t, messaging.StatusSeen, m.Status)
			require.Equal(t, at, m.SeenAt.UTC())
			require.Equal(t, at, m.DeliveredAt.UTC(), "seen implies delivered")
			require.Equal(t, at, m.SentAt.UTC())
			m = w.message(msgs[fFailedFirst].ID)
			require.Equal(t, messaging.StatusFailed, m.Status, "the send's late answer does not undo the failure")
			require.Equal(t, "USER_BLOCKED (8)", m.Details, "the form of a send refused for the same reason")

			// The SMS fallbacks: one each, through the fallback sender.
			requireFallbacks := func(want map[int]bool) {
				t.Helper()
				all, _, err := s.ListMessages(t.Context(), w.co.ID, messaging.MessageFilter{
					PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
				require.NoError(t, err)
				fallbacks := map[messaging.ID]messaging.Message{}
				for _, x := range all {
					if x.IsFallback() {
						require.NotContains(t, fallbacks, x.FallbackFor, "one fallback per chat message")
						fallbacks[x.FallbackFor] = x
					}
				}
				require.Len(t, fallbacks, len(want))
				for i := range want {
					fb, ok := fallbacks[msgs[i].ID]
					require.True(t, ok, "message %d has a fallback", i)
					require.Equal(t, messaging.StatusSent, fb.Status, "message %d", i)
					require.Equal(t, fmt.Sprintf("SMS %d", i), fb.Content)
					require.Equal(t, 1, sms.callsTo(ps[i]), "message %d: its fallback is sent once", i)
				}
			}
			requireFallbacks(map[int]bool{fNotUser: true, fFailedFirst: true})
			for _, x := range sms.sends() {
				require.Equal(t, "HeraldFB", x.From)
			}

			// After completion: a failure reported late, twice, is stored
			// once and its fallback is sent; the campaign stays Completed.
			// The same body again is a replay.
			lateAt := time.Now()
			late := statusCallback(msgs[fLateFailure].ID, "failed", 10, lateAt)
			require.Equal(t, http.StatusOK, postSigned(t, cbURL, late))
			require.Equal(t, http.StatusOK, postSigned(t, cbURL, statusCallback(msgs[fLateFailure].ID, "failed", 10, lateAt.Add(time.Millisecond))))
			require.Equal(t, http.StatusUnauthorized, postSigned(t, cbURL, late), "a replay")
			got = w.waitCampaign(c.ID, "the late fallback sent", func(c messaging.Campaign) bool { return c.FallbackCounts.Sent == 3 })
			require.Equal(t, messaging.CampaignCompleted, got.Status)
			require.Equal(t, "NO_SUITABLE_DEVICE (10)", w.message(msgs[fLateFailure].ID).Details)
			requireFallbacks(map[int]bool{fNotUser: true, fFailedFirst: true, fLateFailure: true})

			// Duplicated and out-of-order callbacks: forward only, at the
			// provider's times.
			t0 := time.Now().UTC().Truncate(time.Millisecond)
			id := msgs[fCallbacks].ID
			for _, cb := range [][]byte{
				statusCallback(id, "delivered", 0, t0),
				statusCallback(id, "delivered", 0, t0.Add(-time.Millisecond)),
				statusCallback(id, "seen", 0, t0.Add(time.Second)),
				statusCallback(id, "seen", 0, t0.Add(2*time.Second)),
				statusCallback(id, "delivered", 0, t0.Add(3*time.Second)),
				statusCallback(id, "failed", 9, t0.Add(4*time.Second)),
				statusCallback(id, "expired", 0, t0.Add(5*time.Second)),
			} {
				require.Equal(t, http.StatusOK, postSigned(t, cbURL, cb))
			}
			m = w.message(id)
			require.Equal(t, messaging.StatusSeen, m.Status)
			require.Equal(t, t0, m.DeliveredAt.UTC())
			require.Equal(t, t0.Add(time.Second), m.SeenAt.UTC())
			require.Empty(t, m.Details)

			// Badly signed callbacks: 401, nothing stored.
			id = msgs[fBadSignature].ID
			body := statusCallback(id, "delivered", 0, t0)
			other := statusCallback(id, "seen", 0, t0)
			for name, sig := range map[string]string{
				"none":         "",
				"wrong secret": chat.Sign("another-secret", body),
				"another body": chat.Sign(callbackSecret, other),
				"not hex":      "zz" + chat.Sign(callbackSecret, body)[2:],
				"truncated":    chat.Sign(callbackSecret, body)[:32],
				"extra bytes":  chat.Sign(callbackSecret, body) + "00",
			} {
				require.Equal(t, http.StatusUnauthorized, postCallback(t, cbURL, body, sig), name)
			}
			m = w.message(id)
			require.Equal(t, messaging.StatusSent, m.Status)
			require.Nil(t, m.DeliveredAt)
			require.Equal(t, "tok-"+ps[fBadSignature], m.ProviderMessageID)

			got = w.get(c.ID)
			require.Equal(t, messaging.StatusCounts{Sent: 8, Delivered: 1, Seen: 2, Failed: 7}, got.Counts)
			require.Equal(t, messaging.StatusCounts{Sent: 3}, got.FallbackCounts)
			require.Equal(t, messaging.CampaignCompleted, got.Status)
		})
	}
}
