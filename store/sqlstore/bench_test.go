package sqlstore_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
)

// benchBatch is the largest batch one request may carry.
const benchBatch = 200_000

// bulkFixture creates a company and a Queuing SMS campaign planned for n
// messages, and returns n Pending messages for it, not yet inserted, to
// numbers in the order perm gives (nil: ascending).
func bulkFixture(b testing.TB, s *sqlstore.Store, ids *messaging.IDGenerator, n int, perm []int) []*messaging.Message {
	b.Helper()
	ctx := b.Context()
	now := time.Date(2026, time.March, 2, 9, 30, 0, 0, time.UTC)
	co := messaging.Company{ID: ids.New(), Name: "Bench", Active: true, CreatedAt: now}
	require.NoError(b, s.CreateCompany(ctx, &co))
	c := messaging.Campaign{ID: ids.New(), CompanyID: co.ID, Name: "bench", Channel: messaging.ChannelSMS,
		Mode: messaging.ModeBulk, Status: messaging.CampaignQueuing, MessageType: messaging.TypeSimpleText,
		Planned: n, CreatedAt: now, UpdatedAt: now}
	require.NoError(b, s.CreateCampaign(ctx, &c, n))
	msgs := make([]*messaging.Message, n)
	for i := range msgs {
		k := i
		if perm != nil {
			k = perm[i]
		}
		msgs[i] = &messaging.Message{ID: ids.New(), CompanyID: co.ID, CampaignID: c.ID, Channel: messaging.ChannelSMS,
			Phone: fmt.Sprintf("4479%08d", k), ExternalUserID: fmt.Sprintf("user-%d", k), Content: "Hello",
			Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now}
	}
	return msgs
}

// startedFixture inserts n messages of a new SMS campaign (bulkFixture)
// and moves the campaign to InProgress; it returns the messages.
func startedFixture(b testing.TB, s *sqlstore.Store, ids *messaging.IDGenerator, n int) []*messaging.Message {
	b.Helper()
	ctx := b.Context()
	msgs := bulkFixture(b, s, ids, n, nil)
	require.NoError(b, s.InsertMessages(ctx, msgs))
	c := msgs[0]
	for _, mv := range [][2]messaging.CampaignStatus{{messaging.CampaignQueuing, messaging.CampaignReady}, {messaging.CampaignReady, messaging.CampaignInProgress}} {
		require.NoError(b, s.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.CampaignID,
			From: []messaging.CampaignStatus{mv[0]}, To: mv[1], At: c.CreatedAt}))
	}
	return msgs
}

// openBench opens the store of a benchmark, closed when it ends.
func openBench(b *testing.B, rawURL string) *sqlstore.Store {
	b.Helper()
	s, err := sqlstore.Open(b.Context(), rawURL, sqlstore.Config{})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, s.Close()) })
	return s
}

