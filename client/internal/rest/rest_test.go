package rest

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRetryAfter: the wait of an answer comes from Retry-After (seconds or
// an HTTP date), else from retryAfterSeconds, else is 0.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		header, body string
		want         time.Duration
	}{
		{"3", `{"retryAfterSeconds":60}`, 3 * time.Second},
		{"", `{"retryAfterSeconds":60}`, time.Minute},
		{now.Add(90 * time.Second).Format(http.TimeFormat), "", 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), "", 0},
		{"soon", `{"retryAfterSeconds":2}`, 2 * time.Second},
		{"", `<html>`, 0},
		{"", ``, 0},
	} {
		h := http.Header{}
		if c.header != "" {
			h.Set("Retry-After", c.header)
		}
		require.Equal(t, c.want, retryAfter(h, []byte(c.body), now), "header %q body %q", c.header, c.body)
	}
}

// TestWalk: pages are walked from the start page until the total is
// reached, an empty page ends the walk, and an error is yielded once.
func TestWalk(t *testing.T) {
	pages := map[int][]int{1: {1, 2}, 2: {3, 4}, 3: {5}}
	calls := 0
	fetch := func(page int) ([]int, PageMeta, error) {
		calls++
		return pages[page], PageMeta{TotalCount: 5, Page: page, PageSize: 2, TotalPages: 3}, nil
	}
	var got []int
	for v, err := range Walk(0, fetch) {
		require.NoError(t, err)
		got = append(got, v)
	}
	require.Equal(t, []int{1, 2, 3, 4, 5}, got)
	require.Equal(t, 3, calls)

	got, calls = nil, 0
	for v, err := range Walk(2, fetch) {
		require.NoError(t, err)
		got = append(got, v)
	}
	require.Equal(t, []int{3, 4, 5}, got)
	require.Equal(t, 2, calls, "from page 2: pages 2 and 3")

	// The total grew meanwhile: an empty page still ends the walk.
	calls = 0
	for range Walk(0, func(page int) ([]int, PageMeta, error) {
		calls++
		return pages[page], PageMeta{TotalCount: 50, Page: page, PageSize: 2}, nil
	}) {
	}
	require.Equal(t, 4, calls)

	boom := errors.New("boom")
	var errs []error
	for _, err := range Walk(0, func(page int) ([]int, PageMeta, error) {
		if page == 2 {
			return nil, PageMeta{}, boom
		}
		return fetch(page)
	}) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	require.Equal(t, []error{boom}, errs)
}
