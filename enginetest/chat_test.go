package enginetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"pgregory.net/rapid"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// Outcomes of a chat message, decided by its number: the provider
// delivers it, or delivers it and the person reads it, or refuses it at
// the send (the person blocked the service: 8), or accepts it and reports
// later that the number has no account on the channel (9).
const (
	outDelivered    = "delivered"
	outSeen         = "seen"
	outBlocked      = "blocked"
	outNotOnChannel = "notOnChannel"
)

// chatOutcomes are the outcomes a number is drawn from.
var chatOutcomes = []string{outDelivered, outSeen, outBlocked, outNotOnChannel}

// chatProvider is the chat provider of a sequence, shared by its
// processes: it decides each message by its number, accepts a message
// once (a resend is AlreadySent) and remembers what it has still to
// report.
type chatProvider struct {
	mu       sync.Mutex
	outcome  map[string]string // number, digits only -> outcome
	accepted map[messaging.ID]*chatSent
	order    []messaging.ID // accepted, in order
}

// chatSent is one message the provider accepted.
type chatSent struct {
	id       messaging.ID
	to       string
	token    string
	reported bool
}

func newChatProvider() *chatProvider {
	return &chatProvider{outcome: map[string]string{}, accepted: map[messaging.ID]*chatSent{}}
}

// decide records the outcome of a number.
func (p *chatProvider) decide(phone, outcome string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.outcome[strings.TrimPrefix(phone, "+")] = outcome
}

// outcomeOf returns the outcome of a number ("" when not a chat number).
func (p *chatProvider) outcomeOf(phone string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.outcome[strings.TrimPrefix(phone, "+")]
}

// unreported returns the accepted messages whose outcome the provider
// has still to report.
func (p *chatProvider) unreported() []chatSent {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []chatSent
	for _, id := range p.order {
		if s := p.accepted[id]; !s.reported {
			out = append(out, *s)
		}
	}
	return out
}

// reported marks a message's outcome reported.
func (p *chatProvider) reported(id messaging.ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.accepted[id].reported = true
}

// status is the report of an accepted message's outcome.
func (p *chatProvider) status(s chatSent, at time.Time) delivery.ChatStatus {
	st := delivery.ChatStatus{MessageID: s.id, ProviderID: s.token, At: at}
	switch p.outcomeOf(s.to) {
	case outSeen:
		st.Status = messaging.StatusSeen
	case outNotOnChannel:
		st.Status, st.Reason, st.Detail = messaging.StatusFailed, delivery.ReasonNotOnChannel, "9"
	default:
		st.Status = messaging.StatusDelivered
	}
	return st
}

// chatSender is one process's connection to the provider; it fails every
// send once its process was killed.
type chatSender struct {
	p    *chatProvider
	gone chan struct{}
}

// SendChat implements delivery.ChatSender.
func (s *chatSender) SendChat(_ context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	select {
	case <-s.gone:
		return delivery.ChatAccepted{}, errDead
	default:
	}
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.outcome[m.To] {
	case "":
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonInvalidNumber, "unknown number "+m.To, nil)
	case outBlocked:
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonBlocked, "8", nil)
	}
	if prev, ok := p.accepted[m.MessageID]; ok {
		return delivery.ChatAccepted{ProviderID: prev.token, AlreadySent: true}, nil
	}
	sent := &chatSent{id: m.MessageID, to: m.To, token: fmt.Sprintf("tok-%d", len(p.order)+1)}
	p.accepted[m.MessageID] = sent
	p.order = append(p.order, m.MessageID)
	return delivery.ChatAccepted{ProviderID: sent.token}, nil
}

// chatActions are the chat operations of a sequence: direct chat sends
// with an SMS fallback to numbers of drawn outcomes, and the provider's
// reports of what it accepted, in any order.
func (w *world) chatActions(actions map[string]func(*rapid.T)) {
	ctx := context.Background()
	actions["chat"] = func(t *rapid.T) {
		ci := rapid.IntRange(0, 1).Draw(t, "company")
		co := w.companies[ci]
		rs := make([]campaign.Recipient, rapid.IntRange(1, 4).Draw(t, "recipients"))
		for i := range rs {
			rs[i].Phone = w.phone()
			w.chat.decide(rs[i].Phone, rapid.SampledFrom(chatOutcomes).Draw(t, "outcome"))
		}
		res, err := w.api.Campaigns().SendDirectChat(ctx, co.id, campaign.DirectChat{Content: "Your code is 1234",
			ChatServiceID: co.chatService, SMSFallbackText: "Your code is 1234 (SMS)", SMSFallbackSenderID: co.sender, Recipients: rs})
		must(t, err)
		w.addCamp(res.Campaign, ci, "chat", messaging.CampaignInProgress)
		w.waitPrepared(t, co.id, res.Campaign.ID)
	}
	actions["chatReports"] = func(t *rapid.T) {
		live := w.live()
		if len(live) == 0 {
			t.Skip("no process to take reports")
		}
		open := w.chat.unreported()
		if len(open) == 0 {
			t.Skip("no report to send")
		}
		idx := rapid.Permutation(indexes(len(open))).Draw(t, "order")
		idx = idx[:rapid.IntRange(1, len(idx)).Draw(t, "reports")]
		for _, i := range idx {
			p := live[rapid.IntRange(0, len(live)-1).Draw(t, "taken by")]
			w.report(t, p.h.Reporter(), open[i])
		}
	}
}

// report hands the provider's report of s to r and marks it reported.
func (w *world) report(t *rapid.T, r delivery.Reporter, s chatSent) {
	rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := r.ChatStatuses(rctx, []delivery.ChatStatus{w.chat.status(s, w.clk.Now())})
	must(t, err)
	w.chat.reported(s.id)
}

// finishChat ends the chat part of a sequence once nothing waits: the
// provider reports every message it accepted, then every chat message
// must be final as its number's outcome says, with its fallback SMS
// exactly when it failed for 8, 9 or 10 (the SMS written once, from the
// chat message's id), and the campaign's counters those of its messages.
func (w *world) finishChat(t *rapid.T) {
	live := w.live()
	if len(live) == 0 {
		t.Fatalf("no live process to take the last chat reports")
	}
	last := w.chat.unreported()
	for _, s := range last {
		w.report(t, live[0].h.Reporter(), s)
	}
	w.chat.mu.Lock()
	w.tb.Logf("%s: the provider accepted %d chat messages of %d numbers, %d reported at the end", w.backend,
		len(w.chat.accepted), len(w.chat.outcome), len(last))
	w.chat.mu.Unlock()
	// The fallback SMS of the last reports are written and sent.
	for round := 0; ; round++ {
		w.check(t)
		why := w.chatUnsettled(w.read(t))
		if len(why) == 0 {
			return
		}
		if round == finishRounds {
			t.Fatalf("chat messages not as expected after %d rounds:\n  %s", finishRounds, strings.Join(why, "\n  "))
		}
		w.clk.advance(delivery.DefaultRetryMax + time.Minute)
		w.heartbeatsCatchUp(t)
	}
}

// chatDetails are the details of a chat message failed for each outcome.
var chatDetails = map[string]string{outBlocked: "USER_BLOCKED (8)", outNotOnChannel: "NOT_VIBER_USER (9)"}

// chatUnsettled lists how the chat campaigns differ from what their
// numbers' outcomes make of them.
func (w *world) chatUnsettled(vs []view) []string {
	var why []string
	for _, v := range vs {
		if w.byID[v.c.ID].kind != "chat" {
			continue
		}
		fallbacks := map[messaging.ID]messaging.Message{}
		for _, m := range v.msgs {
			if m.IsFallback() {
				fallbacks[m.ID] = m
			}
		}
		chats := 0
		for _, m := range v.msgs {
			if m.IsFallback() {
				continue
			}
			chats++
			out := w.chat.outcomeOf(m.Phone)
			want, details := messaging.StatusDelivered, ""
			switch out {
			case outSeen:
				want = messaging.StatusSeen
			case outBlocked, outNotOnChannel:
				want, details = messaging.StatusFailed, chatDetails[out]
			}
			// A number its company opted out before the message went
			// fails OPTED_OUT, without a fallback: the person asked for
			// nothing more, on any channel.
			optedOut := m.Status == messaging.StatusFailed && m.Details == campaign.DetailsOptedOut &&
				w.optedOut[optOutKey(m.CompanyID, m.Phone)]
			if optedOut {
				want, details = messaging.StatusFailed, campaign.DetailsOptedOut
			}
			if m.Status != want || m.Details != details {
				why = append(why, fmt.Sprintf("chat message %s to a %s number is %s %q, expected %s %q", m.ID, out, m.Status, m.Details, want, details))
			}
			fb, has := fallbacks[delivery.FallbackID(m.ID)]
			switch wantFB := !optedOut && (out == outBlocked || out == outNotOnChannel); {
			case wantFB && !has:
				why = append(why, fmt.Sprintf("chat message %s to a %s number has no fallback SMS", m.ID, out))
			case !wantFB && has:
				why = append(why, fmt.Sprintf("chat message %s to a %s number has a fallback SMS", m.ID, out))
			case has && (fb.Phone != m.Phone || fb.Channel != messaging.ChannelSMS || fb.Status.Unsent()):
				why = append(why, fmt.Sprintf("fallback SMS %s of %s: %s %s to %s", fb.ID, m.ID, fb.Channel, fb.Status, fb.Phone))
			}
			delete(fallbacks, delivery.FallbackID(m.ID))
		}
		for id := range fallbacks {
			why = append(why, fmt.Sprintf("fallback SMS %s of no chat message of campaign %s", id, v.c.ID))
		}
		if v.c.Status != messaging.CampaignCompleted {
			why = append(why, fmt.Sprintf("chat campaign %s is %s with %d messages final", v.c.ID, v.c.Status, chats))
		}
	}
	slices.Sort(why)
	return why
}
