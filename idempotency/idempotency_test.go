package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// TestBeginFinish: a kept answer is replayed; a 5xx or a 429 frees the
// key for the retry; a key held unfinished past Abandoned is taken over;
// an answer is replayed within the window only.
func TestBeginFinish(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	s, err := idempotency.New(idempotency.Config{Store: memstore.New(), Now: func() time.Time { return now }, Wait: time.Nanosecond})
	require.NoError(t, err)
	co := messaging.NewIDGenerator(nil).New()
	req := func(key, body string) idempotency.Request {
		return idempotency.Request{CompanyID: co, Key: key, Hash: idempotency.Digest("POST", "/api/v1/sms/send", []byte(body))}
	}
	begin := func(r idempotency.Request) (idempotency.Outcome, error) { return s.Begin(ctx, r) }

	for _, status := range []int{500, 503, 429} {
		r := req("k", "a")
		out, err := begin(r)
		require.NoError(t, err)
		require.True(t, out.Run)
		require.NoError(t, s.Finish(ctx, r, idempotency.Response{Status: status}))
	}
	r := req("k", "a")
	out, err := begin(r)
	require.NoError(t, err)
	require.True(t, out.Run, "the failed answers were not kept")
	_, err = begin(r)
	require.True(t, messaging.IsCode(err, messaging.Conflict), "still running: %v", err)
	_, err = begin(req("k", "b"))
	require.True(t, messaging.IsCode(err, messaging.Mismatch), "%v", err)
	require.NoError(t, s.Finish(ctx, r, idempotency.Response{Status: 202, ContentType: "application/json", Body: []byte(`{}`)}))
	out, err = begin(r)
	require.NoError(t, err)
	require.Equal(t, &idempotency.Response{Status: 202, ContentType: "application/json", Body: []byte(`{}`)}, out.Replay)

	now = now.Add(idempotency.DefaultWindow + time.Second)
	out, err = begin(r)
	require.NoError(t, err)
	require.True(t, out.Run, "past the window the key is new")
	now = now.Add(idempotency.DefaultAbandoned + time.Second)
	out, err = begin(r)
	require.NoError(t, err)
	require.True(t, out.Run, "unfinished past Abandoned: taken over")
	now = now.Add(idempotency.DefaultWindow + time.Second)
	n, err := s.Purge(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func TestCheckKey(t *testing.T) {
	require.NoError(t, idempotency.CheckKey("order-42"))
	for _, bad := range []string{"", string(make([]byte, 256)), "tab\there", "é"} {
		require.Error(t, idempotency.CheckKey(bad), "%q", bad)
	}
}
