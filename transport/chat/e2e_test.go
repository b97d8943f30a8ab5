package chat_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatsim"
	"github.com/stretchr/testify/require"
)

// e2e wires Client -> chatsim -> signed callbacks -> CallbackHandler.
func e2e(t *testing.T, cfg chatsim.Config) (*chat.Client, *chatsim.Server, *events) {
	t.Helper()
	ev, cbURL := callbackServer(t, nil)
	cfg.CallbackURL = cbURL
	cfg.CallbackSecret = secret
	if cfg.CallbackBackoff.Min == 0 {
		cfg.CallbackBackoff = messaging.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}
	}
	cfg.Record = true
	sim, url := startSim(t, cfg)
	return newClient(t, url, nil), sim, ev
}

func kinds(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Kind + ":" + e.Status
	}
	return out
}

func TestEndToEndOutcomes(t *testing.T) {
	c, sim, ev := e2e(t, chatsim.Config{DeliveredDelay: 5 * time.Millisecond, SeenDelay: 5 * time.Millisecond})
	ctx := context.Background()

	// A normal number: delivered, then seen, with the provider's times.
	m := textTo("998901234567")
	before := time.Now().Add(-time.Second)
	res, err := c.SendChat(ctx, m)
	require.NoError(t, err)
	got := ev.wait(t, m.MessageID, 2)
	require.Equal(t, []string{"status:delivered", "status:seen"}, kinds(got))
	for _, e := range got {
		require.Equal(t, res.ProviderID, e.Token)
		require.Equal(t, -1, e.OptionIndex)
		require.Equal(t, time.UTC, e.At.Location())
		require.True(t, e.At.After(before) && e.At.Before(time.Now().Add(time.Second)), "at %v", e.At)
	}
	require.False(t, got[1].At.Before(got[0].At))

	// 8, 9 and 10 are refused at send time, with no callback.
	for _, code := range []int{8, 9, 10} {
		m := textTo(fmt.Sprintf("99890123%04d", code))
		_, err := c.SendChat(ctx, m)
		se := sendErr(t, err)
		require.True(t, se.Permanent)
		require.Equal(t, fmt.Sprint(code), se.Code)
		require.True(t, chat.IsFallbackCode(code))
	}

	// 0011 is accepted, then fails with the fallback code 9.
	late := textTo("998901230011")
	res, err = c.SendChat(ctx, late)
	require.NoError(t, err)
	got = ev.wait(t, late.MessageID, 1)
	require.Equal(t, []string{"status:failed"}, kinds(got))
	require.Equal(t, "9", got[0].Detail)
	require.Equal(t, delivery.ReasonNotOnChannel, got[0].Reason)
	require.Equal(t, res.ProviderID, got[0].Token)
	require.True(t, delivery.ChatCodes()[got[0].Reason].Fallback)

	require.NoError(t, sim.WaitIdle(ctx))
	time.Sleep(20 * time.Millisecond) // nothing else may arrive
	require.Len(t, ev.of(m.MessageID), 2)
	require.Len(t, ev.of(late.MessageID), 1)
	st := sim.Stats()
	require.EqualValues(t, 2, st.Accepted)
	require.EqualValues(t, 3, st.Rejected)
	require.EqualValues(t, 3, st.CallbacksSent)
}

func TestEndToEndSurvey(t *testing.T) {
	c, sim, ev := e2e(t, chatsim.Config{})
	options := []messaging.SurveyOption{{OptionText: "Great", OptionValue: "5"}, {OptionText: "Fine", OptionValue: "3"}, {OptionText: "Bad", OptionValue: "1"}}
	for _, tt := range []struct {
		to    string
		index int
	}{
		{"998901234560", 0}, // 0 mod 3
		{"998901234561", 1}, // 1 mod 3
		{"998901234565", 2}, // 5 mod 3
		{"998901234567", 1}, // 7 mod 3
		{"998901234569", 0}, // 9 mod 3
	} {
		m := textTo(tt.to)
		m.Type = messaging.TypeSurvey
		m.Text = "How was it?"
		m.Config = messaging.ChatConfig{Options: options}
		_, err := c.SendChat(context.Background(), m)
		require.NoError(t, err)
		got := ev.wait(t, m.MessageID, 3)
		require.Equal(t, []string{"status:delivered", "status:seen", "reply:"}, kinds(got))
		reply := got[2]
		require.Equal(t, tt.index, reply.OptionIndex, tt.to)
		require.Equal(t, options[tt.index].OptionText, reply.Text)
		require.Equal(t, tt.to, reply.Phone)
	}
	require.NoError(t, sim.WaitIdle(context.Background()))
}

