package phonezone_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/phonezone"
)

func TestLocation(t *testing.T) {
	var f phonezone.Finder
	for phone, want := range map[string]string{
		"447700900001": "Europe/London",    // one country, one zone (and its islands)
		"+12125551234": "America/New_York", // a New York area code
		"18085551234":  "Pacific/Honolulu",
		"33612345678":  "Europe/Paris",
		"61412345678":  "Australia/Sydney",
		"15551234567":  "Pacific/Pago_Pago", // a prefix of every North American zone: the furthest west
		"+79161234567": "Europe/Moscow",
	} {
		loc := f.Location(phone)
		require.NotNil(t, loc, phone)
		if phone == "447700900001" {
			// London, Guernsey and the Isle of Man share their offset:
			// any of them is right.
			_, off := time.Now().In(loc).Zone()
			london, _ := time.LoadLocation("Europe/London")
			_, want := time.Now().In(london).Zone()
			require.Equal(t, want, off)
			continue
		}
		require.Equal(t, want, loc.String(), phone)
		require.Same(t, loc, f.Location(phone), "cached")
	}
	require.Nil(t, f.Location("999123"), "no such country")
	require.Nil(t, f.Location("not a number"))
}

func BenchmarkLocation(b *testing.B) {
	var f phonezone.Finder
	for b.Loop() {
		f.Location("12125551234")
	}
}
