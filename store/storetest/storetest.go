// Package storetest is the conformance suite of Herald's storage ports:
// every adapter of campaign.Store, delivery.Store, survey.Store and webhook.Store passes
// it, so the rules written in the ports' doc comments are checked once, the
// same way, against the in-memory store, SQLite and Postgres.
//
// An adapter runs it from one of its own tests, with a constructor that
// returns a fresh, empty store for each case:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Store {
//			s := mystore.Open(...) // an empty database
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Run runs every case as a subtest (go test -run 'TestConformance/Claim'
// picks some). Cases run one after the other, each on its own store; a few
// start goroutines against that one store to check atomicity (capacity
// admission, compare-and-set transitions, concurrent claims and updates).
//
// Times are compared as instants, to the microsecond: a store may keep
// microseconds only and may return times in any location. Test data uses
// a fixed clock in 2026 and UUIDv7 identifiers from a generator on it.
//
// Where the ports leave a detail open, the suite settles it as follows.
//   - Lists ordered newest first sort by CreatedAt descending, then by ID
//     descending; survey results (oldest answer first) by RespondedAt
//     ascending, then ID ascending; ClaimDue (oldest first) by DueAt
//     ascending, then ID ascending. Ties are common: a batch of messages
//     shares one CreatedAt and DueAt.
//   - A message whose FallbackFor is set (a fallback SMS) is counted in its
//     campaign's FallbackCounts, by InsertMessages and AdmitMessages alike,
//     and in the company's pending count while Pending or Sending.
//   - A company's pending count is, campaign by campaign, the Pending and
//     Sending messages (fallback SMS included) plus, for a campaign still
//     Queuing, Planned minus Counts.Total() (never below zero). Moving a
//     Queuing campaign to Failed leaves it no messages and zero counters.
//   - ApplyUpdates reports an update of an unknown message as not applied;
//     updates of one call are applied in order, each seeing the effect of
//     the previous ones.
//   - RecoverClaims moves messages whose LeaseUntil is strictly before now,
//     those of owners whose heartbeat is older than StaleBefore (or who
//     never sent one), and those of Owner.
//   - Left to the store and not checked: UpdatedAt after a claim, an update
//     or a transition; LeaseUntil once a message left Sending; SentAt when
//     an update skips Sent.
//   - ListResults and CountByOption with another company's campaign find
//     nothing (no error); AdmitMessages to another company's campaign is
//     NotFound.
//   - Template names are compared exactly (case-sensitive); a deleted or
//     renamed template's name is free again. Deleting a template keeps the
//     campaigns made from it.
package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/idempotency"
	"github.com/heraldhq/herald/inbound"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/routing"
	"github.com/heraldhq/herald/survey"
	"github.com/heraldhq/herald/webhook"
)

// Store is everything an adapter implements: the storage ports of the
// domain packages.
type Store interface {
	accounts.Store
	campaign.Store
	delivery.Store
	survey.Store
	delivery.EventStore
	delivery.OnceUpdater
	webhook.Store
	webhook.Outbox
	webhook.Purger
	inbound.Store
	optout.Store
	idempotency.Store
	routing.Store
	delivery.RateSource
	accounts.ChatContacts
	accounts.CallbackReplays
	// CheckCounters recomputes every campaign's counters and each
	// company's pending count from the message rows and returns where the
	// stored ones differ (messaging.CounterDrift). Every case that moves
	// messages ends by finding none.
	CheckCounters(ctx context.Context) ([]messaging.Drift, error)
}

// testCase is one conformance case.
type testCase struct {
	name string
	run  func(f *fixture)
}

