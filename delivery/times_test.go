package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

func TestStatusUpdateTimes(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	ptr := func(t time.Time) *time.Time { return &t }
	tests := []struct {
		name          string
		status        messaging.MessageStatus
		at            time.Time
		sentAt        *time.Time
		now           time.Time
		updated, when time.Time
		sent          *time.Time
	}{
		{"send recorded at its own time", messaging.StatusSent, sec(5), nil, sec(5), sec(5), sec(5), nil},
		{"receipt after the send", messaging.StatusDelivered, sec(30), ptr(sec(5)), sec(31), sec(31), sec(30), nil},
		{"receipt dated before the send", messaging.StatusDelivered, sec(0), ptr(sec(5)), sec(40), sec(40), sec(5), nil},
		{"view dated before the send", messaging.StatusSeen, sec(1), ptr(sec(5)), sec(9), sec(9), sec(5), nil},
		{"failure keeps the provider's time", messaging.StatusFailed, sec(1), ptr(sec(5)), sec(9), sec(9), sec(1), nil},
		{"delivery of a message never recorded sent", messaging.StatusDelivered, sec(3), nil, sec(9), sec(9), sec(3), ptr(sec(3))},
		{"view of a message never recorded sent", messaging.StatusSeen, sec(4), nil, sec(9), sec(9), sec(4), ptr(sec(4))},
		{"provider clock ahead", messaging.StatusDelivered, sec(60), ptr(sec(5)), sec(9), sec(60), sec(60), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := delivery.StatusUpdate{Status: tt.status, At: tt.at}
			updated, when, sent := u.Times(tt.sentAt, tt.now)
			require.Equal(t, tt.updated, updated, "updatedAt")
			require.Equal(t, tt.when, when, "status time")
			require.Equal(t, tt.sent, sent, "sentAt given by the update")
		})
	}
}
