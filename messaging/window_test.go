package messaging_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

func TestSendWindowOpen(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	day := messaging.SendWindow{From: 9 * 60, To: 20 * 60}
	night := messaging.SendWindow{From: 20 * 60, To: 8 * 60}
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, paris)
		require.NoError(t, err)
		return v
	}
	cases := []struct {
		w        messaging.SendWindow
		now      string
		open     bool
		nextOpen string
	}{
		{day, "2026-05-01 08:59", false, "2026-05-01 09:00"},
		{day, "2026-05-01 09:00", true, ""},
		{day, "2026-05-01 19:59", true, ""},
		{day, "2026-05-01 20:00", false, "2026-05-02 09:00"},
		{day, "2026-05-01 23:30", false, "2026-05-02 09:00"},
		{night, "2026-05-01 21:00", true, ""},
		{night, "2026-05-01 07:59", true, ""},
		{night, "2026-05-01 08:00", false, "2026-05-01 20:00"},
		{night, "2026-05-01 12:00", false, "2026-05-01 20:00"},
		// The night of the clock change in spring: 02:00 to 03:00 does not
		// exist; a window opening at 02:30 opens at 03:30 local.
		{messaging.SendWindow{From: 150, To: 600}, "2026-03-29 01:00", false, "2026-03-29 03:30"},
	}
	for _, c := range cases {
		open, next := c.w.Open(at(c.now).UTC(), paris)
		require.Equal(t, c.open, open, "%v at %s", c.w, c.now)
		if !c.open {
			require.True(t, at(c.nextOpen).Equal(next), "%v at %s: next %s, want %s", c.w, c.now, next.In(paris), c.nextOpen)
		}
	}
}

func TestParseSendWindow(t *testing.T) {
	w, err := messaging.ParseSendWindow("09:00", "24:00", "America/New_York")
	require.NoError(t, err)
	require.Equal(t, messaging.SendWindow{From: 540, To: 1440, TimeZone: "America/New_York"}, w)
	all, err := messaging.ParseSendWindow("00:00", "24:00", "")
	require.NoError(t, err, "the whole day")
	open, _ := all.Open(time.Now(), time.UTC)
	require.True(t, open)
	for _, bad := range [][3]string{{"9:00", "20:00", ""}, {"09:00", "25:00", ""}, {"24:00", "08:00", ""}, {"09:00", "09:00", ""},
		{"09:60", "10:00", ""}, {"09:00", "20:00", "Mars/Olympus"}, {"09:00", "20:00", "Local"}} {
		_, err := messaging.ParseSendWindow(bad[0], bad[1], bad[2])
		require.Error(t, err, "%v", bad)
	}
}
