package delivery_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/inbound"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

// TestInboundPartsOverSMPP: the SMSC sends a one-part SMS, then long
// UCS-2 SMS of three parts each, their parts back to back, over TCP to the
// SMPP client, which stores them through the inbound service (parts are
// handled side by side): on SQLite and Postgres each is acknowledged and
// listed once, its text whole.
func TestInboundPartsOverSMPP(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			s := openStore(t, db.url(t))
			w := newWorld(t, s)
			in, err := inbound.New(inbound.Config{Store: s, Logger: testLogger()})
			require.NoError(t, err)
			sim := startSMSC(t, smscsim.Config{SystemID: "herald", Password: "secret"})
			client, err := smpp.New(smpp.Config{Addr: sim.Addr(), SystemID: "herald", Password: "secret",
				InboundHandler: in.Receive, Logger: testLogger(),
				BindBackoff: messaging.Backoff{Min: 5 * time.Millisecond, Max: 50 * time.Millisecond}})
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.Close(context.Background()) })
			require.NoError(t, client.WaitBound(t.Context()))

			want := map[string]string{"447700900100": "Да"}
			require.NoError(t, sim.SendMO("447700900100", w.sender.SenderID, want["447700900100"]))
			const long = 8
			for i := range long {
				phone := fmt.Sprintf("4477009002%02d", i)
				// 150 UCS-2 units: three parts of at most 67.
				want[phone] = fmt.Sprintf("Ответ %02d: ", i) + strings.Repeat("Привет 👋 ", 14)
				require.NoError(t, sim.SendMO(phone, w.sender.SenderID, want[phone]))
			}
			list := func() []messaging.InboundMessage {
				ms, _, err := s.ListInbound(t.Context(), w.co.ID, messaging.InboundFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
				require.NoError(t, err)
				return ms
			}
			waitFor(t, "every inbound SMS listed", func() bool { return len(list()) >= len(want) })
			waitFor(t, "every part acknowledged", func() bool { st := sim.Stats(); return st.ReceiptsPending == 0 })
			got := map[string]messaging.InboundMessage{}
			for _, m := range list() {
				_, dup := got[m.Phone]
				require.False(t, dup, "%s listed twice", m.Phone)
				got[m.Phone] = m
			}
			require.Len(t, got, len(want))
			for phone, text := range want {
				require.Equal(t, text, got[phone].Text, phone)
				if phone != "447700900100" {
					require.Equal(t, 3, got[phone].Parts, phone)
				}
			}
		})
	}
}
