package messaging_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

func TestNormalizePhone(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"998901234567", "998901234567", true},
		{"+998901234567", "998901234567", true},
		{"1234567890", "1234567890", true},            // 10 digits: shortest
		{"123456789", "", false},                      // 9 digits
		{"123456789012345", "123456789012345", true},  // 15 digits: longest
		{"+123456789012345", "123456789012345", true}, // 15 digits with plus
		{"1234567890123456", "", false},               // 16 digits
		{"++998901234567", "", false},                 // two plus signs
		{"998 901234567", "", false},                  // space
		{"998-901-234567", "", false},                 // dash
		{"(998)901234567", "", false},                 // parentheses
		{"99890123456a", "", false},                   // letter
		{"", "", false},                               // empty
		{"+", "", false},                              // plus only
		{"998901234567+", "", false},                  // plus at the end
		{"٩٩٨٩٠١٢٣٤٥٦٧", "", false},                   // non-ASCII digits
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := messaging.NormalizePhone(tt.in)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestIDRoundTrip(t *testing.T) {
	g := messaging.NewIDGenerator(nil)
	id := g.New()
	s := id.String()
	require.Len(t, s, 36)
	require.Equal(t, byte('7'), s[14], "version 7")
	require.Contains(t, "89ab", string(s[19]), "RFC 4122 variant")
	back, err := messaging.ParseID(s)
	require.NoError(t, err)
	require.Equal(t, id, back)

	b, err := json.Marshal(struct{ ID messaging.ID }{id})
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf(`{"ID":%q}`, s), string(b))

	var scanned messaging.ID
	require.NoError(t, scanned.Scan(s))
	require.Equal(t, id, scanned)
	require.NoError(t, scanned.Scan([]byte(id[:])))
	require.Equal(t, id, scanned)
	v, err := id.Value()
	require.NoError(t, err)
	require.Equal(t, s, v)
}

func TestParseIDRejects(t *testing.T) {
	for _, in := range []string{
		"", "not-a-uuid", "0190b6c8-3c4d-7e5f-8a9b-0c1d2e3f4a5", "0190b6c8x3c4d-7e5f-8a9b-0c1d2e3f4a5b",
		"0190b6c8-3c4d-7e5f-8a9b-0c1d2e3f4a5g", "0190b6c83c4d7e5f8a9b0c1d2e3f4a5b",
	} {
		_, err := messaging.ParseID(in)
		require.Error(t, err, in)
	}
	id, err := messaging.ParseID("0190B6C8-3C4D-7E5F-8A9B-0C1D2E3F4A5B")
	require.NoError(t, err)
	require.Equal(t, "0190b6c8-3c4d-7e5f-8a9b-0c1d2e3f4a5b", id.String())
}

func TestIDGeneratorIsOrderedWithinAMillisecond(t *testing.T) {
	fixed := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	g := messaging.NewIDGenerator(func() time.Time { return fixed })
	prev := g.New()
	for i := 0; i < 20_000; i++ { // more than the 12-bit counter holds
		next := g.New()
		require.Greater(t, next.String(), prev.String())
		prev = next
	}
}

func TestIDGeneratorConcurrentUnique(t *testing.T) {
	g := messaging.NewIDGenerator(nil)
	var mu sync.Mutex
	seen := map[messaging.ID]bool{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]messaging.ID, 2000)
			for i := range local {
				local[i] = g.New()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range local {
				require.False(t, seen[id])
				seen[id] = true
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, 16000)
}

func TestCanAdvance(t *testing.T) {
	const (
		P  = messaging.StatusPending
		Sg = messaging.StatusSending
		St = messaging.StatusSent
		D  = messaging.StatusDelivered
		Se = messaging.StatusSeen
		F  = messaging.StatusFailed
	)
	allowed := map[[2]messaging.MessageStatus]bool{
		{P, Sg}: true, {P, St}: true, {P, D}: true, {P, Se}: true, {P, F}: true,
		{Sg, P}: true, {Sg, St}: true, {Sg, D}: true, {Sg, Se}: true, {Sg, F}: true,
		{St, D}: true, {St, Se}: true, {St, F}: true,
		{D, Se}: true,
	}
	all := messaging.MessageStatuses()
	for _, from := range all {
		for _, to := range all {
			require.Equal(t, allowed[[2]messaging.MessageStatus{from, to}], from.CanAdvance(to), "%s -> %s", from, to)
		}
		require.False(t, from.CanAdvance("Bogus"))
		require.False(t, messaging.MessageStatus("Bogus").CanAdvance(from))
	}
}

