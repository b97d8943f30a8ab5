package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

func TestStatusUpdateApplyTimes(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	ptr := func(t time.Time) *time.Time { return &t }
	tests := []struct {
		name                  string
		from, status          messaging.MessageStatus
		at                    time.Time
		sentAt                *time.Time
		now                   time.Time
		updated               time.Time
		sent, delivered, seen *time.Time
	}{
		{"send recorded at its own time", messaging.StatusSending, messaging.StatusSent, sec(5), nil, sec(5), sec(5), ptr(sec(5)), nil, nil},
		{"receipt after the send", messaging.StatusSent, messaging.StatusDelivered, sec(30), ptr(sec(5)), sec(31), sec(31), ptr(sec(5)), ptr(sec(30)), nil},
		{"receipt dated before the send", messaging.StatusSent, messaging.StatusDelivered, sec(0), ptr(sec(5)), sec(40), sec(40), ptr(sec(5)), ptr(sec(5)), nil},
		{"view dated before the send", messaging.StatusDelivered, messaging.StatusSeen, sec(1), ptr(sec(5)), sec(9), sec(9), ptr(sec(5)), nil, ptr(sec(5))},
		{"view that skipped the delivery", messaging.StatusSent, messaging.StatusSeen, sec(7), ptr(sec(5)), sec(9), sec(9), ptr(sec(5)), ptr(sec(7)), ptr(sec(7))},
		{"failure keeps the times", messaging.StatusSent, messaging.StatusFailed, sec(1), ptr(sec(5)), sec(9), sec(9), ptr(sec(5)), nil, nil},
		{"delivery of a message never recorded sent", messaging.StatusSending, messaging.StatusDelivered, sec(3), nil, sec(9), sec(9), ptr(sec(3)), ptr(sec(3)), nil},
		{"view of a message never recorded sent", messaging.StatusSending, messaging.StatusSeen, sec(4), nil, sec(9), sec(9), ptr(sec(4)), ptr(sec(4)), ptr(sec(4))},
		{"provider clock ahead", messaging.StatusSent, messaging.StatusDelivered, sec(60), ptr(sec(5)), sec(9), sec(60), ptr(sec(5)), ptr(sec(60)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := delivery.StatusUpdate{Status: tt.status, At: tt.at}
			st := delivery.MessageState{Status: tt.from, SentAt: tt.sentAt}
			require.True(t, u.Apply(&st, tt.now))
			require.Equal(t, tt.status, st.Status)
			require.Equal(t, tt.updated, st.UpdatedAt, "updatedAt")
			require.Equal(t, tt.sent, st.SentAt, "sentAt")
			require.Equal(t, tt.delivered, st.DeliveredAt, "deliveredAt")
			require.Equal(t, tt.seen, st.SeenAt, "seenAt")
		})
	}
}

func TestStatusUpdateApplyRefuses(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		st     delivery.MessageState
		update delivery.StatusUpdate
	}{
		{"late delivery of a seen message", delivery.MessageState{Status: messaging.StatusSeen}, delivery.StatusUpdate{Status: messaging.StatusDelivered}},
		{"repeated delivery", delivery.MessageState{Status: messaging.StatusDelivered}, delivery.StatusUpdate{Status: messaging.StatusDelivered}},
		{"failure after the delivery", delivery.MessageState{Status: messaging.StatusDelivered}, delivery.StatusUpdate{Status: messaging.StatusFailed}},
		{"chat callback naming an SMS", delivery.MessageState{Status: messaging.StatusSent, Channel: messaging.ChannelSMS},
			delivery.StatusUpdate{Status: messaging.StatusDelivered, Channel: messaging.ChannelChat}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.st
			tt.update.At, tt.update.Details = t0, "X"
			require.False(t, tt.update.Apply(&tt.st, t0))
			require.Equal(t, before, tt.st, "a refused update changes nothing")
		})
	}
	st := delivery.MessageState{Status: messaging.StatusSending, Channel: messaging.ChannelSMS, Details: "old"}
	u := delivery.StatusUpdate{Status: messaging.StatusPending, At: t0, DueAt: t0.Add(time.Minute), Details: "retry", SMSErrorCode: "0x58", Channel: messaging.ChannelSMS}
	require.True(t, u.Apply(&st, t0))
	require.Equal(t, t0.Add(time.Minute), *st.DueAt)
	require.Equal(t, "retry", st.Details)
	require.Equal(t, "0x58", st.SMSErrorCode)
	require.Empty(t, st.ProviderMessageID, "empty fields of the update leave the message's")
}
