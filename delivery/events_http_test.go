package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/transport/chat"
)

// callbackSecret keys the signatures of the callbacks in these tests.
const callbackSecret = "callback-secret"

// callbackEndpoint serves the callback endpoint (chat.CallbackHandler over
// events) on loopback and returns its URL.
func callbackEndpoint(t testing.TB, events *delivery.ChatEvents) string {
	t.Helper()
	srv := httptest.NewServer(chat.CallbackHandler(chat.CallbackConfig{Secret: callbackSecret, Reporter: delivery.Reports{Chat: events}, Logger: testLogger()}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// statusCallback is the JSON body of a status callback of message id.
func statusCallback(id messaging.ID, status string, code int, at time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"event": "status", "message_token": "tok-" + id.String(), "tracking_data": id.String(),
		"status": status, "error_code": code, "timestamp": at.UnixMilli(), "phone_number": "447900000000"})
	return b
}

// postCallback POSTs body to url with the given signature ("" for none)
// and returns the HTTP status of the answer.
func postCallback(t testing.TB, url string, body []byte, sig string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set(chat.SignatureHeader, sig)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// postSigned POSTs body signed with callbackSecret.
func postSigned(t testing.TB, url string, body []byte) int {
	t.Helper()
	return postCallback(t, url, body, chat.Sign(callbackSecret, body))
}

// poisonStore is a real store whose ApplyUpdates fails for any group that
// holds an update of the poisoned message, as a database fails a
// transaction for one bad row, and holds its first ApplyUpdates until
// release is closed.
type poisonStore struct {
	*sqlstore.Store
	poison  messaging.ID
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	sizes   []int
	cured   bool
}

func (p *poisonStore) ApplyUpdates(ctx context.Context, us []delivery.StatusUpdate) ([]bool, error) {
	p.mu.Lock()
	p.sizes = append(p.sizes, len(us))
	cured := p.cured
	p.mu.Unlock()
	p.once.Do(func() {
		close(p.entered)
		<-p.release
	})
	for _, u := range us {
		if u.MessageID == p.poison && !cured {
			return nil, messaging.Errorf(messaging.Unavailable, "", "a row the database refuses")
		}
	}
	return p.Store.ApplyUpdates(ctx, us)
}

// sentChatMessages admits n chat messages of a new transactional chat
// campaign, Sent at sent, and returns them.
func sentChatMessages(t testing.TB, w *world, n int, sent time.Time) (messaging.Campaign, []*messaging.Message) {
	t.Helper()
	c, _ := w.campaign(spec{channel: messaging.ChannelChat, mode: messaging.ModeTransactional})
	msgs := make([]*messaging.Message, n)
	for i, p := range phones(n, 0) {
		msgs[i] = &messaging.Message{ID: w.ids.New(), CompanyID: w.co.ID, CampaignID: c.ID, Channel: messaging.ChannelChat,
			Phone: p, Content: "Hello", Status: messaging.StatusSent, ProviderMessageID: "tok", SentAt: &sent,
			DueAt: sent, CreatedAt: sent, UpdatedAt: sent}
	}
	require.NoError(t, w.s.AdmitMessages(t.Context(), w.co.ID, msgs, 1<<30))
	return c, msgs
}

// TestChatEventsGroupFailure: when the group write of concurrent callbacks
// fails because of one of them, the others are written one by one and
// answered 200; only the callback at fault is answered 500, and stored
// when the provider posts it again.
func TestChatEventsGroupFailure(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			base := openStore(t, db.url(t))
			w := newWorld(t, base)
			sent := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Minute)
			c, msgs := sentChatMessages(t, w, 12, sent)
			st := &poisonStore{Store: base, poison: msgs[5].ID, entered: make(chan struct{}), release: make(chan struct{})}
			events := delivery.NewChatEvents(delivery.ChatEventsConfig{Store: st, Answers: answers(t, base), Logger: testLogger()})
			url := callbackEndpoint(t, events)
			at := sent.Add(10 * time.Second)

			codes := make([]int, len(msgs))
			var wg sync.WaitGroup
			post := func(i int) {
				defer wg.Done()
				codes[i] = postSigned(t, url, statusCallback(msgs[i].ID, "delivered", 0, at))
			}
			wg.Add(1)
			go post(0)
			<-st.entered // the first write is held: the others queue behind it
			for i := 1; i < len(msgs); i++ {
				wg.Add(1)
				go post(i)
			}
			waitFor(t, "every other callback queued", func() bool { return delivery.QueuedEvents(events) == len(msgs)-1 })
			close(st.release)
			wg.Wait()

			for i, code := range codes {
				want := http.StatusOK
				if i == 5 {
					want = http.StatusInternalServerError
				}
				require.Equal(t, want, code, "callback %d", i)
			}
			st.mu.Lock()
			require.Equal(t, []int{1, len(msgs) - 1}, st.sizes[:2], "the held write, then the rest together")
			require.Len(t, st.sizes, 2+len(msgs)-1, "then each of the failed group alone")
			st.mu.Unlock()
			for i, m := range msgs {
				got := w.message(m.ID)
				if i == 5 {
					require.Equal(t, messaging.StatusSent, got.Status)
					require.Nil(t, got.DeliveredAt)
					continue
				}
				require.Equal(t, messaging.StatusDelivered, got.Status, "message %d", i)
				require.Equal(t, at, got.DeliveredAt.UTC(), "message %d: the provider's time", i)
			}
			require.Equal(t, messaging.StatusCounts{Sent: 1, Delivered: len(msgs) - 1}, w.get(c.ID).Counts)

			// The provider posts the refused callback again.
			st.mu.Lock()
			st.cured = true
			st.mu.Unlock()
			require.Equal(t, http.StatusOK, postSigned(t, url, statusCallback(msgs[5].ID, "delivered", 0, at)))
			require.Equal(t, messaging.StatusDelivered, w.message(msgs[5].ID).Status)
			require.Equal(t, messaging.StatusCounts{Delivered: len(msgs)}, w.get(c.ID).Counts)
		})
	}
}