func TestStatusPredicates(t *testing.T) {
	for _, s := range messaging.MessageStatuses() {
		require.Equal(t, s == messaging.StatusPending || s == messaging.StatusSending, s.Unsent(), s)
		require.Equal(t, s == messaging.StatusDelivered || s == messaging.StatusSeen || s == messaging.StatusFailed, s.Final(), s)
	}
}

func TestStatusCounts(t *testing.T) {
	var c messaging.StatusCounts
	for i, s := range messaging.MessageStatuses() {
		c.Add(s, i+1)
	}
	require.Equal(t, 21, c.Total())
	require.Equal(t, 3, c.Unsent())
	for i, s := range messaging.MessageStatuses() {
		require.Equal(t, i+1, c.Of(s))
	}
}

func TestFieldErrors(t *testing.T) {
	var fe messaging.FieldErrors
	require.NoError(t, fe.Err())
	fe.Add("name", "name is required")
	fe.Add("name", "second problem is not reported")
	fe.Merge("typeSpecificConfig.", messaging.FieldErrors{"imageUrl": "must be HTTPS"})
	err := fe.Err()
	require.Error(t, err)
	var e *messaging.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, messaging.Invalid, e.Code)
	require.Equal(t, messaging.NameBadRequest, e.Name)
	require.Equal(t, map[string]string{"name": "name is required", "typeSpecificConfig.imageUrl": "must be HTTPS"}, e.Fields)
	require.Equal(t, messaging.Invalid, messaging.ErrorCode(fmt.Errorf("wrapped: %w", err)))
	require.Equal(t, messaging.Internal, messaging.ErrorCode(errors.New("plain")))
	require.True(t, messaging.IsCode(messaging.NotFoundf("x"), messaging.NotFound))
	require.False(t, messaging.IsCode(nil, messaging.NotFound))
}

func TestPageRequest(t *testing.T) {
	tests := []struct {
		in      messaging.PageRequest
		want    messaging.PageRequest
		invalid string
	}{
		{messaging.PageRequest{}, messaging.PageRequest{Page: 1, PageSize: 20}, ""},
		{messaging.PageRequest{Page: 3, PageSize: 100}, messaging.PageRequest{Page: 3, PageSize: 100}, ""},
		{messaging.PageRequest{Page: 1, PageSize: 101}, messaging.PageRequest{}, "pageSize"},
		{messaging.PageRequest{Page: -1, PageSize: 10}, messaging.PageRequest{}, "page"},
		{messaging.PageRequest{Page: 1, PageSize: -5}, messaging.PageRequest{}, "pageSize"},
	}
	for _, tt := range tests {
		got, err := tt.in.Normalize()
		if tt.invalid != "" {
			var e *messaging.Error
			require.True(t, errors.As(err, &e), "%+v", tt.in)
			require.Contains(t, e.Fields, tt.invalid)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
	p := messaging.PageRequest{Page: 3, PageSize: 20}
	require.Equal(t, 40, p.Offset())
	require.Equal(t, 3, p.TotalPages(45))
	require.Equal(t, 2, p.TotalPages(40))
	require.Equal(t, 0, p.TotalPages(0))
}

func TestParseSendingMode(t *testing.T) {
	m, err := messaging.ParseSendingMode("Bulk")
	require.NoError(t, err)
	require.Equal(t, messaging.ModeBulk, m)
	_, err = messaging.ParseSendingMode("bulk")
	require.True(t, messaging.IsCode(err, messaging.Invalid))
}
