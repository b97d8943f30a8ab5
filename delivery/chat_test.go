package delivery_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// fakeChat is a scripted ChatSender.
type fakeChat struct {
	mu      sync.Mutex
	got     []delivery.ChatSend
	outcome func(m delivery.ChatSend, call int) (delivery.ChatAccepted, error)
	calls   map[string]int
}

func (f *fakeChat) SendChat(ctx context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[m.To]++
	call := f.calls[m.To]
	f.got = append(f.got, m)
	f.mu.Unlock()
	if f.outcome != nil {
		return f.outcome(m, call)
	}
	return delivery.ChatAccepted{ProviderID: "tok-" + m.To}, nil
}

func (f *fakeChat) sent(to string) []delivery.ChatSend {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []delivery.ChatSend
	for _, m := range f.got {
		if m.To == to {
			out = append(out, m)
		}
	}
	return out
}

// TestChatLane: chat messages go out with the campaign's service, type and
// extras, a sequence number of their own that stays the same on retries;
// ALREADY_SENT is a success; permanent failures are recorded with their
// code.
func TestChatLane(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	ps := phones(8, 8000)
	chat := &fakeChat{outcome: func(m delivery.ChatSend, call int) (delivery.ChatAccepted, error) {
		switch {
		case m.To == ps[1] && call == 1:
			return delivery.ChatAccepted{}, &delivery.SendError{Code: "7", Details: "TIMEOUT"}
		case m.To == ps[1]:
			return delivery.ChatAccepted{AlreadySent: true, ProviderID: "first-token"}, nil
		case m.To == ps[2]:
			return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonBlocked, "8", nil)
		case m.To == ps[3]:
			return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonInvalidNumber, "27", nil)
		case m.To == ps[4]:
			return delivery.ChatAccepted{}, &delivery.SendError{Permanent: true, Details: "BAD_TOKEN"}
		}
		return delivery.ChatAccepted{ProviderID: "tok-" + m.To}, nil
	}}
	cfg := fastConfig(s)
	cfg.Chat = chat
	cfg.ChatTTL = time.Hour
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	config := &messaging.ChatConfig{ButtonText: "Open", ButtonURL: "https://example.com/a"}
	c, msgs := w.campaign(spec{channel: messaging.ChannelChat, phones: ps, msgType: messaging.TypeButtonPlusText, config: config})
	own := &messaging.ChatConfig{ButtonText: "Open", ButtonURL: "https://example.com/own"}
	run(t, d)
	got := w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
	require.Equal(t, messaging.StatusCounts{Sent: 5, Failed: 3}, got.Counts)

	seqs := map[int64]string{}
	for i, m := range msgs {
		sent := chat.sent(m.Phone)
		require.NotEmpty(t, sent, "message %d", i)
		for _, cm := range sent {
			require.Equal(t, m.ID, cm.MessageID)
			require.Equal(t, "acme-brand", cm.Sender)
			require.Equal(t, w.chat.ID, cm.ServiceID)
			require.Equal(t, w.co.ID, cm.CompanyID)
			require.Equal(t, messaging.TypeButtonPlusText, cm.Type)
			require.Equal(t, *config, cm.Config)
			require.Equal(t, m.Content, cm.Text)
			require.Equal(t, time.Hour, cm.TTL)
			require.Equal(t, sent[0].Ref, cm.Ref, "a retry keeps the sequence number")
		}
		require.NotContains(t, seqs, sent[0].Ref, "sequence numbers are unique")
		seqs[sent[0].Ref] = m.Phone
	}
	require.Len(t, chat.sent(ps[1]), 2)
	m1 := w.message(msgs[1].ID)
	require.Equal(t, messaging.StatusSent, m1.Status, "ALREADY_SENT is a success")
	require.Equal(t, "first-token", m1.ProviderMessageID)
	require.Equal(t, "tok-"+ps[0], w.message(msgs[0].ID).ProviderMessageID)
	for i, want := range map[int]string{2: "USER_BLOCKED (8)", 3: "INVALID_PHONE_NUMBER (27)", 4: "BAD_TOKEN"} {
		m := w.message(msgs[i].ID)
		require.Equal(t, messaging.StatusFailed, m.Status)
		require.Equal(t, want, m.Details)
		require.Len(t, chat.sent(ps[i]), 1, "a permanent failure is not retried")
	}

	// A message's own extras override the campaign's.
	tx, _ := w.campaign(spec{channel: messaging.ChannelChat, mode: messaging.ModeTransactional, msgType: messaging.TypeButtonPlusText, config: config})
	m := &messaging.Message{ID: w.ids.New(), CompanyID: w.co.ID, CampaignID: tx.ID, Channel: messaging.ChannelChat, Phone: "447700900555",
		Content: "Yours", Config: own, Status: messaging.StatusPending, DueAt: time.Now(), CreatedAt: time.Now(), UpdatedAt: time.Now()}
	require.NoError(t, s.AdmitMessages(t.Context(), w.co.ID, []*messaging.Message{m}, 1<<30))
	d.Wake()
	waitFor(t, "own-config message sent", func() bool { return w.message(m.ID).Status == messaging.StatusSent })
	require.Equal(t, *own, chat.sent("447700900555")[0].Config)
}