// benchInsert times InsertMessages of batches of n messages, each for a
// new campaign of a new company in the same database, and reports rows/s.
func benchInsert(b *testing.B, rawURL string, n int, shuffle bool) {
	s := openBench(b, rawURL)
	ids := messaging.NewIDGenerator(nil)
	rng := rand.New(rand.NewPCG(1, 2))
	rows := 0
	for b.Loop() {
		b.StopTimer()
		var perm []int
		if shuffle {
			perm = rng.Perm(n)
		}
		msgs := bulkFixture(b, s, ids, n, perm)
		b.StartTimer()
		require.NoError(b, s.InsertMessages(b.Context(), msgs))
		rows += n
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkInsertMessages200k inserts the largest batch one request may
// carry, to ascending phone numbers.
func BenchmarkInsertMessages200k(b *testing.B) {
	for _, db := range databases {
		b.Run(db.name, func(b *testing.B) { benchInsert(b, db.url(b), benchBatch, false) })
	}
}

// BenchmarkInsertMessages200kShuffled is BenchmarkInsertMessages200k with
// the phone numbers (and external user ids) in random order, so that their
// index entries land all over the index.
func BenchmarkInsertMessages200kShuffled(b *testing.B) {
	for _, db := range databases {
		b.Run(db.name, func(b *testing.B) { benchInsert(b, db.url(b), benchBatch, true) })
	}
}

// BenchmarkClaimDueBesideReady claims batches of 100 messages of a
// campaign in progress while a campaign not started yet holds 200,000
// Pending messages of the same channel, due earlier: their number must not
// slow claims down.
func BenchmarkClaimDueBesideReady(b *testing.B) {
	const batch = 100
	for _, db := range databases {
		b.Run(db.name, func(b *testing.B) {
			s := openBench(b, db.url(b))
			ctx := b.Context()
			ids := messaging.NewIDGenerator(nil)
			ready := bulkFixture(b, s, ids, benchBatch, nil)
			require.NoError(b, s.InsertMessages(ctx, ready))
			at := ready[0].CreatedAt
			require.NoError(b, s.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: ready[0].CompanyID, CampaignID: ready[0].CampaignID, From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignReady, At: at}))
			var claimed int
			for b.Loop() {
				b.StopTimer()
				if claimed == 0 {
					// A campaign in progress with messages due a second later.
					live := bulkFixture(b, s, ids, 50_000, nil)
					for _, m := range live {
						m.DueAt = at.Add(time.Second)
					}
					require.NoError(b, s.InsertMessages(ctx, live))
					c := live[0]
					for _, to := range []messaging.CampaignStatus{messaging.CampaignReady, messaging.CampaignInProgress} {
						from := messaging.CampaignQueuing
						if to == messaging.CampaignInProgress {
							from = messaging.CampaignReady
						}
						require.NoError(b, s.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.CampaignID, From: []messaging.CampaignStatus{from}, To: to, At: at}))
					}
					claimed = len(live)
				}
				b.StartTimer()
				got, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: at.Add(time.Minute), LeaseUntil: at.Add(2 * time.Minute), Limit: batch})
				require.NoError(b, err)
				require.Len(b, got, batch)
				claimed -= batch
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkApplyUpdates applies batches of 100 delivery reports (Sent,
// then Delivered) to messages of a campaign of 200,000.
func BenchmarkApplyUpdates(b *testing.B) {
	const batch = 100
	for _, db := range databases {
		b.Run(db.name, func(b *testing.B) {
			s := openBench(b, db.url(b))
			ctx := b.Context()
			ids := messaging.NewIDGenerator(nil)
			msgs := bulkFixture(b, s, ids, benchBatch, nil)
			require.NoError(b, s.InsertMessages(ctx, msgs))
			at := msgs[0].CreatedAt
			c := msgs[0]
			require.NoError(b, s.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.CampaignID, From: []messaging.CampaignStatus{messaging.CampaignQueuing}, To: messaging.CampaignReady, At: at}))
			require.NoError(b, s.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.CampaignID, From: []messaging.CampaignStatus{messaging.CampaignReady}, To: messaging.CampaignInProgress, At: at}))
			next, round := 0, 0
			updates := make([]delivery.StatusUpdate, batch)
			for b.Loop() {
				if next+batch > len(msgs) {
					b.Fatalf("more than %d iterations", len(msgs)/batch*2)
				}
				status := messaging.StatusSent
				if round%2 == 1 {
					status = messaging.StatusDelivered
				}
				round++
				for i := range updates {
					updates[i] = delivery.StatusUpdate{MessageID: msgs[next+i].ID, Status: status, At: at.Add(time.Second), ProviderMessageID: "p"}
				}
				ok, err := s.ApplyUpdates(ctx, updates)
				require.NoError(b, err)
				require.True(b, ok[0] && ok[batch-1], "updates of messages %d-%d not applied", next, next+batch)
				if status == messaging.StatusDelivered {
					next += batch
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "updates/s")
		})
	}
}

// BenchmarkPurgeFinished purges a completed campaign of 200,000 delivered
// messages in batches of 1,000, as retention does, and reports rows/s and
// the longest batch: the longest the purge holds the store's writer.
func BenchmarkPurgeFinished(b *testing.B) {
	for _, db := range databases {
		b.Run(db.name, func(b *testing.B) {
			s := openBench(b, db.url(b))
			ctx := b.Context()
			at := time.Date(2026, time.March, 2, 9, 30, 0, 0, time.UTC)
			ids := messaging.NewIDGenerator(func() time.Time { return at })
			rows := 0
			var longest time.Duration
			for b.Loop() {
				b.StopTimer()
				msgs := bulkFixture(b, s, ids, benchBatch, nil)
				for _, m := range msgs {
					m.Status = messaging.StatusDelivered
				}
				require.NoError(b, s.InsertMessages(ctx, msgs))
				c := msgs[0]
				for _, move := range [][2]messaging.CampaignStatus{{messaging.CampaignQueuing, messaging.CampaignReady},
					{messaging.CampaignReady, messaging.CampaignInProgress}, {messaging.CampaignInProgress, messaging.CampaignCompleted}} {
					require.NoError(b, s.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.CampaignID,
						From: []messaging.CampaignStatus{move[0]}, To: move[1], At: at}))
				}
				b.StartTimer()
				for {
					t0 := time.Now()
					out, err := s.PurgeFinished(ctx, campaign.Purge{FinishedBefore: at.Add(time.Hour), Limit: 1000, Now: at.Add(time.Hour)})
					require.NoError(b, err)
					longest = max(longest, time.Since(t0))
					rows += out.Messages
					if out.Campaign.IsZero() {
						break
					}
				}
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(longest.Microseconds())/1000, "max-batch-ms")
		})
	}
}

