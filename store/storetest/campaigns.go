package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// testCampaignRoundTrip: every field of a campaign round-trips; Counts
// given to CreateCampaign are ignored; another company's campaign is
// NotFound.
func testCampaignRoundTrip(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	started, completed := base.Add(7*time.Second+654321*time.Microsecond), at(3600)
	full := messaging.Campaign{
		ID: f.id(), CompanyID: a.ID, Name: "Spring survey ✿", Description: "Ask «everyone»", Channel: messaging.ChannelChat,
		Mode: messaging.ModeBulk, Status: messaging.CampaignQueuing, TemplateID: f.id(), TemplateName: "survey",
		MessageType: messaging.TypeSurvey, Config: fullConfig(), SMSSenderID: 3, ChatServiceID: 4, FallbackSender: 5,
		Planned: 7, Counts: messaging.StatusCounts{Pending: 3, Sent: 9}, FallbackCounts: messaging.StatusCounts{Failed: 2},
		FailureReason: "not yet", CreatedAt: base.Add(123456 * time.Microsecond), UpdatedAt: at(5),
		StartedAt: &started, CompletedAt: &completed, ValidFor: 90 * time.Minute,
		SendWindow: &messaging.SendWindow{From: 540, To: 1200, TimeZone: "Europe/Paris"},
	}
	require.NoError(t, f.s.CreateCampaign(f.ctx, &full, unlimited))
	want := full
	want.Config = fullConfig()
	want.Counts, want.FallbackCounts = messaging.StatusCounts{}, messaging.StatusCounts{}
	requireSame(t, want, f.getCampaign(a.ID, full.ID))

	// Callers never share memory with the store.
	full.Config.Options[0].OptionText = "changed after create"
	got := f.getCampaign(a.ID, full.ID)
	require.Equal(t, "Yes", got.Config.Options[0].OptionText)
	got.Config.Items[1].Title = "changed after get"
	*got.StartedAt = at(1)
	got = f.getCampaign(a.ID, full.ID)
	requireSame(t, want, got)

	minimal := messaging.Campaign{
		ID: f.id(), CompanyID: a.ID, Name: "Direct SMS", Channel: messaging.ChannelSMS, Mode: messaging.ModeTransactional,
		Status: messaging.CampaignInProgress, Hidden: true, MessageType: messaging.TypeSimpleText, CreatedAt: at(10), UpdatedAt: at(10),
	}
	require.NoError(t, f.s.CreateCampaign(f.ctx, &minimal, unlimited))
	requireSame(t, minimal, f.getCampaign(a.ID, minimal.ID))

	_, err := f.s.GetCampaign(f.ctx, b.ID, full.ID)
	requireNotFound(t, err, "another company's campaign")
	_, err = f.s.GetCampaign(f.ctx, a.ID, f.id())
	requireNotFound(t, err)
}

