package storetest

import (
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/messaging"
)

// testIdempotencyKeys: the first claim of a company's key takes it, a
// second returns the record held (unfinished, then with the answer once
// completed); keys are per company; a completion or release with another
// hash changes nothing; a release frees the key; an expired record or an
// unfinished one abandoned is taken over; a purge removes the records
// created before a time.
func testIdempotencyKeys(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	req := func(co messaging.Company, key, body string) idempotency.Request {
		return idempotency.Request{CompanyID: co.ID, Key: key, Hash: idempotency.Digest("POST", "/x", []byte(body))}
	}
	claim := func(r idempotency.Request, now, expired, abandoned int) (idempotency.Record, bool) {
		held, claimed, err := f.s.ClaimIdempotencyKey(f.ctx, r, at(now), at(expired), at(abandoned))
		require.NoError(t, err)
		return held, claimed
	}
	r1 := req(a, "k1", "one")
	_, claimed := claim(r1, 10, 0, 0)
	require.True(t, claimed)
	held, claimed := claim(req(a, "k1", "two"), 11, 0, 0)
	require.False(t, claimed)
	require.False(t, held.Done)
	require.Equal(t, r1.Hash, held.Hash)
	_, claimed = claim(req(b, "k1", "two"), 11, 0, 0)
	require.True(t, claimed, "keys are per company")

	require.NoError(t, f.s.CompleteIdempotencyKey(f.ctx, req(a, "k1", "two"), idempotency.Response{Status: 500}, at(12)))
	got, err := f.s.GetIdempotencyKey(f.ctx, a.ID, "k1")
	require.NoError(t, err)
	require.False(t, got.Done, "another request's answer is not kept")
	resp := idempotency.Response{Status: 202, ContentType: "application/json", Body: []byte(`{"id":"x"}`)}
	require.NoError(t, f.s.CompleteIdempotencyKey(f.ctx, r1, resp, at(12)))
	held, claimed = claim(r1, 13, 0, 0)
	require.False(t, claimed)
	require.True(t, held.Done)
	require.Equal(t, resp, held.Response)
	requireTime(t, "CreatedAt", at(10), held.CreatedAt, nil)
	require.NoError(t, f.s.ReleaseIdempotencyKey(f.ctx, r1))
	_, claimed = claim(r1, 14, 0, 14)
	require.False(t, claimed, "a finished key is not released, nor abandoned")
	_, claimed = claim(r1, 15, 11, 0)
	require.True(t, claimed, "expired: taken over")
	held, claimed = claim(r1, 16, 0, 0)
	require.False(t, claimed)
	require.False(t, held.Done, "taken over unfinished")

	r2 := req(a, "k2", "x")
	_, claimed = claim(r2, 20, 0, 0)
	require.True(t, claimed)
	require.NoError(t, f.s.ReleaseIdempotencyKey(f.ctx, req(a, "k2", "other")))
	_, claimed = claim(r2, 21, 0, 0)
	require.False(t, claimed, "released with another hash: still held")
	require.NoError(t, f.s.ReleaseIdempotencyKey(f.ctx, r2))
	_, err = f.s.GetIdempotencyKey(f.ctx, a.ID, "k2")
	requireNotFound(t, err)
	_, claimed = claim(r2, 22, 0, 0)
	require.True(t, claimed, "released: free")
	_, claimed = claim(r2, 30, 0, 22)
	require.False(t, claimed, "unfinished since 22: not abandoned at 22")
	_, claimed = claim(r2, 31, 0, 23)
	require.True(t, claimed, "unfinished since 22: abandoned at 23")

	n, err := f.s.PurgeIdempotencyKeys(f.ctx, at(12), 10)
	require.NoError(t, err)
	require.Equal(t, 1, n, "B's k1, created at 11")
	_, err = f.s.GetIdempotencyKey(f.ctx, b.ID, "k1")
	requireNotFound(t, err)
	_, err = f.s.GetIdempotencyKey(f.ctx, a.ID, "k1")
	require.NoError(t, err)
}

// testIdempotencyKeysConcurrent: of many first requests with one key at
// once, exactly one takes it.
func testIdempotencyKeysConcurrent(f *fixture) {
	a := f.company("A")
	r := idempotency.Request{CompanyID: a.ID, Key: "race", Hash: idempotency.Digest("POST", "/x", nil)}
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	claims := 0
	for range n {
		wg.Go(func() {
			_, claimed, err := f.s.ClaimIdempotencyKey(f.ctx, r, at(1), at(0), at(0))
			require.NoError(f.t, err)
			if claimed {
				mu.Lock()
				claims++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(f.t, 1, claims)
}
