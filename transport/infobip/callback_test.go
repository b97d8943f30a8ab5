package infobip_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
	"github.com/heraldhq/herald/transport/infobip"
)

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04:05.000-0700", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestGoldenReports(t *testing.T) {
	cases := []struct {
		file     string
		statuses [][]delivery.ChatStatus
		inbound  []delivery.ChatInbound
	}{
		{"report_delivered.json", [][]delivery.ChatStatus{{{MessageID: testID(), ProviderID: testID().String(),
			Status: messaging.StatusDelivered, Detail: "DELIVERED_TO_HANDSET", At: at("2026-11-27T10:15:04.480+0000")}}}, nil},
		{"report_batch.json", [][]delivery.ChatStatus{{
			{MessageID: testID(), ProviderID: testID().String(), Status: messaging.StatusDelivered, Detail: "DELIVERED_TO_HANDSET",
				At: at("2026-11-27T10:15:04.480+0000")},
			{MessageID: testID2(), ProviderID: testID2().String(), Status: messaging.StatusFailed, Reason: delivery.ReasonBlocked,
				Detail: "UNDELIVERABLE_NOT_DELIVERED/USER_BLOCKED", At: at("2026-11-27T10:15:03.010+0000")},
			{MessageID: testID3(), ProviderID: testID3().String(), Status: messaging.StatusFailed, Reason: delivery.ReasonExpired,
				Detail: "EXPIRED_EXPIRED", At: at("2026-11-27T11:15:02.140+0000")},
		}}, nil},
		{"report_seen.json", [][]delivery.ChatStatus{{{MessageID: testID(), ProviderID: testID().String(),
			Status: messaging.StatusSeen, Detail: "SEEN", At: at("2026-11-27T10:16:40.000+0000")}}}, nil},
		{"report_pending.json", nil, nil},
		{"inbound_text.json", nil, []delivery.ChatInbound{{ServiceID: 42, Sender: "HeraldShop", Kind: delivery.InboundText, Phone: "385981234567",
			Text: "Can I change the delivery address?", OptionIndex: -1, At: at("2026-11-27T10:20:00.000+0000")}}},
		{"inbound_survey_reply.json", nil, []delivery.ChatInbound{{ServiceID: 42, Sender: "HeraldShop", Kind: delivery.InboundReply, MessageID: testID(),
			Phone: "385981234567", Text: "No", OptionIndex: 1, At: at("2026-11-27T10:21:30.000+0000")}}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			rep := newReporter()
			a := newAdapter(t, "http://127.0.0.1:1", rep)
			require.Equal(t, http.StatusOK, post(t, a, testUser, testPassword, golden(t, tc.file)))
			statuses, inbound := rep.calls()
			require.Len(t, statuses, len(tc.statuses), "one ChatStatuses call per request")
			for i := range tc.statuses {
				require.Len(t, statuses[i], len(tc.statuses[i]))
				for j, want := range tc.statuses[i] {
					got := statuses[i][j]
					require.True(t, want.At.Equal(got.At), "%v %v", want.At, got.At)
					got.At = want.At
					require.Equal(t, want, got)
				}
			}
			require.Len(t, inbound, len(tc.inbound))
			for i, want := range tc.inbound {
				got := inbound[i]
				require.True(t, want.At.Equal(got.At))
				got.At = want.At
				require.Equal(t, want, got)
			}
		})
	}
}

func TestReportCredentials(t *testing.T) {
	rep := newReporter()
	a := newAdapter(t, "http://127.0.0.1:1", rep)
	body := golden(t, "report_delivered.json")
	require.Equal(t, http.StatusUnauthorized, post(t, a, "", "", body), "no credentials")
	require.Equal(t, http.StatusUnauthorized, post(t, a, testUser, "wrong", body), "wrong password")
	require.Equal(t, http.StatusUnauthorized, post(t, a, "someone", testPassword, body), "wrong user")
	require.Equal(t, http.StatusUnauthorized, post(t, a, testUser, testPassword+"x", body), "longer password")
	statuses, inbound := rep.calls()
	require.Empty(t, statuses)
	require.Empty(t, inbound)
	// The forged requests did not use up the report: the real one is taken.
	require.Equal(t, http.StatusOK, post(t, a, testUser, testPassword, body))
	statuses, _ = rep.calls()
	require.Len(t, statuses, 1)
}