// cases lists every case of the suite, in the order Run runs them.
func cases() []testCase {
	return []testCase{
		{"Companies", testCompanies},
		{"APIKeys", testAPIKeys},
		{"APIKeyRotation", testAPIKeyRotation},
		{"SMSSenders", testSMSSenders},
		{"ChatServices", testChatServices},
		{"ChatServiceProviders", testChatServiceProviders},
		{"ChatContacts", testChatContacts},
		{"CallbackReplays", testCallbackReplays},
		{"ApplyUpdatesOnce", testApplyUpdatesOnce},
		{"TemplateCRUD", testTemplateCRUD},
		{"TemplateTenancy", testTemplateTenancy},
		{"TemplateNames", testTemplateNames},
		{"TemplatePagination", testTemplatePagination},
		{"TemplateDeleteKeepsCampaigns", testTemplateDeleteKeepsCampaigns},
		{"CampaignRoundTrip", testCampaignRoundTrip},
		{"CampaignList", testCampaignList},
		{"TransitionCampaign", testTransitionCampaign},
		{"TransitionCampaignConcurrent", testTransitionCampaignConcurrent},
		{"QueuingCampaigns", testQueuingCampaigns},
		{"MessageRoundTrip", testMessageRoundTrip},
		{"InsertMessagesBatch", testInsertMessagesBatch},
		{"InsertMessagesAllOrNothing", testInsertMessagesAllOrNothing},
		{"ListMessagesPagination", testListMessagesPagination},
		{"ListMessagesFilters", testListMessagesFilters},
		{"CampaignMessagesAfter", testCampaignMessagesAfter},
		{"CreateCampaignCapacity", testCreateCampaignCapacity},
		{"AdmitMessagesCapacity", testAdmitMessagesCapacity},
		{"AdmissionConcurrent", testAdmissionConcurrent},
		{"PendingLifecycle", testPendingLifecycle},
		{"ClaimDue", testClaimDue},
		{"ClaimDueConcurrent", testClaimDueConcurrent},
		{"ClaimPriorityAndQuotas", testClaimPriorityAndQuotas},
		{"ClaimDirectFirst", testClaimDirectFirst},
		{"HaltedCampaigns", testHaltedCampaigns},
		{"ClaimCampaignQuotas", testClaimCampaignQuotas},
		{"CompanyRates", testCompanyRates},
		{"CompanyNames", testCompanyNames},
		{"ApplyUpdatesRules", testApplyUpdatesRules},
		{"ApplyUpdatesModel", testApplyUpdatesModel},
		{"ApplyUpdatesConcurrent", testApplyUpdatesConcurrent},
		{"ApplyUpdatesChannel", testApplyUpdatesChannel},
		{"ApplyUpdatesCompany", testApplyUpdatesCompany},
		{"MessageByID", testMessageByID},
		{"RecoverExpired", testRecoverExpired},
		{"RecoverClaims", testRecoverClaims},
		{"RecoverUnknownClaims", testRecoverUnknownClaims},
		{"CompleteDrained", testCompleteDrained},
		{"CompleteAfterExpiry", testCompleteAfterExpiry},
		{"CompleteAfterPausedExpiry", testCompleteAfterPausedExpiry},
		{"CompleteAfterCancel", testCompleteAfterCancel},
		{"CompleteAfterReceiptTimeout", testCompleteAfterReceiptTimeout},
		{"CompleteAfterOptOut", testCompleteAfterOptOut},
		{"CompleteAfterRecovery", testCompleteAfterRecovery},
		{"RecoverCancelled", testRecoverCancelled},
		{"RetryAfterCancel", testRetryAfterCancel},
		{"RetryRacesCancel", testRetryRacesCancel},
		{"CampaignControl", testCampaignControl},
		{"CampaignSchedule", testCampaignSchedule},
		{"FallbackAfterCancel", testFallbackAfterCancel},
		{"ExpireMessages", testExpireMessages},
		{"LateFallback", testLateFallback},
		{"Backlog", testBacklog},
		{"ReceiptsAfterSent", testReceiptsAfterSent},
		{"ReceiptsBeforeSent", testReceiptsBeforeSent},
		{"ReceiptsLongMessages", testReceiptsLongMessages},
		{"ReceiptsPartIDReused", testReceiptsPartIDReused},
		{"ReceiptsConcurrent", testReceiptsConcurrent},
		{"ChatSeqs", testChatSeqs},
		{"PurgeReceipts", testPurgeReceipts},
		{"ApplyUpdatesText", testApplyUpdatesText},
		{"ApplyBatch", testApplyBatch},
		{"ApplyBatchDeliveredAfter", testApplyBatchDeliveredAfter},
		{"ExpireReceipts", testExpireReceipts},
		{"RecordResult", testRecordResult},
		{"RecordResults", testRecordResults},
		{"ListResults", testListResults},
		{"CountByOption", testCountByOption},
		{"SurveyMessageTo", testSurveyMessageTo},
		{"PurgeFinished", testPurgeFinished},
		{"Webhooks", testWebhooks},
		{"MessageStatusEvents", testMessageStatusEvents},
		{"MessageStatusEventsAsMoved", testMessageStatusEventsAsMoved},
		{"WebhookOutbox", testWebhookOutbox},
		{"PurgeWebhookEvents", testPurgeWebhookEvents},
		{"WebhookDeliveryLog", testWebhookDeliveryLog},
		{"WebhookBatchedDeliveries", testWebhookBatchedDeliveries},
		{"CampaignStatusEvents", testCampaignStatusEvents},
		{"SurveyAnsweredEvents", testSurveyAnsweredEvents},
		{"Inbound", testInbound},
		{"InboundResent", testInboundResent},
		{"InboundConcurrent", testInboundConcurrent},
		{"OptOuts", testOptOuts},
		{"OptOutKeywords", testOptOutKeywords},
		{"OptOutFailsPending", testOptOutFailsPending},
		{"CapacityUse", testCapacityUse},
		{"CountWaiting", testCountWaiting},
		{"SummarizeMessages", testSummarizeMessages},
		{"Routing", testRouting},
		{"MessageRoute", testMessageRoute},
		{"ShareConnectors", testShareConnectors},
		{"IdempotencyKeys", testIdempotencyKeys},
		{"IdempotencyKeysConcurrent", testIdempotencyKeysConcurrent},
	}
}

