package storetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// surveyCampaign creates a transactional survey campaign with n messages.
func (f *fixture) surveyCampaign(companyID messaging.ID, n int) (messaging.Campaign, []*messaging.Message) {
	f.t.Helper()
	c := f.newCampaign(companyID, messaging.ChannelChat, messaging.ModeTransactional, messaging.CampaignInProgress, 0, base)
	c.MessageType, c.Config = messaging.TypeSurvey, &messaging.ChatConfig{Options: []messaging.SurveyOption{
		{OptionText: "Yes", OptionValue: "y"}, {OptionText: "No", OptionValue: "n"}, {OptionText: "Maybe", OptionValue: "m"},
	}}
	c = f.createCampaign(c)
	msgs := f.newMessages(c, n, at(0))
	if n > 0 {
		f.admit(companyID, msgs...)
	}
	return c, msgs
}

// result returns an unsaved answer to m.
func (f *fixture) result(m *messaging.Message, option int, responded time.Time) messaging.SurveyResult {
	return messaging.SurveyResult{
		ID: f.id(), CompanyID: m.CompanyID, CampaignID: m.CampaignID, MessageID: m.ID, Phone: m.Phone,
		ExternalUserID: m.ExternalUserID, OptionIndex: option, OptionText: fmt.Sprintf("option %d", option),
		TrackingData: "trk-" + m.Phone, RespondedAt: responded,
	}
}

// recordOne records one answer with RecordResults.
func (f *fixture) recordOne(r *messaging.SurveyResult) (bool, error) {
	stored, err := f.s.RecordResults(f.ctx, []*messaging.SurveyResult{r})
	if err != nil {
		return false, err
	}
	require.Len(f.t, stored, 1)
	return stored[0], nil
}

func (f *fixture) record(r messaging.SurveyResult) {
	f.t.Helper()
	stored, err := f.recordOne(&r)
	require.NoError(f.t, err)
	require.True(f.t, stored, "the first answer to a message is stored")
}