// testCampaignList: pages of visible campaigns, newest first, filtered by
// mode; hidden campaigns are never listed but can be read.
func testCampaignList(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	const n = 45
	// Creation times unrelated to the order of the ids and of the writes.
	rng := rand.New(rand.NewPCG(3, 4))
	created := rng.Perm(n)
	want := make([]messaging.Campaign, n) // newest first
	for i := range n {
		mode := messaging.ModeTransactional
		status := messaging.CampaignInProgress
		if i%3 == 0 {
			mode, status = messaging.ModeBulk, messaging.CampaignReady
		}
		c := f.newCampaign(a.ID, messaging.ChannelSMS, mode, status, 0, at(created[i]))
		c.Name = fmt.Sprintf("campaign-%02d", i)
		want[n-1-created[i]] = f.createCampaign(c)
	}
	var hidden []messaging.Campaign
	for i := range 5 { // the newest of all, but hidden
		c := f.newCampaign(a.ID, messaging.ChannelChat, messaging.ModeBulk, messaging.CampaignInProgress, 0, at(1000+i))
		c.Hidden = true
		hidden = append(hidden, f.createCampaign(c))
	}
	f.createCampaign(f.newCampaign(b.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignReady, 0, at(2000)))
	f.createCampaign(f.newCampaign(b.ID, messaging.ChannelSMS, messaging.ModeTransactional, messaging.CampaignInProgress, 0, at(2001)))

	var all []messaging.Campaign
	for page, size := range []int{20, 20, 5, 0} {
		got, total, err := f.s.ListCampaigns(f.ctx, a.ID, messaging.CampaignFilter{PageRequest: messaging.PageRequest{Page: page + 1, PageSize: 20}})
		require.NoError(t, err)
		require.Equal(t, n, total, "total on page %d", page+1)
		require.Len(t, got, size, "page %d", page+1)
		all = append(all, got...)
	}
	requireSameList(t, want, all)

	for _, mode := range []messaging.SendingMode{messaging.ModeBulk, messaging.ModeTransactional} {
		var wantMode []messaging.Campaign
		for _, c := range want {
			if c.Mode == mode {
				wantMode = append(wantMode, c)
			}
		}
		got, total, err := f.s.ListCampaigns(f.ctx, a.ID, messaging.CampaignFilter{Mode: mode, PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
		require.NoError(t, err)
		require.Equal(t, len(wantMode), total, "mode %s", mode)
		requireSameList(t, wantMode, got, "mode %s", mode)

		got, total, err = f.s.ListCampaigns(f.ctx, a.ID, messaging.CampaignFilter{Mode: mode, PageRequest: messaging.PageRequest{Page: 2, PageSize: 4}})
		require.NoError(t, err)
		require.Equal(t, len(wantMode), total, "mode %s", mode)
		requireSameList(t, wantMode[4:8], got, "mode %s, page 2", mode)
	}

	for _, st := range messaging.CampaignStatuses() {
		var wantStatus []messaging.Campaign
		for _, c := range want {
			if c.Status == st {
				wantStatus = append(wantStatus, c)
			}
		}
		got, total, err := f.s.ListCampaigns(f.ctx, a.ID, messaging.CampaignFilter{Status: st, PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
		require.NoError(t, err)
		require.Equal(t, len(wantStatus), total, "status %s", st)
		requireSameList(t, wantStatus, got, "status %s", st)
	}

	for _, h := range hidden {
		requireSame(t, h, f.getCampaign(a.ID, h.ID), "a hidden campaign can be read by its id")
	}

	got, total, err := f.s.ListCampaigns(f.ctx, b.ID, messaging.CampaignFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, got, 2)
	require.Equal(t, messaging.ModeTransactional, got[0].Mode, "newest first")
}

// testTransitionCampaign: compare-and-set moves with their timestamps and
// failure reason; Conflict outside from; NotFound for unknown and other
// companies' campaigns.
func testTransitionCampaign(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	c := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 0, at(0)))
	from := func(s ...messaging.CampaignStatus) []messaging.CampaignStatus { return s }

	err := f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID, From: from(messaging.CampaignReady), To: messaging.CampaignInProgress, At: at(1)})
	requireCode(t, err, messaging.Conflict)
	require.Equal(t, messaging.CampaignQueuing, f.getCampaign(a.ID, c.ID).Status)

	requireNotFound(t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: b.ID, CampaignID: c.ID, From: from(messaging.CampaignQueuing), To: messaging.CampaignReady, At: at(1)}))
	requireNotFound(t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: f.id(), From: from(messaging.CampaignQueuing), To: messaging.CampaignReady, At: at(1)}))
	require.Equal(t, messaging.CampaignQueuing, f.getCampaign(a.ID, c.ID).Status, "another company cannot move it")

	require.NoError(t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID, From: from(messaging.CampaignDraft, messaging.CampaignQueuing), To: messaging.CampaignReady, At: at(2)}))
	got := f.getCampaign(a.ID, c.ID)
	require.Equal(t, messaging.CampaignReady, got.Status)
	require.Nil(t, got.StartedAt)
	require.Nil(t, got.CompletedAt)

	require.NoError(t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID, From: from(messaging.CampaignReady), To: messaging.CampaignInProgress, At: at(3)}))
	got = f.getCampaign(a.ID, c.ID)
	require.Equal(t, messaging.CampaignInProgress, got.Status)
	require.NotNil(t, got.StartedAt)
	requireTime(t, "StartedAt", at(3), *got.StartedAt, nil)
	require.Nil(t, got.CompletedAt)

	// The same move again is a Conflict: it is a compare-and-set.
	err = f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID, From: from(messaging.CampaignReady), To: messaging.CampaignInProgress, At: at(4)})
	requireCode(t, err, messaging.Conflict)
	requireTime(t, "StartedAt", at(3), *f.getCampaign(a.ID, c.ID).StartedAt, nil)

	require.NoError(t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID, From: from(messaging.CampaignInProgress), To: messaging.CampaignCompleted, At: at(5)}))
	got = f.getCampaign(a.ID, c.ID)
	require.Equal(t, messaging.CampaignCompleted, got.Status)
	require.NotNil(t, got.CompletedAt)
	requireTime(t, "CompletedAt", at(5), *got.CompletedAt, nil)
	requireTime(t, "StartedAt", at(3), *got.StartedAt, nil)
	require.Empty(t, got.FailureReason)

	failed := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelChat, messaging.ModeBulk, messaging.CampaignQueuing, 0, at(6)))
	require.NoError(t, f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: failed.ID, From: from(messaging.CampaignQueuing), To: messaging.CampaignFailed, At: at(7), Reason: "Preparation failed"}))
	got = f.getCampaign(a.ID, failed.ID)
	require.Equal(t, messaging.CampaignFailed, got.Status)
	require.Equal(t, "Preparation failed", got.FailureReason)
	require.Nil(t, got.StartedAt)
	require.Nil(t, got.CompletedAt)
}

