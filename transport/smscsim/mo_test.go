package smscsim_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/inbound"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

// SendMO reaches Herald's SMPP client over TCP as the parts a handset
// sends: GSM-7 with extension characters in one part, a long UCS-2 text in
// several with a concatenation header (none split inside a character),
// which the inbound store puts together again; and through the control
// API.
func TestSendMO(t *testing.T) {
	sim := smscsim.New(smscsim.Config{})
	require.NoError(t, sim.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = sim.Close() })

	var mu sync.Mutex
	var parts []delivery.InboundPart
	st := memstore.New()
	in, err := inbound.New(inbound.Config{Store: st})
	require.NoError(t, err)
	c, err := smpp.New(smpp.Config{Addr: sim.Addr(), SystemID: "herald", Password: "x",
		InboundHandler: func(ctx context.Context, p delivery.InboundPart) error {
			mu.Lock()
			parts = append(parts, p)
			mu.Unlock()
			return in.Receive(ctx, p)
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.WaitBound(context.Background()))

	long := "Спасибо! Всё отлично 👍 " + "Очень довольны обслуживанием, придём ещё раз на следующей неделе с друзьями. " + "Ждём 🎉"
	require.NoError(t, sim.SendMO("+447700900123", "Herald", "Price 5€ ok ^^"))
	require.NoError(t, sim.SendMO("447700900124", "Herald", long))
	srv := httptest.NewServer(sim.ControlHandler())
	defer srv.Close()
	require.Equal(t, 200, control(t, srv.URL, "POST", "/mo", `{"from":"447700900125","to":"Herald","text":"STOP"}`, nil))
	require.Equal(t, 400, control(t, srv.URL, "POST", "/mo", `{"from":"447700900125","to":"Herald","text":""}`, nil))

	got := map[string]string{}
	require.Eventually(t, func() bool {
		ms, _, err := st.ListInbound(context.Background(), messaging.NilID, messaging.InboundFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
		require.NoError(t, err)
		for _, m := range ms {
			got[m.Phone] = m.Text
		}
		return len(got) == 3
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, map[string]string{"447700900123": "Price 5€ ok ^^", "447700900124": long, "447700900125": "STOP"}, got)
	mu.Lock()
	defer mu.Unlock()
	var longParts []delivery.InboundPart
	for _, p := range parts {
		if p.From == "447700900124" {
			longParts = append(longParts, p)
		}
	}
	require.Greater(t, len(longParts), 1, "the long text came in parts")
	var seqs, want []int
	for i, p := range longParts {
		require.Equal(t, len(longParts), p.Count, "every part came once")
		seqs, want = append(seqs, p.Seq), append(want, i+1)
	}
	require.ElementsMatch(t, want, seqs)
}
