package campaign_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

// gatedStore holds the first AdmitMessages until release is closed and
// records the size of every AdmitMessages call.
type gatedStore struct {
	*memstore.Store
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	sizes   []int
}

func (g *gatedStore) AdmitMessages(ctx context.Context, companyID messaging.ID, msgs []*messaging.Message, maxPending int) error {
	g.mu.Lock()
	g.sizes = append(g.sizes, len(msgs))
	g.mu.Unlock()
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
	return g.Store.AdmitMessages(ctx, companyID, msgs, maxPending)
}

func (g *gatedStore) callSizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.sizes...)
}

// testWait bounds how long a test waits for callers to queue.
const (
	testWait  = 10 * time.Second
	pollEvery = time.Millisecond
)

type admitFixture struct {
	svc   *campaign.Service
	acc   *accounts.Service
	store *gatedStore
}

func newAdmitFixture(t *testing.T, maxPending int) *admitFixture {
	st := &gatedStore{Store: memstore.New(), entered: make(chan struct{}), release: make(chan struct{})}
	svc := must(campaign.New(campaign.Config{Store: st, Limits: campaign.Limits{MaxPending: maxPending}}))
	t.Cleanup(svc.Close)
	acc := must(accounts.New(accounts.Config{Store: st}))
	return &admitFixture{svc: svc, acc: acc, store: st}
}

// campaign provisions a company with an SMS transactional campaign.
func (f *admitFixture) campaign(t *testing.T, name string) (companyID, campaignID messaging.ID) {
	ctx := t.Context()
	c, err := f.acc.CreateCompany(ctx, name)
	require.NoError(t, err)
	require.NoError(t, f.acc.SetCompanyActive(ctx, c.ID, true))
	sender, err := f.acc.RegisterSMSSender(ctx, c.ID, "ACME")
	require.NoError(t, err)
	require.NoError(t, f.acc.ApproveSMSSender(ctx, sender.ID))
	tpl, err := f.svc.CreateTemplate(ctx, c.ID, messaging.Template{
		Channel: messaging.ChannelSMS, Name: "otp", SMSSenderID: sender.ID, Content: "Code {{code}}",
	})
	require.NoError(t, err)
	camp, err := f.svc.CreateTransactional(ctx, c.ID, messaging.ChannelSMS, campaign.NewCampaign{Name: "otp", TemplateID: tpl.ID})
	require.NoError(t, err)
	return c.ID, camp.ID
}

type addResult struct {
	msg messaging.Message
	err error
}

// addWhileBlocked starts one AddMessage that the store holds, then n more
// for the given campaigns (round robin), waits until those n are queued
// behind it, releases the store and returns every outcome, the held one
// first.
func (f *admitFixture) addWhileBlocked(t *testing.T, ctxs func(i int) context.Context, queued func(), n int, targets ...[2]messaging.ID) []addResult {
	out := make([]addResult, n+1)
	var wg sync.WaitGroup
	add := func(i int, ctx context.Context, target [2]messaging.ID) {
		defer wg.Done()
		m, err := f.svc.AddMessage(ctx, target[0], messaging.ChannelSMS, target[1], campaign.Recipient{
			Phone: fmt.Sprintf("+4477009%05d", i), Placeholders: campaign.PlaceholdersOf(map[string]string{"code": fmt.Sprint(i)}),
		})
		out[i] = addResult{m, err}
	}
	wg.Add(1)
	go add(0, t.Context(), targets[0])
	<-f.store.entered
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go add(i, ctxs(i), targets[i%len(targets)])
	}
	require.Eventually(t, func() bool {
		return campaign.QueuedAdmissions(f.svc) == n
	}, testWait, pollEvery)
	queued()
	close(f.store.release)
	wg.Wait()
	return out
}

func TestAdmitGroupsConcurrentMessages(t *testing.T) {
	f := newAdmitFixture(t, 1000)
	company, camp := f.campaign(t, "Acme")
	res := f.addWhileBlocked(t, func(int) context.Context { return t.Context() }, func() {}, 20, [2]messaging.ID{company, camp})

	for i, r := range res {
		require.NoError(t, r.err, "message %d", i)
	}
	// The held message alone, then the twenty queued behind it together.
	require.Equal(t, []int{1, 20}, f.store.callSizes())
	for _, r := range res {
		got, err := f.store.GetMessage(t.Context(), company, r.msg.ID)
		require.NoError(t, err)
		require.Equal(t, r.msg.Phone, got.Phone)
	}
	c, err := f.svc.GetCampaign(t.Context(), company, camp)
	require.NoError(t, err)
	require.Equal(t, 21, c.Counts.Pending)
}

func TestAdmitGroupSplitsAtCapacity(t *testing.T) {
	f := newAdmitFixture(t, 10)
	company, camp := f.campaign(t, "Acme")
	res := f.addWhileBlocked(t, func(int) context.Context { return t.Context() }, func() {}, 20, [2]messaging.ID{company, camp})

	admitted, refused := 0, 0
	for i, r := range res {
		switch {
		case r.err == nil:
			admitted++
		case messaging.IsCode(r.err, messaging.RateLimited):
			refused++
		default:
			t.Fatalf("message %d: unexpected error %v", i, r.err)
		}
	}
	// The group of twenty does not fit after the first message; retried
	// one by one, nine more fit.
	require.Equal(t, 10, admitted)
	require.Equal(t, 11, refused)
	c, err := f.svc.GetCampaign(t.Context(), company, camp)
	require.NoError(t, err)
	require.Equal(t, 10, c.Counts.Pending)
}

func TestAdmitGroupPerCompany(t *testing.T) {
	f := newAdmitFixture(t, 1000)
	a, campA := f.campaign(t, "Acme")
	b, campB := f.campaign(t, "Globex")
	res := f.addWhileBlocked(t, func(int) context.Context { return t.Context() }, func() {}, 10, [2]messaging.ID{a, campA}, [2]messaging.ID{b, campB})
	for i, r := range res {
		require.NoError(t, r.err, "message %d", i)
	}
	require.Equal(t, []int{1, 5, 5}, f.store.callSizes())
	ca, err := f.svc.GetCampaign(t.Context(), a, campA)
	require.NoError(t, err)
	cb, err := f.svc.GetCampaign(t.Context(), b, campB)
	require.NoError(t, err)
	require.Equal(t, 6, ca.Counts.Pending)
	require.Equal(t, 5, cb.Counts.Pending)
}

func TestAdmitCallerCancelledWhileQueued(t *testing.T) {
	f := newAdmitFixture(t, 1000)
	company, camp := f.campaign(t, "Acme")
	cancelled, cancel := context.WithCancel(t.Context())
	defer cancel()
	res := f.addWhileBlocked(t, func(i int) context.Context {
		if i == 3 {
			return cancelled
		}
		return t.Context()
	}, cancel, 5, [2]messaging.ID{company, camp})
	// The queued message was written with the others; its caller is told
	// so rather than told it failed.
	for i, r := range res {
		require.NoError(t, r.err, "message %d", i)
	}
	got, err := f.store.GetMessage(t.Context(), company, res[3].msg.ID)
	require.NoError(t, err)
	require.Equal(t, messaging.StatusPending, got.Status)
}