// Run runs the conformance suite: every case is a subtest on a fresh empty
// store made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			require.NotNil(t, s, "newStore returned nil")
			c.run(newFixture(t, s))
		})
	}
}

// base is the suite's clock: every time in the test data is base plus an
// offset.
var base = time.Date(2026, time.March, 2, 9, 30, 0, 0, time.UTC)

// at returns base plus sec seconds.
func at(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }

// unlimited is a maxPending no case reaches.
const unlimited = 1 << 30

// fixture holds what a case works with.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	s     Store
	ids   *messaging.IDGenerator
	phone int
}

func newFixture(t *testing.T, s Store) *fixture {
	return &fixture{t: t, ctx: t.Context(), s: s, ids: messaging.NewIDGenerator(func() time.Time { return base })}
}

// id returns a fresh UUIDv7.
func (f *fixture) id() messaging.ID { return f.ids.New() }

// nextPhone returns a phone number not used before in the case.
func (f *fixture) nextPhone() string {
	f.phone++
	return fmt.Sprintf("4479%08d", f.phone)
}

// company creates a company.
func (f *fixture) company(name string) messaging.Company {
	f.t.Helper()
	c := messaging.Company{ID: f.id(), Name: name, Active: true, CreatedAt: base}
	require.NoError(f.t, f.s.CreateCompany(f.ctx, &c))
	return c
}

// newCampaign returns an unsaved campaign of the company.
func (f *fixture) newCampaign(companyID messaging.ID, ch messaging.Channel, mode messaging.SendingMode, status messaging.CampaignStatus, planned int, created time.Time) messaging.Campaign {
	c := messaging.Campaign{
		ID: f.id(), CompanyID: companyID, Name: "Campaign " + created.Format(time.TimeOnly), Channel: ch, Mode: mode,
		Status: status, MessageType: messaging.TypeSimpleText, Planned: planned, CreatedAt: created, UpdatedAt: created,
	}
	if status == messaging.CampaignInProgress {
		c.StartedAt = &c.CreatedAt
	}
	return c
}

// createCampaign stores c without a capacity limit.
func (f *fixture) createCampaign(c messaging.Campaign) messaging.Campaign {
	f.t.Helper()
	require.NoError(f.t, f.s.CreateCampaign(f.ctx, &c, unlimited))
	return c
}

// transactional creates an InProgress transactional campaign.
func (f *fixture) transactional(companyID messaging.ID, ch messaging.Channel) messaging.Campaign {
	f.t.Helper()
	return f.createCampaign(f.newCampaign(companyID, ch, messaging.ModeTransactional, messaging.CampaignInProgress, 0, base))
}

// newMessage returns an unsaved Pending message of campaign c, created
// and due at created.
func (f *fixture) newMessage(c messaging.Campaign, phone string, created time.Time) *messaging.Message {
	return &messaging.Message{
		ID: f.id(), CompanyID: c.CompanyID, CampaignID: c.ID, Channel: c.Channel, Phone: phone,
		Content: "Hello " + phone, Status: messaging.StatusPending, DueAt: created, CreatedAt: created, UpdatedAt: created,
	}
}

// newMessages returns n unsaved Pending messages of c to fresh numbers.
func (f *fixture) newMessages(c messaging.Campaign, n int, created time.Time) []*messaging.Message {
	out := make([]*messaging.Message, n)
	for i := range out {
		out[i] = f.newMessage(c, f.nextPhone(), created)
	}
	return out
}

