package messaging_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

func TestBackoff(t *testing.T) {
	b := messaging.Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for n, want := range map[int]time.Duration{-1: 100 * time.Millisecond, 0: 100 * time.Millisecond, 1: 100 * time.Millisecond,
		2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 1000: time.Second} {
		require.Equal(t, want, b.Step(n), "step %d", n)
		for range 50 {
			d := b.Delay(n)
			require.True(t, d >= want/2 && d <= want, "delay %d: %v outside [%v, %v]", n, d, want/2, want)
		}
	}
	require.Equal(t, time.Duration(0), messaging.Backoff{}.Delay(3))
	require.Equal(t, messaging.Backoff{Min: 5 * time.Second, Max: 5 * time.Second},
		messaging.Backoff{Min: 5 * time.Second}.Or(messaging.Backoff{Min: time.Second, Max: 2 * time.Second}), "Max is raised to Min")
	require.Equal(t, messaging.Backoff{Min: time.Second, Max: 2 * time.Second}, messaging.Backoff{Min: -1}.Or(messaging.Backoff{Min: time.Second, Max: 2 * time.Second}))
}
