package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/webhook"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, "whsec_test", &out) }()

	one := `{"id":"e1","type":"message.status","createdAt":"2026-11-26T10:00:00.000Z","data":{"status":"Delivered"}}`
	post := func(secret string, body []byte) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/events", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set(webhook.EventIDHeader, "e1")
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(time.Now(), body, secret))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, http.StatusNoContent, post("whsec_test", []byte(one)))
	require.Equal(t, http.StatusUnauthorized, post("whsec_other", []byte(one)))
	batch := []byte(`{"events":[` + one + `,{"id":"e2","type":"campaign.status","createdAt":"2026-11-26T10:00:01.000Z","data":{"status":"Completed"}}]}`)
	require.Equal(t, http.StatusNoContent, post("whsec_test", batch))
	require.Equal(t, http.StatusUnauthorized, post("whsec_other", batch))
	cancel()
	require.NoError(t, <-done)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, []string{
		`verified e1 message.status {"status":"Delivered"}`,
		"refused: webhook: signature does not match",
		`verified e1 message.status {"status":"Delivered"}`,
		`verified e2 campaign.status {"status":"Completed"}`,
		"refused: webhook: signature does not match",
	}, lines)
}