// testRecordResult: one answer at a time (RecordResults of one), the first answer to a message is stored, later ones
// are not and leave it unchanged.
func testRecordResult(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.surveyCampaign(a.ID, 2)
	msgs[0].ExternalUserID = "user-ü"

	first := f.result(msgs[0], 1, base.Add(123456*time.Microsecond))
	stored, err := f.recordOne(&first)
	require.NoError(t, err)
	require.True(t, stored)

	second := f.result(msgs[0], 0, at(5))
	second.OptionText, second.TrackingData = "changed my mind", "trk-2"
	stored, err = f.recordOne(&second)
	require.NoError(t, err)
	require.False(t, stored, "a second answer to the same message is not stored")

	bare := f.result(msgs[1], 2, at(6))
	bare.ExternalUserID, bare.TrackingData = "", ""
	f.record(bare)

	got, total, err := f.s.ListResults(f.ctx, a.ID, messaging.SurveyResultFilter{CampaignID: c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	requireSameList(t, []messaging.SurveyResult{first, bare}, got)

	counts, err := f.s.CountByOption(f.ctx, a.ID, c.ID)
	require.NoError(t, err)
	require.Equal(t, map[int]int{1: 1, 2: 1}, counts)
}

// testRecordResults: many answers in one call (RecordResults),
// each stored unless its message has one, from before the call or from
// earlier in it; a failed call stores none.
func testRecordResults(f *fixture) {
	t := f.t
	a := f.company("A")
	c, msgs := f.surveyCampaign(a.ID, 5)
	earlier := f.result(msgs[0], 0, at(1))
	f.record(earlier)

	answers := []messaging.SurveyResult{
		f.result(msgs[0], 2, at(2)), // msgs[0] has an answer
		f.result(msgs[1], 1, at(3)),
		f.result(msgs[1], 0, at(4)), // a second answer to msgs[1] in the same call
		f.result(msgs[2], 2, at(5)),
	}
	ptrs := make([]*messaging.SurveyResult, len(answers))
	for i := range answers {
		ptrs[i] = &answers[i]
	}
	stored, err := f.s.RecordResults(f.ctx, ptrs)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, true}, stored)
	got, total, err := f.s.ListResults(f.ctx, a.ID, messaging.SurveyResultFilter{CampaignID: c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	requireSameList(t, []messaging.SurveyResult{earlier, answers[1], answers[3]}, got)

	// All or nothing: an answer whose id is taken fails the call, and the
	// other answer of the call is not stored either.
	taken := f.result(msgs[4], 1, at(6))
	taken.ID = earlier.ID
	fresh := f.result(msgs[3], 1, at(6))
	_, err = f.s.RecordResults(f.ctx, []*messaging.SurveyResult{&fresh, &taken})
	require.Error(t, err)
	_, total, err = f.s.ListResults(f.ctx, a.ID, messaging.SurveyResultFilter{CampaignID: c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Equal(t, 3, total, "nothing of a failed call is stored")

	stored, err = f.s.RecordResults(f.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, stored)
}

// testListResults: pages of a campaign's results, oldest answer first
// (ties by id), and every filter; other campaigns and companies are left
// out.
func testListResults(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	const n = 45
	c, msgs := f.surveyCampaign(a.ID, n)
	const phone = "447900000777"
	var want []messaging.SurveyResult
	for i, m := range msgs {
		if i%5 == 0 {
			m.Phone = phone
		}
		m.ExternalUserID = fmt.Sprintf("u%d", i%4)
		want = append(want, f.result(m, i%3, at((i*7)%15))) // ties: 3 answers per second
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, i := range rng.Perm(n) {
		f.record(want[i])
	}
	slices.SortFunc(want, func(x, y messaging.SurveyResult) int {
		if c := x.RespondedAt.Compare(y.RespondedAt); c != 0 {
			return c
		}
		return bytes.Compare(x.ID[:], y.ID[:])
	})

	// Answers that must never show: another campaign, another company.
	c2, msgs2 := f.surveyCampaign(a.ID, 2)
	f.record(f.result(msgs2[0], 0, at(3)))
	cb, msgsB := f.surveyCampaign(b.ID, 1)
	msgsB[0].Phone = phone
	f.record(f.result(msgsB[0], 0, at(3)))

	var all []messaging.SurveyResult
	for page, size := range []int{20, 20, 5, 0} {
		got, total, err := f.s.ListResults(f.ctx, a.ID, messaging.SurveyResultFilter{CampaignID: c.ID, PageRequest: messaging.PageRequest{Page: page + 1, PageSize: 20}})
		require.NoError(t, err)
		require.Equal(t, n, total, "total on page %d", page+1)
		require.Len(t, got, size, "page %d", page+1)
		all = append(all, got...)
	}
	requireSameList(t, want, all)

	where := func(keep func(r messaging.SurveyResult) bool) []messaging.SurveyResult {
		var out []messaging.SurveyResult
		for _, r := range want {
			if keep(r) {
				out = append(out, r)
			}
		}
		return out
	}
	tests := []struct {
		name   string
		filter messaging.SurveyResultFilter
		want   []messaging.SurveyResult
	}{
		{"phone", messaging.SurveyResultFilter{Phone: phone}, where(func(r messaging.SurveyResult) bool { return r.Phone == phone })},
		{"external user", messaging.SurveyResultFilter{ExternalUserID: "u1"}, where(func(r messaging.SurveyResult) bool { return r.ExternalUserID == "u1" })},
		{"inclusive bounds", messaging.SurveyResultFilter{From: at(4), To: at(6)}, where(func(r messaging.SurveyResult) bool {
			return !r.RespondedAt.Before(at(4)) && !r.RespondedAt.After(at(6))
		})},
		{"from only", messaging.SurveyResultFilter{From: at(13)}, where(func(r messaging.SurveyResult) bool { return !r.RespondedAt.Before(at(13)) })},
		{"to only", messaging.SurveyResultFilter{To: at(1)}, where(func(r messaging.SurveyResult) bool { return !r.RespondedAt.After(at(1)) })},
		{"option 0", messaging.SurveyResultFilter{OptionIndex: ptr(0)}, where(func(r messaging.SurveyResult) bool { return r.OptionIndex == 0 })},
		{"option 2", messaging.SurveyResultFilter{OptionIndex: ptr(2)}, where(func(r messaging.SurveyResult) bool { return r.OptionIndex == 2 })},
		{"option never chosen", messaging.SurveyResultFilter{OptionIndex: ptr(4)}, nil},
		{"everything", messaging.SurveyResultFilter{Phone: phone, ExternalUserID: "u0", From: at(0), To: at(14), OptionIndex: ptr(0)},
			where(func(r messaging.SurveyResult) bool {
				return r.Phone == phone && r.ExternalUserID == "u0" && r.OptionIndex == 0
			})},
	}
	for _, tt := range tests {
		require.NotEqual(t, len(want), len(tt.want), "%s: the filter must leave some out", tt.name)
		tt.filter.CampaignID = c.ID
		tt.filter.PageRequest = messaging.PageRequest{Page: 1, PageSize: 100}
		got, total, err := f.s.ListResults(f.ctx, a.ID, tt.filter)
		require.NoError(t, err, tt.name)
		require.Equal(t, len(tt.want), total, tt.name)
		requireSameList(t, tt.want, got, tt.name)
	}

	got, total, err := f.s.ListResults(f.ctx, a.ID, messaging.SurveyResultFilter{CampaignID: c.ID, OptionIndex: ptr(1), PageRequest: messaging.PageRequest{Page: 2, PageSize: 10}})
	require.NoError(t, err)
	wantOne := where(func(r messaging.SurveyResult) bool { return r.OptionIndex == 1 })
	require.Equal(t, len(wantOne), total)
	requireSameList(t, wantOne[10:], got, "second page of a filtered list")

	got, total, err = f.s.ListResults(f.ctx, a.ID, messaging.SurveyResultFilter{CampaignID: c2.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Len(t, got, 1)

	got, total, err = f.s.ListResults(f.ctx, b.ID, messaging.SurveyResultFilter{CampaignID: c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Zero(t, total, "another company's campaign shows nothing")
	require.Empty(t, got)
	got, total, err = f.s.ListResults(f.ctx, a.ID, messaging.SurveyResultFilter{CampaignID: cb.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Zero(t, total, "another company's campaign shows nothing")
	require.Empty(t, got)
}

// testCountByOption: answers per option index of one campaign of one
// company.
func testCountByOption(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	c, msgs := f.surveyCampaign(a.ID, 10)
	options := []int{0, 0, 0, 2, 2, 1, 0, 2, 0, 0}
	for i, m := range msgs {
		f.record(f.result(m, options[i], at(i)))
	}
	late := f.result(msgs[0], 1, at(100))
	stored, err := f.recordOne(&late)
	require.NoError(t, err)
	require.False(t, stored)
	c2, msgs2 := f.surveyCampaign(a.ID, 2)
	f.record(f.result(msgs2[0], 1, at(1)))
	f.record(f.result(msgs2[1], 1, at(2)))
	cb, msgsB := f.surveyCampaign(b.ID, 1)
	f.record(f.result(msgsB[0], 0, at(1)))

	tests := []struct {
		name                  string
		companyID, campaignID messaging.ID
		want                  map[int]int
	}{
		{"campaign", a.ID, c.ID, map[int]int{0: 6, 1: 1, 2: 3}},
		{"other campaign", a.ID, c2.ID, map[int]int{1: 2}},
		{"other company", b.ID, cb.ID, map[int]int{0: 1}},
		{"another company's campaign", b.ID, c.ID, nil},
		{"unknown campaign", a.ID, f.id(), nil},
	}
	for _, tt := range tests {
		got, err := f.s.CountByOption(f.ctx, tt.companyID, tt.campaignID)
		require.NoError(t, err, tt.name)
		if tt.want == nil {
			require.Empty(t, got, tt.name)
			continue
		}
		require.Equal(t, tt.want, got, tt.name)
	}
}

// testSurveyMessageTo: the survey an SMS from a number may answer is the
// chat message of the company's latest SMS fallback to that number in a
// survey campaign not completed, or completed after the time given;
// another company's, a non-survey campaign's and an older one's do not
// count.
func testSurveyMessageTo(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	c, msgs := f.surveyCampaign(a.ID, 2)
	fb0 := f.fallbackFor(msgs[0], at(10))
	fb1 := f.fallbackFor(msgs[1], at(11))
	f.admit(a.ID, fb0, fb1)

	got, ok, err := f.s.SurveyMessageTo(f.ctx, a.ID, msgs[0].Phone, at(0))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, msgs[0].ID, got.ID)
	_, ok, err = f.s.SurveyMessageTo(f.ctx, b.ID, msgs[0].Phone, at(0))
	require.NoError(t, err)
	require.False(t, ok, "another company's")
	_, ok, err = f.s.SurveyMessageTo(f.ctx, a.ID, "447700999999", at(0))
	require.NoError(t, err)
	require.False(t, ok, "a number it sent nothing to")

	// a plain chat campaign's fallback to the same number answers nothing
	plain := f.transactional(a.ID, messaging.ChannelChat)
	m := f.newMessage(plain, msgs[1].Phone, at(12))
	f.admit(a.ID, m)
	fb := f.fallbackFor(m, at(13))
	f.admit(a.ID, fb)
	got, ok, err = f.s.SurveyMessageTo(f.ctx, a.ID, msgs[1].Phone, at(0))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, msgs[1].ID, got.ID, "the survey's, though the plain campaign's fallback is newer")

	// completed: answers until the time given
	f.transition(c, messaging.CampaignInProgress, messaging.CampaignCompleted, at(20))
	_, ok, err = f.s.SurveyMessageTo(f.ctx, a.ID, msgs[0].Phone, at(19))
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = f.s.SurveyMessageTo(f.ctx, a.ID, msgs[0].Phone, at(21))
	require.NoError(t, err)
	require.False(t, ok, "completed before the time given")
}