// testTransitionCampaignConcurrent: of concurrent identical moves exactly
// one wins.
func testTransitionCampaignConcurrent(f *fixture) {
	t := f.t
	a := f.company("A")
	c, _ := f.bulk(a.ID, messaging.ChannelSMS, 3, at(0), messaging.CampaignReady)
	const workers = 8
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			errs[i] = f.s.TransitionCampaign(f.ctx, messaging.CampaignTransition{CompanyID: a.ID, CampaignID: c.ID, From: []messaging.CampaignStatus{messaging.CampaignReady}, To: messaging.CampaignInProgress, At: at(10 + i)})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		requireCode(t, err, messaging.Conflict)
	}
	require.Equal(t, 1, won, "exactly one concurrent transition wins")
	got := f.getCampaign(a.ID, c.ID)
	require.Equal(t, messaging.CampaignInProgress, got.Status)
	require.Equal(t, 3, got.Counts.Pending)
	require.Equal(t, 3, f.pending(a.ID))
}

// testQueuingCampaigns: stale preparations are found across companies,
// oldest first, only while Queuing and created before the cut-off.
func testQueuingCampaigns(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	old := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 10, at(0)))
	otherCompany := f.createCampaign(f.newCampaign(b.ID, messaging.ChannelChat, messaging.ModeBulk, messaging.CampaignQueuing, 5, at(1)))
	ready := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 0, at(2)))
	f.transition(ready, messaging.CampaignQueuing, messaging.CampaignReady, at(3))
	fresh := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 0, at(10)))

	ids := func(cs []messaging.Campaign) []messaging.ID {
		out := make([]messaging.ID, len(cs))
		for i, c := range cs {
			out[i] = c.ID
		}
		return out
	}
	got, err := f.s.QueuingCampaigns(f.ctx, at(10), 100)
	require.NoError(t, err)
	require.Equal(t, []messaging.ID{old.ID, otherCompany.ID}, ids(got), "created strictly before the cut-off, oldest first")
	require.Equal(t, 10, got[0].Planned)
	require.Equal(t, a.ID, got[0].CompanyID)

	got, err = f.s.QueuingCampaigns(f.ctx, at(11), 2)
	require.NoError(t, err)
	require.Equal(t, []messaging.ID{old.ID, otherCompany.ID}, ids(got), "limit")

	got, err = f.s.QueuingCampaigns(f.ctx, at(11), 100)
	require.NoError(t, err)
	require.Equal(t, []messaging.ID{old.ID, otherCompany.ID, fresh.ID}, ids(got))
}
