package delivery_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
	"github.com/heraldhq/herald/store/sqlstore/pgtest"
	"github.com/heraldhq/herald/transport/chat"
	"github.com/heraldhq/herald/transport/chatsim"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

// database is a kind of database the integration tests run on.
type database struct {
	name string
	url  func(t testing.TB) string
}

var databases = []database{
	{"sqlite", func(t testing.TB) string { return "sqlite://" + filepath.Join(t.TempDir(), "herald.db") }},
	{"postgres", pgtest.SchemaURL},
}

// openStore opens a store on rawURL, with a secret key for the webhook
// secrets some tests store, closed when the test ends.
func openStore(t testing.TB, rawURL string) *sqlstore.Store {
	t.Helper()
	raw, err := secretbox.NewKey()
	require.NoError(t, err)
	key, err := secretbox.ParseKey(raw)
	require.NoError(t, err)
	box, err := secretbox.New(key)
	require.NoError(t, err)
	s, err := sqlstore.Open(context.Background(), rawURL, sqlstore.Config{Secrets: box})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// startSMSC starts a recording simulator on loopback.
func startSMSC(t testing.TB, cfg smscsim.Config) *smscsim.Server {
	t.Helper()
	cfg.Record = true
	sim := smscsim.New(cfg)
	require.NoError(t, sim.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

// smppClient connects a transceiver to sim that hands receipts to h.
func smppClient(t testing.TB, sim *smscsim.Server, h delivery.ReceiptHandler) *smpp.Client {
	t.Helper()
	c, err := smpp.New(smpp.Config{Addr: sim.Addr(), SystemID: "herald", Password: "secret", ReceiptHandler: h,
		BindBackoff: messaging.Backoff{Min: 5 * time.Millisecond, Max: 50 * time.Millisecond}, SubmitTimeout: 5 * time.Second,
		Logger: testLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// TestSMPPEndToEnd sends a campaign over TCP through the SMPP adapter to
// the simulator, on SQLite and Postgres: short, long and Unicode texts,
// every receipt outcome, throttling, and a connection the SMSC drops
// mid-campaign. Every message ends as the simulator's outcome by number
// says, none is left Pending or Sending, and the campaign completes. It
// runs with the store's number of results writers (one on SQLite, two on
// Postgres) and with three on SQLite, where the parts of long messages
// and their receipts go to different writers.
func TestSMPPEndToEnd(t *testing.T) {
	cases := []struct {
		db      database
		writers int
	}{{databases[0], 0}, {databases[1], 0}, {databases[0], 3}}
	for _, tc := range cases {
		db := tc.db
		t.Run(fmt.Sprintf("%s/writers=%d", db.name, tc.writers), func(t *testing.T) {
			s := openStore(t, db.url(t))
			w := newWorld(t, s)
			sim := startSMSC(t, smscsim.Config{SystemID: "herald", Password: "secret",
				Faults: smscsim.Faults{ThrottleFraction: 0.1, DropAfter: 40}})
			const n = 120
			ps := phones(n, 0) // numbers ending 0001, 0002, 0003 fail
			long := strings.Repeat("A long message split into parts. ", 10)
			texts := func(i int) string {
				switch i % 4 {
				case 1:
					return fmt.Sprintf("%d %s", i, long)
				case 2:
					return fmt.Sprintf("%d Привет, мир! Ваш код — %d. 你好 🙂", i, i)
				case 3:
					return fmt.Sprintf("%d %s", i, strings.Repeat("Длинное сообщение на кириллице. ", 4))
				}
				return fmt.Sprintf("Your code is %06d", i)
			}
			c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: ps, text: texts})
			// The client hands receipts to the dispatcher that sends through
			// it.
			var d *delivery.Dispatcher
			client := smppClient(t, sim, func(ctx context.Context, r delivery.Receipt) error { return d.HandleReceipt(ctx, r) })
			cfg := fastConfig(s)
			cfg.SMS = client
			cfg.Writers = tc.writers
			d, err := delivery.New(cfg)
			require.NoError(t, err)
			run(t, d)

			got := w.waitCampaign(c.ID, "every message settled", func(c messaging.Campaign) bool {
				return settled(c) && c.Status == messaging.CampaignCompleted
			})
			require.Equal(t, messaging.StatusCounts{Delivered: n - 3, Failed: 3}, got.Counts)
			for i, m := range msgs {
				got := w.message(m.ID)
				switch i {
				case 1, 2, 3:
					require.Equal(t, messaging.StatusFailed, got.Status, "message %d", i)
					require.Equal(t, []string{"UNDELIVERED", "EXPIRED", "REJECTED"}[i-1], got.Details)
					require.Equal(t, fmt.Sprintf("00%d", i), got.SMSErrorCode)
				default:
					require.Equal(t, messaging.StatusDelivered, got.Status, "message %d", i)
					require.NotNil(t, got.DeliveredAt)
				}
				require.NotNil(t, got.SentAt)
				// The SMSC got the text whole, in as many parts as it needs.
				var texts []string
				for _, sm := range sim.MessagesTo(m.Phone) {
					require.Equal(t, "Herald", sm.From)
					texts = append(texts, sm.Text)
				}
				require.Contains(t, texts, m.Content, "message %d", i)
			}
			st := sim.Stats()
			require.Positive(t, st.Throttled, "the SMSC throttled some submits")
			require.EqualValues(t, 1, st.Dropped, "the SMSC dropped the connection once")
			require.GreaterOrEqual(t, client.Stats().Rebinds, uint64(1))
			n2, err := s.PendingCount(t.Context(), w.co.ID)
			require.NoError(t, err)
			require.Zero(t, n2)
		})
	}
}

// TestChatEndToEnd sends a chat campaign over HTTP through the chat
// adapter to the provider simulator: failures by number are recorded with
// their code, lost answers and server errors are retried with the same
// seq, which the provider deduplicates.
func TestChatEndToEnd(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			s := openStore(t, db.url(t))
			w := newWorld(t, s)
			sim := chatsim.New(chatsim.Config{Token: "tok", ServiceIDs: []string{"acme-brand"}, Record: true,
				Faults: chatsim.Faults{FailFirst: 3, DropFirst: 4, ThrottleEvery: 7}})
			require.NoError(t, sim.Start("127.0.0.1:0"))
			t.Cleanup(func() { _ = sim.Close() })
			client, err := chat.New(chat.Config{BaseURL: sim.URL(), Token: "tok", Retries: -1, Timeout: 5 * time.Second})
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.Close() })
			cfg := fastConfig(s)
			cfg.Chat = client
			d, err := delivery.New(cfg)
			require.NoError(t, err)

			ps := phones(40, 0) // ...0008, 0009 and 0010 fail
			config := &messaging.ChatConfig{Options: []messaging.SurveyOption{{OptionText: "Yes", OptionValue: "y"}, {OptionText: "No", OptionValue: "n"}}}
			c, msgs := w.campaign(spec{channel: messaging.ChannelChat, phones: ps, msgType: messaging.TypeSurvey, config: config,
				text: func(i int) string { return fmt.Sprintf("Question %d?", i) }})
			run(t, d)
			got := w.waitCampaign(c.ID, "campaign completed", func(c messaging.Campaign) bool { return c.Status == messaging.CampaignCompleted })
			require.Equal(t, messaging.StatusCounts{Sent: 37, Failed: 3}, got.Counts)

			accepted := 0
			for i, m := range msgs {
				got := w.message(m.ID)
				reqs := sim.Received(m.Phone)
				require.NotEmpty(t, reqs, "message %d", i)
				for _, r := range reqs {
					require.Equal(t, reqs[0].Seq, r.Seq, "every attempt of a message has its seq")
					require.Equal(t, m.ID.String(), r.TrackingData)
					require.Equal(t, "acme-brand", r.ServiceID)
					require.Equal(t, 6, r.Type)
					require.Equal(t, m.Content, r.Message.Text)
					require.Len(t, r.Survey.Options, 2)
					if r.Status == 0 {
						accepted++
					}
				}
				switch i {
				case 8, 9, 10:
					require.Equal(t, messaging.StatusFailed, got.Status, "message %d", i)
					require.Equal(t, map[int]string{8: "USER_BLOCKED (8)", 9: "NOT_VIBER_USER (9)", 10: "NO_SUITABLE_DEVICE (10)"}[i], got.Details)
				default:
					require.Equal(t, messaging.StatusSent, got.Status, "message %d", i)
					require.NotEmpty(t, got.ProviderMessageID)
				}
			}
			require.Equal(t, 37, accepted, "no message was accepted twice")
			st := sim.Stats()
			require.EqualValues(t, 37, st.Accepted)
			require.EqualValues(t, 4, st.AlreadySent, "the lost answers were retried with the same seq")
		})
	}
}

// TestDispatchersShareStore runs two dispatchers, each with its own store
// handle and SMPP session, on one database, as two processes would: every
// message is submitted once, whichever claims it, and the receipts, which
// the SMSC hands to either session, settle every message.
func TestDispatchersShareStore(t *testing.T) {
	for _, db := range databases {
		t.Run(db.name, func(t *testing.T) {
			rawURL := db.url(t)
			s := openStore(t, rawURL)
			w := newWorld(t, s)
			sim := startSMSC(t, smscsim.Config{SystemID: "herald", Password: "secret"})
			const n = 400
			c, msgs := w.campaign(spec{channel: messaging.ChannelSMS, phones: phones(n, 0)})
			// Both exist before either sends: the SMSC may hand a receipt
			// of one's submit to the other's session.
			ds := make([]*delivery.Dispatcher, 2)
			for i := range ds {
				client := smppClient(t, sim, func(ctx context.Context, r delivery.Receipt) error { return ds[i].HandleReceipt(ctx, r) })
				cfg := fastConfig(openStore(t, rawURL))
				cfg.SMS, cfg.BatchSize = client, 16
				var err error
				ds[i], err = delivery.New(cfg)
				require.NoError(t, err)
			}
			for _, d := range ds {
				run(t, d)
			}
			got := w.waitCampaign(c.ID, "every message settled", func(c messaging.Campaign) bool {
				return settled(c) && c.Status == messaging.CampaignCompleted
			})
			require.Equal(t, messaging.StatusCounts{Delivered: n - 3, Failed: 3}, got.Counts)
			submits := map[string]int{}
			for _, p := range sim.Parts() {
				submits[p.To]++
			}
			for i, m := range msgs {
				require.Equal(t, 1, submits[m.Phone], "message %d", i)
			}
		})
	}
}