// fallbackFor returns an unsaved Pending fallback SMS for chat message m.
func (f *fixture) fallbackFor(m *messaging.Message, created time.Time) *messaging.Message {
	return &messaging.Message{
		ID: f.id(), CompanyID: m.CompanyID, CampaignID: m.CampaignID, Channel: messaging.ChannelSMS, Phone: m.Phone,
		ExternalUserID: m.ExternalUserID, Content: "SMS: " + m.Content, FallbackFor: m.ID,
		Status: messaging.StatusPending, DueAt: created, CreatedAt: created, UpdatedAt: created,
	}
}

// admit writes msgs outside any reservation, without a capacity limit.
func (f *fixture) admit(companyID messaging.ID, msgs ...*messaging.Message) {
	f.t.Helper()
	require.NoError(f.t, f.s.AdmitMessages(f.ctx, companyID, msgs, unlimited))
}

// bulk creates a bulk campaign with n messages created at created and
// moves it to status (Queuing, Ready or InProgress).
func (f *fixture) bulk(companyID messaging.ID, ch messaging.Channel, n int, created time.Time, status messaging.CampaignStatus) (messaging.Campaign, []*messaging.Message) {
	f.t.Helper()
	c := f.createCampaign(f.newCampaign(companyID, ch, messaging.ModeBulk, messaging.CampaignQueuing, n, created))
	msgs := f.newMessages(c, n, created)
	if n > 0 {
		require.NoError(f.t, f.s.InsertMessages(f.ctx, msgs))
	}
	if status == messaging.CampaignReady || status == messaging.CampaignInProgress {
		f.transition(c, messaging.CampaignQueuing, messaging.CampaignReady, created)
	}
	if status == messaging.CampaignInProgress {
		f.transition(c, messaging.CampaignReady, messaging.CampaignInProgress, created)
	}
	return f.getCampaign(c.CompanyID, c.ID), msgs
}

// transition moves c from one status to another.
func (f *fixture) transition(c messaging.Campaign, from, to messaging.CampaignStatus, when time.Time) {
	f.t.Helper()
	require.NoError(f.t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.ID, From: []messaging.CampaignStatus{from}, To: to, At: when}))
}

func (f *fixture) getCampaign(companyID, id messaging.ID) messaging.Campaign {
	f.t.Helper()
	c, err := f.s.GetCampaign(f.ctx, companyID, id)
	require.NoError(f.t, err)
	return c
}

func (f *fixture) getMessage(companyID, id messaging.ID) messaging.Message {
	f.t.Helper()
	m, err := f.s.GetMessage(f.ctx, companyID, id)
	require.NoError(f.t, err)
	return m
}

func (f *fixture) pending(companyID messaging.ID) int {
	f.t.Helper()
	n, err := f.s.PendingCount(f.ctx, companyID)
	require.NoError(f.t, err)
	return n
}

// apply applies updates and returns what was applied.
func (f *fixture) apply(updates ...delivery.StatusUpdate) []bool {
	f.t.Helper()
	ok, err := f.s.ApplyUpdates(f.ctx, updates)
	require.NoError(f.t, err)
	require.Len(f.t, ok, len(updates))
	return ok
}

// claim claims due messages of ch for no owner.
func (f *fixture) claim(ch messaging.Channel, now, lease time.Time, limit int) []messaging.Message {
	f.t.Helper()
	return f.claimFor("", ch, now, lease, limit)
}

// claimFor claims due messages of ch for owner.
func (f *fixture) claimFor(owner string, ch messaging.Channel, now, lease time.Time, limit int) []messaging.Message {
	f.t.Helper()
	ms, err := f.s.ClaimDue(f.ctx, delivery.Claim{Channel: ch, Owner: owner, Now: now, LeaseUntil: lease, Limit: limit})
	require.NoError(f.t, err)
	return ms
}

// requireCounts checks the counters of campaign id.
func (f *fixture) requireCounts(companyID, id messaging.ID, counts, fallback messaging.StatusCounts) {
	f.t.Helper()
	c := f.getCampaign(companyID, id)
	require.Equal(f.t, counts, c.Counts, "campaign counts")
	require.Equal(f.t, fallback, c.FallbackCounts, "campaign fallback counts")
}

