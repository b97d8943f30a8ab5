package enginetest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// settleTimeout bounds the wait for the engine to do what a step asks of
// it (send what is due, complete what drained): past it, what is still
// not done is a failure. It is a bound on a stuck engine, not a figure of
// speed: on a machine whose two cores are shared by many Postgres
// backends, writing a claim's results took more than 15 s at times (both
// before and after the claim and heartbeat changes of this package's
// store), which a longer bound tells apart from a message left Sending.
const settleTimeout = 60 * time.Second

// haltGrace is how long after a pause or cancel answered another process
// than the one that answered may still put the campaign's claimed
// messages on the wire: it learns of the halt within its haltInterval, a
// loaded machine's scheduling delays besides.
const haltGrace = haltInterval + time.Second

// statuses are the message statuses.
var statuses = []messaging.MessageStatus{messaging.StatusPending, messaging.StatusSending, messaging.StatusSent,
	messaging.StatusDelivered, messaging.StatusSeen, messaging.StatusFailed}

// reachable tells whether a message may be seen in status to after it was
// seen in from: a chain of moves CanAdvance allows (two reads may miss the
// moves between them).
func reachable(from, to messaging.MessageStatus) bool {
	seen := map[messaging.MessageStatus]bool{from: true}
	queue := []messaging.MessageStatus{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, n := range statuses {
			if !seen[n] && s.CanAdvance(n) {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return seen[to]
}

// view is one read of a campaign and its messages.
type view struct {
	c    messaging.Campaign
	msgs []messaging.Message
}

func (w *world) read(t *rapid.T) []view {
	ctx := context.Background()
	out := make([]view, 0, len(w.camps))
	for _, mc := range w.camps {
		co := w.companies[mc.company].id
		c, err := w.api.Campaigns().GetCampaign(ctx, co, mc.id)
		must(t, err)
		v := view{c: c}
		must(t, w.api.Campaigns().ExportMessages(ctx, co, mc.id, func(ms []messaging.Message) error {
			v.msgs = append(v.msgs, ms...)
			return nil
		}))
		out = append(out, v)
	}
	return out
}

// check waits, within settleTimeout, until the engine did what the steps
// so far ask of it, then checks the invariants that hold at every moment.
// Both are evaluated on every read: a read that breaks an invariant of
// every moment fails at once; one that is only unsettled is read again.
func (w *world) check(t *rapid.T) {
	deadline := time.Now().Add(settleTimeout)
	for {
		vs := w.read(t)
		w.always(t, vs)
		why := w.unsettled(vs)
		if len(why) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v:\n  %s", settleTimeout, strings.Join(why, "\n  "))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// always checks what holds at every moment: statuses move only as the
// state machine allows; no message was on the wire twice at once, or
// submitted while its campaign was paused or after it was cancelled
// (beyond what was on the wire then); a message accepted by the SMSC is
// submitted again only after the process that had it accepted died; a
// campaign completes only when nothing of it waits, and only a bulk one
// by itself.
func (w *world) always(t *rapid.T, vs []view) {
	for _, p := range w.sc.troubles() {
		t.Fatalf("%s", p)
	}
	campOf := map[messaging.ID]*camp{}
	for _, v := range vs {
		mc := w.byID[v.c.ID]
		for _, m := range v.msgs {
			campOf[m.ID] = mc
			if !m.Status.Valid() {
				t.Fatalf("message %s has status %q", m.ID, m.Status)
			}
			if last, ok := w.last[m.ID]; ok && !reachable(last, m.Status) {
				t.Fatalf("message %s of campaign %s moved from %s to %s", m.ID, v.c.ID, last, m.Status)
			}
			w.last[m.ID] = m.Status
		}
		if last, ok := w.lastCamp[v.c.ID]; ok && last == messaging.CampaignCompleted && v.c.Status != last {
			t.Fatalf("campaign %s left Completed for %s", v.c.ID, v.c.Status)
		}
		w.lastCamp[v.c.ID] = v.c.Status
		if v.c.Status == messaging.CampaignCompleted && v.c.CancelledAt == nil {
			if v.c.Mode != messaging.ModeBulk {
				t.Fatalf("%s campaign %s (%s) completed by itself", v.c.Mode, v.c.ID, mc.kind)
			}
			for _, m := range v.msgs {
				if m.IsFallback() && w.chat.outcomeOf(m.Phone) == outNotOnChannel {
					// The fallback of a failure a callback reported may be
					// written after the campaign completed; it is still
					// sent. A failure at the send writes its fallback
					// before the chat message leaves Sending.
					continue
				}
				if m.Status.Unsent() {
					t.Fatalf("campaign %s (%s) Completed while its message %s (fallback %t) is %s", v.c.ID, mc.kind, m.ID, m.IsFallback(), m.Status)
				}
			}
		}
		if mc.cancelled && v.c.CancelledAt == nil {
			t.Fatalf("campaign %s was cancelled and has no CancelledAt (%s)", v.c.ID, v.c.Status)
		}
	}

	accepted := map[messaging.ID]submit{}
	for _, s := range w.sc.snapshot() {
		mc := campOf[s.msg]
		if mc == nil {
			continue // written after the read
		}
		for i, st := range mc.stops {
			if h := mc.halts[i]; s.proc != h.by && s.at.Sub(h.at) < haltGrace {
				continue // another process, which reads halts every haltInterval
			}
			if s.seq > st[0] && s.seq <= st[1] {
				t.Fatalf("message %s of campaign %s (%s) submitted by %s (submit %d) while the campaign was paused or cancelled (from submit %d)",
					s.msg, mc.id, mc.kind, s.proc, s.seq, st[0])
			}
		}
		if !s.accepted {
			continue
		}
		if prev, ok := accepted[s.msg]; ok {
			if p := w.procs[prev.proc]; !p.killed || p.killedAt < prev.seq {
				t.Fatalf("message %s accepted twice: by %s (submit %d) and by %s (submit %d), the first process alive", s.msg,
					prev.proc, prev.seq, s.proc, s.seq)
			}
		}
		accepted[s.msg] = s
	}
}

// unsettled lists what the engine has still to do: messages due and not
// sent (when a connector is idle, even while another is saturated),
// Sending with no send under way and no dead process to explain them,
// drained bulk campaigns not completed, counters that differ from a
// recount of the messages, campaigns whose status is not what the steps
// made it, receipts not applied.
func (w *world) unsettled(vs []view) []string {
	var why []string
	if n := w.sc.receiving.Load(); n > 0 {
		why = append(why, fmt.Sprintf("%d early receipts being handed over", n))
	}
	now := w.clk.Now()
	live := len(w.live()) > 0
	dead := w.deadClaims()
	inSend := w.sc.sending()
	held := map[string]bool{"a": w.sc.mode("a") == connHeld, "b": w.sc.mode("b") == connHeld}
	anyHeld := held["a"] || held["b"]
	last := map[messaging.ID]submit{}
	for _, s := range w.sc.snapshot() {
		if s.accepted {
			last[s.msg] = s
		}
	}
	for _, v := range vs {
		c, mc := v.c, w.byID[v.c.ID]
		conn := w.companies[mc.company].conn
		var counts, fallbackCounts messaging.StatusCounts
		waiting := 0
		for _, m := range v.msgs {
			if m.IsFallback() {
				fallbackCounts.Add(m.Status, 1)
			} else {
				counts.Add(m.Status, 1)
			}
			if m.Status.Unsent() {
				waiting++
			}
			switch {
			case m.Status == messaging.StatusSending && !inSend[m.ID] && !dead:
				why = append(why, fmt.Sprintf("message %s of %s campaign %s Sending with no send under way", m.ID, mc.kind, c.ID))
			case m.Status == messaging.StatusPending && !m.DueAt.After(now) && c.Status == messaging.CampaignInProgress && live:
				bulkWaits := mc.kind == "bulk" && anyHeld // behind the places a saturated connector holds
				if !held[conn] && !bulkWaits {
					why = append(why, fmt.Sprintf("message %s of %s campaign %s due on idle connector %s (a %s, b %s) and not sent",
						m.ID, mc.kind, c.ID, conn, w.sc.mode("a"), w.sc.mode("b")))
				}
			}
			if s, ok := last[m.ID]; ok && s.receipt != "" && !m.Status.Unsent() {
				want := messaging.StatusDelivered
				if s.receipt != delivery.StateDelivered {
					want = messaging.StatusFailed
				}
				if m.Status != want && !(want == messaging.StatusDelivered && m.Status == messaging.StatusSeen) {
					why = append(why, fmt.Sprintf("message %s is %s after its receipt %s", m.ID, m.Status, s.receipt))
				}
			}
		}
		got := c.Counts
		got.Unconfirmed = 0
		if got != counts {
			why = append(why, fmt.Sprintf("%s campaign %s counts %+v, its messages %+v", mc.kind, c.ID, got, counts))
		}
		gotFB := c.FallbackCounts
		gotFB.Unconfirmed = 0
		if gotFB != fallbackCounts {
			why = append(why, fmt.Sprintf("%s campaign %s fallback counts %+v, its fallback SMS %+v", mc.kind, c.ID, gotFB, fallbackCounts))
		}
		switch {
		case c.Status == messaging.CampaignQueuing:
			why = append(why, fmt.Sprintf("campaign %s preparing", c.ID))
		case c.Status == messaging.CampaignInProgress && c.Mode == messaging.ModeBulk && waiting == 0 && live:
			why = append(why, fmt.Sprintf("%s campaign %s in progress with nothing waiting (%+v)", mc.kind, c.ID, counts))
		case mc.cancelled && counts.Pending > 0:
			why = append(why, fmt.Sprintf("cancelled campaign %s has %d Pending", c.ID, counts.Pending))
		}
		switch want := mc.want; {
		case want == messaging.CampaignReady && !mc.scheduled.IsZero() && !now.Before(mc.scheduled):
			if c.Status == messaging.CampaignReady && live {
				why = append(why, fmt.Sprintf("campaign %s scheduled at %s, Ready at %s", c.ID, mc.scheduled, now))
			}
			if c.Status != messaging.CampaignReady {
				mc.want, mc.scheduled = messaging.CampaignInProgress, time.Time{}
			}
		case want == messaging.CampaignInProgress && c.Status == messaging.CampaignCompleted && c.CancelledAt == nil:
			mc.want = messaging.CampaignCompleted
		case want != c.Status:
			why = append(why, fmt.Sprintf("%s campaign %s is %s, expected %s", mc.kind, c.ID, c.Status, want))
		}
	}
	return why
}