// BenchmarkSMSLifecycle is a diagnostic of the store's share of an SMS's
// delivery: each iteration claims 100 messages of a campaign of 200,000
// in progress, records them Sent with a part id each, then applies a
// DELIVRD receipt for each, in three transactions as the dispatcher's
// claim, send results and receipts do. It reports messages per second,
// and on Postgres, when the server runs on this machine, the CPU of the
// store's backends per message (backend-µs/msg).
func BenchmarkSMSLifecycle(b *testing.B) {
	const batch = 100
	for _, db := range databases {
		b.Run(db.name, func(b *testing.B) {
			u := db.url(b)
			var backends *backendCPU
			if db.name == "postgres" {
				u, backends = withBackendCPU(b, u)
			}
			s := openBench(b, u)
			ctx := b.Context()
			ids := messaging.NewIDGenerator(nil)
			msgs := startedFixture(b, s, ids, benchBatch)
			at := msgs[0].CreatedAt
			updates := make([]delivery.StatusUpdate, 0, batch)
			receipts := make([]delivery.Receipt, 0, batch)
			n := 0
			if backends != nil {
				backends.begin(b)
			}
			for b.Loop() {
				got, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: at.Add(time.Minute), LeaseUntil: at.Add(2 * time.Minute), Limit: batch, Owner: "bench"})
				require.NoError(b, err)
				require.Len(b, got, batch, "claimed after %d messages", n)
				updates, receipts = updates[:0], receipts[:0]
				for _, m := range got {
					pid := fmt.Sprintf("p%x", m.ID[:])
					updates = append(updates, delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent, At: at.Add(time.Second), PartIDs: []string{pid}})
					receipts = append(receipts, delivery.Receipt{ProviderID: pid, State: "DELIVRD", Err: "000", At: at.Add(2 * time.Second)})
				}
				br, err := s.ApplyBatch(ctx, updates, nil, at.Add(time.Second))
				require.NoError(b, err)
				require.True(b, br.Applied[0] && br.Applied[batch-1])
				br, err = s.ApplyBatch(ctx, nil, receipts, at.Add(2*time.Second))
				require.NoError(b, err)
				require.Equal(b, delivery.ReceiptApplied, br.Outcomes[batch-1])
				n += batch
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
			if backends != nil && n > 0 {
				b.ReportMetric(float64(backends.since(b).Microseconds())/float64(n), "backend-µs/msg")
			}
		})
	}
}

// BenchmarkExpireReceiptsDelivered times the receipt-timeout sweep over
// the parts of 100,000 SMS that were all delivered (one part each): the
// usual case 48 hours after a campaign, where nothing is to be marked.
// Run it with -benchtime 1x; it reports the parts looked at per second.
func BenchmarkExpireReceiptsDelivered(b *testing.B) {
	const n, batch = 100_000, 1_000
	for _, db := range databases {
		b.Run(db.name, func(b *testing.B) {
			s := openBench(b, db.url(b))
			ctx := b.Context()
			ids := messaging.NewIDGenerator(nil)
			at := startedFixture(b, s, ids, n)[0].CreatedAt
			for done := 0; done < n; done += batch {
				got, err := s.ClaimDue(ctx, delivery.Claim{Channel: messaging.ChannelSMS, Now: at.Add(time.Minute), LeaseUntil: at.Add(2 * time.Minute), Limit: batch, Owner: "bench"})
				require.NoError(b, err)
				updates := make([]delivery.StatusUpdate, len(got))
				receipts := make([]delivery.Receipt, len(got))
				for i, m := range got {
					pid := fmt.Sprintf("p%x", m.ID[:])
					updates[i] = delivery.StatusUpdate{MessageID: m.ID, Status: messaging.StatusSent, At: at.Add(time.Second), PartIDs: []string{pid}}
					receipts[i] = delivery.Receipt{ProviderID: pid, State: "DELIVRD", Err: "000", At: at.Add(2 * time.Second)}
				}
				_, err = s.ApplyBatch(ctx, updates, receipts, at.Add(2*time.Second))
				require.NoError(b, err)
			}
			for b.Loop() {
				marked, err := s.ExpireReceipts(ctx, time.Now().Add(time.Hour), time.Now(), "NO_RECEIPT")
				require.NoError(b, err)
				require.Zero(b, marked)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "parts/s")
		})
	}
}

// BenchmarkReplayKeys records batches of 100 new callback keys, as a
// batched callback of Herald's protocol does with its events' ids, and
// reports the keys recorded a second. "ordered": ids that grow, as the
// simulator's (message token and step); "random": keys in no order, as
// the signatures keying single callbacks.
//
//	go test -run '^$' -bench ReplayKeys/sqlite -benchtime 3000x ./store/sqlstore
func BenchmarkReplayKeys(b *testing.B) {
	const batch = 100
	for _, db := range databases {
		for _, shape := range []string{"ordered", "random"} {
			b.Run(db.name+"/"+shape, func(b *testing.B) {
				s := openBench(b, db.url(b))
				ctx := b.Context()
				until := time.Date(2026, time.March, 3, 9, 30, 0, 0, time.UTC)
				ids := messaging.NewIDGenerator(nil)
				keys := make([]delivery.ReplayKey, batch)
				for b.Loop() {
					for i := range keys {
						k := "herald:1:id:" + ids.New().String() + ".1"
						if shape == "random" {
							k = fmt.Sprintf("herald:1:%016x%016x", rand.Uint64(), rand.Uint64())
						}
						keys[i] = delivery.ReplayKey{Key: k, Until: until}
					}
					seen, _, err := s.ApplyUpdatesOnce(ctx, keys, nil, nil)
					require.NoError(b, err)
					require.False(b, seen[0])
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "keys/s")
			})
		}
	}
}