func TestReportReplay(t *testing.T) {
	rep := newReporter()
	a := newAdapter(t, "http://127.0.0.1:1", rep)
	for _, f := range []string{"report_batch.json", "report_seen.json", "inbound_survey_reply.json", "report_pending.json"} {
		body := golden(t, f)
		require.Equal(t, http.StatusOK, post(t, a, testUser, testPassword, body), f)
		require.Equal(t, http.StatusUnauthorized, post(t, a, testUser, testPassword, body), "%s again", f)
	}
	statuses, inbound := rep.calls()
	require.Len(t, statuses, 2) // the batch and the seen report, once each
	require.Len(t, inbound, 1)

	// A request with one new report among known ones reports the new one.
	rep2 := newReporter()
	b := newAdapter(t, "http://127.0.0.1:1", rep2)
	require.Equal(t, http.StatusOK, post(t, b, testUser, testPassword, golden(t, "report_delivered.json")))
	require.Equal(t, http.StatusOK, post(t, b, testUser, testPassword, golden(t, "report_batch.json")))
	statuses, _ = rep2.calls()
	require.Len(t, statuses, 2)
	require.Len(t, statuses[1], 2, "the delivered report was taken before")
	require.Equal(t, testID2(), statuses[1][0].MessageID)
}

func TestReportNotStoredIsSentAgain(t *testing.T) {
	rep := newReporter()
	a := newAdapter(t, "http://127.0.0.1:1", rep)
	body := golden(t, "report_batch.json")
	rep.setFail(errors.New("database down"))
	require.Equal(t, http.StatusInternalServerError, post(t, a, testUser, testPassword, body))
	rep.setFail(nil)
	require.Equal(t, http.StatusOK, post(t, a, testUser, testPassword, body), "Infobip's next post is taken")
	statuses, _ := rep.calls()
	require.Len(t, statuses, 1)
	require.Len(t, statuses[0], 3)
}

func TestBadReports(t *testing.T) {
	rep := newReporter()
	a := newAdapter(t, "http://127.0.0.1:1", rep)
	for _, body := range []string{
		`not json`,
		`{}`,
		`{"results":[{"foo":1}]}`,
		`{"results":[{"messageId":"` + testID().String() + `","status":{"groupId":3,"id":5},"doneAt":"yesterday"}]}`,
		`{"results":[{"messageId":"m1","receivedAt":"2026-11-27T10:20:00.000+0000","message":{"type":"TEXT","text":"hi"}}]}`,
		`{"results":[{"messageId":"m1","sender":"385981234567","message":{"type":"AUDIO"}}]}`,
	} {
		require.Equal(t, http.StatusBadRequest, post(t, a, testUser, testPassword, []byte(body)), body)
	}
	statuses, inbound := rep.calls()
	require.Empty(t, statuses)
	require.Empty(t, inbound)

	// A report of a message Herald did not send is dropped, the others
	// of its request reported.
	other := `{"results":[{"messageId":"infobip-own-id","status":{"groupId":3,"id":5}},` +
		`{"messageId":"` + testID().String() + `","status":{"groupId":3,"id":5}}]}`
	require.Equal(t, http.StatusOK, post(t, a, testUser, testPassword, []byte(other)))
	statuses, _ = rep.calls()
	require.Len(t, statuses, 1)
	require.Len(t, statuses[0], 1)
	require.Equal(t, testID(), statuses[0][0].MessageID)

	req, w := newGet()
	a.ServeHTTP(w, req)
	require.Equal(t, http.StatusMethodNotAllowed, w.Code)
}

