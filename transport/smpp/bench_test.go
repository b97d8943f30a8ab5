package smpp_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/stretchr/testify/require"
)

// BenchmarkSendThroughput sends b.N single-part messages through a Client
// to the simulator over loopback, from 256 goroutines, and waits for every
// receipt; it reports messages per second, receipts included.
func BenchmarkSendThroughput(b *testing.B) {
	srv := smscsim.New(smscsim.Config{})
	require.NoError(b, srv.Start("127.0.0.1:0"))
	defer srv.Close()
	var receipts atomic.Int64
	all := make(chan struct{})
	var target atomic.Int64
	target.Store(-1)
	h := func(_ context.Context, r delivery.Receipt) error {
		if receipts.Add(1) == target.Load() {
			close(all)
		}
		return nil
	}
	c, err := smpp.New(smpp.Config{Addr: srv.Addr(), Window: 200, ReceiptHandler: h, Logger: testLogger()})
	require.NoError(b, err)
	defer c.Close(context.Background())
	ctx := context.Background()
	require.NoError(b, c.WaitBound(ctx))

	target.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := c.Send(ctx, delivery.SMS{From: "Herald", To: "447700900123", Text: "Your code is 123456"}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		b.Fatalf("%d receipts of %d", receipts.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
