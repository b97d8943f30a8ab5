package chat_test

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatsim"
)

// benchSend measures SendChat throughput against the simulator on
// loopback from many goroutines (8 per GOMAXPROCS). With callbacks the
// simulator also posts delivered and seen to a CallbackHandler, and the
// time includes waiting until all were stored.
//
//	go test -run '^$' -bench SendChat -benchtime 3s ./transport/chat/
func benchSend(b *testing.B, callbacks bool) {
	cfg := chatsim.Config{Token: token}
	var stored atomic.Int64
	if callbacks {
		h := chat.CallbackHandler(chat.CallbackConfig{Secret: secret, Reporter: reporterFunc(func(context.Context, event) error {
			stored.Add(1)
			return nil
		})})
		cb := httptest.NewServer(h)
		b.Cleanup(cb.Close)
		cfg.CallbackURL, cfg.CallbackSecret = cb.URL, secret
	}
	sim := chatsim.New(cfg)
	if err := sim.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sim.Close() })
	c, err := chat.New(chat.Config{BaseURL: sim.URL(), Token: token})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })

	ids := messaging.NewIDGenerator(nil)
	var seq atomic.Int64
	cfgButton := messaging.ChatConfig{ButtonText: "Open", ButtonURL: "https://shop.example/orders/12345"}
	var failed atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			_, err := c.SendChat(ctx, delivery.ChatSend{
				MessageID: ids.New(), Sender: "acme", To: "998901234567", Ref: seq.Add(1),
				TTL: time.Hour, Type: messaging.TypeButtonPlusText, Text: "Your order 12345 has shipped", Config: cfgButton,
			})
			if err != nil {
				failed.Add(1)
			}
		}
	})
	if callbacks {
		if err := sim.WaitIdle(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d sends failed", n)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	if callbacks {
		if got := stored.Load(); got != 2*int64(b.N) {
			b.Fatalf("%d callbacks stored, want %d", got, 2*b.N)
		}
		b.ReportMetric(float64(stored.Load())/elapsed.Seconds(), "callbacks/s")
	}
}

func BenchmarkSendChat(b *testing.B) { benchSend(b, false) }

func BenchmarkSendChatWithCallbacks(b *testing.B) { benchSend(b, true) }