func TestEndToEndCallbackFaults(t *testing.T) {
	t.Run("handler failures are retried", func(t *testing.T) {
		c, sim, ev := e2e(t, chatsim.Config{})
		ev.fail.Store(3)
		m := textTo("998901234567")
		_, err := c.SendChat(context.Background(), m)
		require.NoError(t, err)
		require.Equal(t, []string{"status:delivered", "status:seen"}, kinds(ev.wait(t, m.MessageID, 2)))
		require.NoError(t, sim.WaitIdle(context.Background()))
		require.EqualValues(t, 3, sim.Stats().CallbackFailures)
	})
	t.Run("duplicates", func(t *testing.T) {
		c, sim, ev := e2e(t, chatsim.Config{Faults: chatsim.Faults{DuplicateCallbacks: true}})
		m := textTo("998901234567")
		_, err := c.SendChat(context.Background(), m)
		require.NoError(t, err)
		require.NoError(t, sim.WaitIdle(context.Background()))
		require.Equal(t, []string{"status:delivered", "status:seen"}, kinds(ev.wait(t, m.MessageID, 2)), "a duplicate is refused as a replay")
		require.EqualValues(t, 2, sim.Stats().CallbacksSent, "the duplicates were not answered 200")
	})
	t.Run("seen before delivered", func(t *testing.T) {
		c, _, ev := e2e(t, chatsim.Config{Faults: chatsim.Faults{SeenBeforeDelivered: true}})
		m := textTo("998901234567")
		_, err := c.SendChat(context.Background(), m)
		require.NoError(t, err)
		require.Equal(t, []string{"status:seen", "status:delivered"}, kinds(ev.wait(t, m.MessageID, 2)))
	})
	t.Run("lost response sends once", func(t *testing.T) {
		c, sim, ev := e2e(t, chatsim.Config{Faults: chatsim.Faults{DropFirst: 1}})
		m := textTo("998901234567")
		res, err := c.SendChat(context.Background(), m)
		require.NoError(t, err)
		require.True(t, res.AlreadySent)
		got := ev.wait(t, m.MessageID, 2)
		require.NoError(t, sim.WaitIdle(context.Background()))
		require.Equal(t, []string{"status:delivered", "status:seen"}, kinds(ev.of(m.MessageID)))
		require.Equal(t, res.ProviderID, got[0].Token, "12 carries the token of the first acceptance")
	})
}

func TestEndToEndBatchedCallbacks(t *testing.T) {
	c, sim, ev := e2e(t, chatsim.Config{DeliveredDelay: 5 * time.Millisecond, SeenDelay: 5 * time.Millisecond,
		CallbackBatch: 10, CallbackBatchWait: 5 * time.Millisecond, Faults: chatsim.Faults{DuplicateCallbacks: true}})
	ctx := context.Background()
	var ms []delivery.ChatSend
	for i := range 5 {
		m := textTo(fmt.Sprintf("99890123456%d", i))
		_, err := c.SendChat(ctx, m)
		require.NoError(t, err)
		ms = append(ms, m)
	}
	require.NoError(t, sim.WaitIdle(ctx))
	for _, m := range ms {
		require.Equal(t, []string{"status:delivered", "status:seen"}, kinds(ev.wait(t, m.MessageID, 2)),
			"each event stored once, in order, the duplicate posts refused")
	}
	require.Zero(t, sim.Stats().CallbackFailures, "the first post of every batch answered 200")
}