// failingGuard is a replay guard whose store is down.
type failingGuard struct{}

func (failingGuard) Seen(context.Context, string, time.Time) (bool, error) {
	return false, errors.New("store down")
}

func TestReplayGuardFailure(t *testing.T) {
	rep := newReporter()
	a, err := infobip.New(context.Background(), chatprovider.Settings{
		ServiceID: 42, Sender: "HeraldShop", Credentials: testCreds(), Reporter: rep, Replays: failingGuard{},
	})
	require.NoError(t, err)
	defer a.Close()
	require.Equal(t, http.StatusInternalServerError, post(t, a, testUser, testPassword, golden(t, "report_delivered.json")))
	statuses, _ := rep.calls()
	require.Empty(t, statuses, "nothing is reported unchecked")
}

// keepingGuard is a replay guard that cannot forget, like the stores'.
type keepingGuard struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (g *keepingGuard) Seen(_ context.Context, key string, _ time.Time) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	dup := g.keys[key]
	g.keys[key] = true
	return dup, nil
}

func TestReportNotStoredWithGuardThatCannotForget(t *testing.T) {
	rep := newReporter()
	a, err := infobip.New(context.Background(), chatprovider.Settings{
		ServiceID: 42, Sender: "HeraldShop", Credentials: testCreds(), Reporter: rep,
		Replays: &keepingGuard{keys: map[string]bool{}},
	})
	require.NoError(t, err)
	defer a.Close()
	body := golden(t, "report_batch.json")
	rep.setFail(errors.New("database down"))
	require.Equal(t, http.StatusInternalServerError, post(t, a, testUser, testPassword, body))
	require.Equal(t, http.StatusInternalServerError, post(t, a, testUser, testPassword, body), "failed again")
	rep.setFail(nil)
	require.Equal(t, http.StatusOK, post(t, a, testUser, testPassword, body), "Infobip's next post is taken")
	require.Equal(t, http.StatusUnauthorized, post(t, a, testUser, testPassword, body), "then it is a replay")
	statuses, _ := rep.calls()
	require.Len(t, statuses, 1)
	require.Len(t, statuses[0], 3)
}

// batchingGuard is a replay guard that records the keys of a request in
// one call, as the stores do, and counts its calls.
type batchingGuard struct {
	keepingGuard
	seenAll, seen int
}

func (g *batchingGuard) Seen(ctx context.Context, key string, until time.Time) (bool, error) {
	g.seen++
	return g.keepingGuard.Seen(ctx, key, until)
}

func (g *batchingGuard) SeenAll(ctx context.Context, keys []string, until time.Time) ([]bool, error) {
	g.seenAll++
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i], _ = g.keepingGuard.Seen(ctx, k, until)
	}
	return out, nil
}

// TestReportKeysInOneCall: the reports of a request are checked against
// replays in one call of a guard that takes several keys (one store
// write), with the same outcome as key by key.
func TestReportKeysInOneCall(t *testing.T) {
	rep := newReporter()
	g := &batchingGuard{keepingGuard: keepingGuard{keys: map[string]bool{}}}
	a, err := infobip.New(context.Background(), chatprovider.Settings{
		ServiceID: 42, Sender: "HeraldShop", Credentials: testCreds(), Reporter: rep, Replays: g,
	})
	require.NoError(t, err)
	defer a.Close()
	require.Equal(t, http.StatusOK, post(t, a, testUser, testPassword, golden(t, "report_delivered.json")))
	require.Equal(t, http.StatusOK, post(t, a, testUser, testPassword, golden(t, "report_batch.json")))
	require.Equal(t, http.StatusUnauthorized, post(t, a, testUser, testPassword, golden(t, "report_batch.json")), "a replay")
	require.Equal(t, 3, g.seenAll, "one call a request")
	require.Zero(t, g.seen, "no key alone")
	statuses, _ := rep.calls()
	require.Len(t, statuses, 2)
	require.Len(t, statuses[1], 2, "the delivered report was taken before")
}