// TestChatFailureHook: a permanent chat failure goes through
// OnChatFailure; a fallback SMS it inserts goes through the SMS lane with
// the fallback sender, and the campaign waits for it to complete.
func TestChatFailureHook(t *testing.T) {
	s := memstore.New()
	w := newWorld(t, s)
	ps := phones(4, 9008) // ...9008 blocked, 9009 not a user, 9010 and 9011 fine
	chat := &fakeChat{outcome: func(m delivery.ChatSend, call int) (delivery.ChatAccepted, error) {
		switch m.To[len(m.To)-4:] {
		case "9008":
			return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonBlocked, "8", nil)
		case "9009":
			if call == 1 {
				return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonNotOnChannel, "9", nil)
			}
		}
		return delivery.ChatAccepted{ProviderID: "t"}, nil
	}}
	sms := newFakeSMS()
	var mu sync.Mutex
	var hooked []string
	hookCalls := map[string]int{}
	cfg := fastConfig(s)
	cfg.Chat, cfg.SMS = chat, sms
	cfg.OnChatFailure = func(ctx context.Context, m messaging.Message, se *delivery.SendError) (bool, error) {
		mu.Lock()
		hookCalls[m.Phone]++
		first := hookCalls[m.Phone] == 1
		mu.Unlock()
		require.Equal(t, messaging.StatusSending, m.Status)
		if se.Code == "9" && first {
			return false, context.DeadlineExceeded // the hook failed: the message is retried
		}
		if se.Code != "8" {
			return false, nil
		}
		mu.Lock()
		hooked = append(hooked, m.Phone)
		mu.Unlock()
		ok, err := s.ApplyUpdates(ctx, []delivery.StatusUpdate{{MessageID: m.ID, Status: messaging.StatusFailed, At: time.Now(), Details: se.Details + " (" + se.Code + ")"}})
		require.NoError(t, err)
		require.Equal(t, []bool{true}, ok)
		fb := &messaging.Message{ID: w.ids.New(), CompanyID: m.CompanyID, CampaignID: m.CampaignID, Channel: messaging.ChannelSMS,
			Phone: m.Phone, Content: "SMS instead", FallbackFor: m.ID, Status: messaging.StatusPending,
			DueAt: time.Now(), CreatedAt: time.Now(), UpdatedAt: time.Now()}
		require.NoError(t, s.AdmitMessages(ctx, m.CompanyID, []*messaging.Message{fb}, 1<<30))
		return true, nil
	}
	d, err := delivery.New(cfg)
	require.NoError(t, err)
	c, msgs := w.campaign(spec{channel: messaging.ChannelChat, phones: ps})
	run(t, d)
	got := w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
	require.Equal(t, messaging.StatusCounts{Sent: 3, Failed: 1}, got.Counts)
	require.Equal(t, messaging.StatusCounts{Sent: 1}, got.FallbackCounts)
	require.Equal(t, []string{ps[0]}, hooked)
	require.Equal(t, "USER_BLOCKED (8)", w.message(msgs[0].ID).Details)
	sends := sms.sends()
	require.Len(t, sends, 1)
	require.NotNil(t, sends[0].Withdraw, "a pause of its campaign would withdraw it")
	sends[0].Withdraw = nil
	require.Equal(t, delivery.SMS{MessageID: sends[0].MessageID, CompanyID: w.co.ID, From: "HeraldFB", To: ps[0], Text: "SMS instead"}, sends[0])
	require.Len(t, chat.sent(ps[1]), 2, "a failed hook has the message sent again")
	require.Equal(t, messaging.StatusSent, w.message(msgs[1].ID).Status)
}

// limitedChat is a chat sender that bounds its sends (SendLimiter) while
// down, failing every send transiently then, and records the most sends
// it had in flight at once, down and up.
type limitedChat struct {
	down                     atomic.Bool
	mu                       sync.Mutex
	inFlight, maxDown, maxUp int
	downSends                int
	limit                    int
}

// sendsWhileDown returns how many sends were made while down.
func (c *limitedChat) sendsWhileDown() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.downSends
}

func (c *limitedChat) SendLimit() int {
	if c.down.Load() {
		return c.limit
	}
	return 0
}

func (c *limitedChat) SendChat(ctx context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	down := c.down.Load()
	c.mu.Lock()
	c.inFlight++
	if down {
		c.maxDown = max(c.maxDown, c.inFlight)
		c.downSends++
	} else {
		c.maxUp = max(c.maxUp, c.inFlight)
	}
	c.mu.Unlock()
	time.Sleep(time.Millisecond) // a request's round trip, so that sends overlap
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
	if down {
		return delivery.ChatAccepted{}, &delivery.SendError{Details: "HTTP 503"}
	}
	return delivery.ChatAccepted{ProviderID: "t"}, nil
}

// TestSendLimiter: while the sender bounds its sends, the lane keeps no
// more than that many claimed at once (the sends that probe a provider
// that is down), and sends at its full concurrency again once the bound
// is lifted; every message ends Sent.
func TestSendLimiter(t *testing.T) {
	for _, limit := range []int{1, 3} {
		s := memstore.New()
		w := newWorld(t, s)
		chat := &limitedChat{limit: limit}
		chat.down.Store(true)
		cfg := fastConfig(s)
		cfg.Chat = chat
		cfg.ChatConcurrency = 64
		d, err := delivery.New(cfg)
		require.NoError(t, err)
		c, _ := w.campaign(spec{channel: messaging.ChannelChat, phones: phones(200, 0)})
		run(t, d)
		waitFor(t, "sends while down", func() bool {
			m := w.get(c.ID)
			return m.Counts.Pending > 0 && m.Counts.Sent == 0 && chat.sendsWhileDown() >= 20
		})
		chat.down.Store(false)
		w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool {
			return c.Status == messaging.CampaignCompleted && c.Counts.Sent == 200
		})
		chat.mu.Lock()
		require.LessOrEqual(t, chat.maxDown, limit, "sends in flight while the sender bounds them")
		require.Greater(t, chat.maxUp, limit, "the lane's own concurrency once the bound is lifted")
		chat.mu.Unlock()
	}
}
