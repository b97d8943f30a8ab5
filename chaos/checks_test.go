package chaos_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// settleTimeout bounds the wait for a campaign's counters to equal its
// rows once it completed (the last receipts are still coming).
const settleTimeout = 60 * time.Second

// rowCounts is a campaign's messages counted by status.
type rowCounts struct {
	total                                           int
	pending, sending, sent, delivered, seen, failed int
	unconfirmed                                     int // Sent, past the receipt timeout (details NO_RECEIPT)
}

// notFinal is the campaign's pendingCount as the rows give it: a Sent
// message past the receipt timeout waits for nothing any more.
func (r rowCounts) notFinal() int { return r.pending + r.sending + r.sent - r.unconfirmed }

// outcome is what the checks of a scenario found.
type outcome struct {
	campaign   campaignJSON
	rows       rowCounts
	duplicates int   // submits beyond the first of a number
	byFault    []int // duplicates after each fault marked in the log
	checked    bool  // herald check ran and found no drift
}

// settle waits until the counters of campaign id equal the counts of its
// rows (the messages of externalUserID) and returns both, after checking
// that every one of phones has exactly one message, of channel, in a
// final state or Sent.
func settle(t *testing.T, c *client, id, externalUserID, channel string, phones []string) (campaignJSON, rowCounts) {
	t.Helper()
	var (
		before, after campaignJSON
		rows          rowCounts
	)
	for deadline := time.Now().Add(settleTimeout); ; time.Sleep(200 * time.Millisecond) {
		var ok bool
		before, ok = c.campaign(id)
		require.True(t, ok, "GET /campaigns/%s", id)
		msgs := c.messagesOf(externalUserID)
		after, ok = c.campaign(id)
		require.True(t, ok, "GET /campaigns/%s", id)

		byPhone := make(map[string]int, len(msgs))
		rows = rowCounts{total: len(msgs)}
		for _, m := range msgs {
			byPhone[m.PhoneNumber]++
			require.Equal(t, channel, m.ChannelType, m.PhoneNumber)
			switch m.Status {
			case "Pending":
				rows.pending++
			case "Sending":
				rows.sending++
			case "Sent":
				rows.sent++
				if strings.Contains(deref(m.Details), "NO_RECEIPT") {
					rows.unconfirmed++
				}
			case "Delivered":
				rows.delivered++
			case "Seen":
				rows.seen++
			case "Failed":
				rows.failed++
			default:
				t.Fatalf("message to %s has status %q", m.PhoneNumber, m.Status)
			}
		}
		require.Len(t, byPhone, len(phones), "one message a number")
		for _, p := range phones {
			require.Equal(t, 1, byPhone[p], "messages to %s", p)
		}
		require.Zero(t, rows.pending+rows.sending, "a Completed campaign has no message Pending or Sending: %+v", rows)
		if before == after && counters(after) == counters(campaignOf(rows)) {
			return after, rows
		}
		if time.Now().After(deadline) {
			require.Equal(t, counters(campaignOf(rows)), counters(after), "campaign counters against its rows, %s after it completed", settleTimeout)
		}
	}
}

// counterSet is the counters a campaign detail shows.
type counterSet struct{ total, delivered, failed, pending, seen int }

// counters returns the counters of a campaign detail.
func counters(c campaignJSON) counterSet {
	return counterSet{c.TotalMessages, c.DeliveredCount, c.FailedCount, c.PendingCount, c.SeenCount}
}

// campaignOf is the campaign counters rows give.
func campaignOf(r rowCounts) campaignJSON {
	return campaignJSON{TotalMessages: r.total, DeliveredCount: r.delivered, FailedCount: r.failed,
		PendingCount: r.notFinal(), SeenCount: r.seen}
}

// checkSMS runs the checks every SMS scenario ends with: campaign id (the
// messages of externalUserID, one to each of phones) is Completed, its
// counters equal its rows, every message is final or Sent and reached the
// SMSC, the API answered no undocumented 5xx, and herald check (when the
// binary has it) finds no drift in the database of env.
func checkSMS(t *testing.T, c *client, bin *binary, env []string, id, externalUserID string, phones []string, log *submitLog) outcome {
	t.Helper()
	cj, rows := settle(t, c, id, externalUserID, "Smpp", phones)
	require.Equal(t, "Completed", cj.Status)
	if missing := log.missing(phones); len(missing) > 0 {
		var states []string
		for _, p := range missing {
			for _, m := range c.messages(p) {
				states = append(states, fmt.Sprintf("%s %s %s", p, m.Status, deref(m.Details)))
			}
		}
		t.Fatalf("%d numbers the SMSC never received, their messages: %s", len(missing), strings.Join(states, "; "))
	}
	require.Empty(t, c.log.undocumented(), "5xx answers other than 503 with Retry-After")
	checked := bin.check(t, env)
	dups, byFault := log.duplicates()
	t.Logf("rows %+v; submits %d for %d numbers: %d duplicates, by fault %v; answers %s",
		rows, log.total(), len(phones), dups, byFault, c.log.summary())
	return outcome{campaign: cj, rows: rows, duplicates: dups, byFault: byFault, checked: checked}
}

// maxDuplicatesPerKill is the bound delivery's crash-safety guarantee
// gives: one crash submits again at most the SMS concurrency of the
// process (messages claimed and not recorded). The suite reports whether a
// kill stayed within one SMPP window (100) too.
const (
	maxDuplicatesPerKill = 512
	smppWindow           = 100
)