// requireReconciled checks that ReconcilePending finds nothing to fix.
func (f *fixture) requireReconciled() {
	f.t.Helper()
	drift, err := f.s.CheckCounters(f.ctx)
	require.NoError(f.t, err)
	require.Empty(f.t, drift, "CheckCounters found counters that differ from the rows")
	n, err := f.s.ReconcilePending(f.ctx)
	require.NoError(f.t, err)
	require.Zero(f.t, n, "ReconcilePending found companies with a wrong pending count")
}

// hash returns the SHA-256 of s, as API key hashes are stored.
func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// requireCode fails unless err is a *messaging.Error with code.
func requireCode(t testing.TB, err error, code messaging.Code, msgAndArgs ...any) *messaging.Error {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	var e *messaging.Error
	require.True(t, errors.As(err, &e), "error %v is not a *messaging.Error", err)
	require.Equal(t, code, e.Code, "error %v", err)
	return e
}

// requireNotFound fails unless err is NotFound.
func requireNotFound(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	requireCode(t, err, messaging.NotFound, msgAndArgs...)
}

// requireCapacity fails unless err is RateLimited with these capacity
// figures.
func requireCapacity(t testing.TB, err error, current, requested, maxAllowed int) {
	t.Helper()
	e := requireCode(t, err, messaging.RateLimited)
	require.NotNil(t, e.Capacity, "RateLimited without Capacity")
	got := *e.Capacity
	got.RetryAfterSeconds = 0
	require.Equal(t, messaging.Capacity{
		CurrentPending: current, RequestedCount: requested, MaxAllowed: maxAllowed,
		AvailableCapacity: max(0, maxAllowed-current),
	}, got)
}

// timeTolerance is how far a stored time may be from the one written.
const timeTolerance = time.Microsecond

var (
	timeType    = reflect.TypeFor[time.Time]()
	timePtrType = reflect.TypeFor[*time.Time]()
)

// requireSame fails unless want and got are equal, their time fields
// (time.Time and *time.Time, in nested structs too) compared as instants
// within timeTolerance.
func requireSame[T any](t testing.TB, want, got T, msgAndArgs ...any) {
	t.Helper()
	w, g := reflect.ValueOf(&want).Elem(), reflect.ValueOf(&got).Elem()
	clearTimes(t, w.Type().Name(), w, g, msgAndArgs)
	require.Equal(t, want, got, msgAndArgs...)
}

// requireSameList is requireSame element by element.
func requireSameList[T any](t testing.TB, want, got []T, msgAndArgs ...any) {
	t.Helper()
	require.Len(t, got, len(want), msgAndArgs...)
	for i := range want {
		requireSame(t, want[i], got[i], append([]any{"item %d: %v", i}, msgAndArgs...)...)
	}
}

// clearTimes compares the time fields of w and g and zeroes them in both,
// so that require.Equal compares the rest. w and g are addressable copies.
func clearTimes(t testing.TB, path string, w, g reflect.Value, msgAndArgs []any) {
	t.Helper()
	switch w.Type() {
	case timeType:
		requireTime(t, path, w.Interface().(time.Time), g.Interface().(time.Time), msgAndArgs)
		w.Set(reflect.Zero(timeType))
		g.Set(reflect.Zero(timeType))
		return
	case timePtrType:
		wp, gp := w.Interface().(*time.Time), g.Interface().(*time.Time)
		require.Equal(t, wp == nil, gp == nil, append([]any{"%s: nil-ness differs (want %v, got %v)", path, wp, gp}, msgAndArgs...)...)
		if wp != nil {
			requireTime(t, path, *wp, *gp, msgAndArgs)
		}
		w.Set(reflect.Zero(timePtrType))
		g.Set(reflect.Zero(timePtrType))
		return
	}
	if w.Kind() != reflect.Struct {
		return
	}
	for i := range w.NumField() {
		if sf := w.Type().Field(i); sf.IsExported() {
			clearTimes(t, path+"."+sf.Name, w.Field(i), g.Field(i), msgAndArgs)
		}
	}
}

func requireTime(t testing.TB, path string, want, got time.Time, msgAndArgs []any) {
	t.Helper()
	if want.IsZero() {
		require.True(t, got.IsZero(), append([]any{"%s: want the zero time, got %v", path, got}, msgAndArgs...)...)
		return
	}
	d := want.Sub(got)
	require.True(t, d <= timeTolerance && d >= -timeTolerance,
		append([]any{"%s: want %v, got %v", path, want.UTC(), got.UTC()}, msgAndArgs...)...)
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }
