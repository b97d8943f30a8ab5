// Package pace holds Batches, which runs background work (retention's
// purges) batch after batch, each followed by a pause in proportion to
// it, so that the work takes a bounded share of the store it shares with
// delivery however large its backlog.
package pace

import (
	"context"
	"time"
)

// Batches calls batch until it returns false or ctx ends. After each call
// that returns true it waits share times as long as the call took, and at
// least least, so that the batches take at most 1/(share+1) of the time.
func Batches(ctx context.Context, least time.Duration, share int, batch func() bool) {
	for {
		start := time.Now()
		if !batch() {
			return
		}
		t := time.NewTimer(max(least, time.Duration(share)*time.Since(start)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
