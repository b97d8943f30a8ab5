package storetest

import (
	"encoding/json"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/webhook"
)

// testOptOuts: an opt-out is recorded once per number and scope, listed
// latest first to its company only, removed once; OptedOut finds the
// numbers a scope covering the channel stops; each change is reported by
// an optout.changed event.
func testOptOuts(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	hook := f.endpoint(a.ID, webhook.OptOutChanged)
	add := func(companyID messaging.ID, phone string, sc optout.Scope, src optout.Source, sec int) bool {
		t.Helper()
		ok, err := f.s.AddOptOut(f.ctx, optout.OptOut{CompanyID: companyID, Phone: phone, Scope: sc, Source: src, CreatedAt: at(sec)})
		require.NoError(t, err)
		return ok
	}
	require.True(t, add(a.ID, "447700900001", optout.All, optout.FromKeyword, 1))
	require.False(t, add(a.ID, "447700900001", optout.All, optout.FromAPI, 2), "already opted out")
	require.True(t, add(a.ID, "447700900002", optout.Chat, optout.FromChat, 3))
	require.True(t, add(a.ID, "447700900003", optout.All, optout.FromAPI, 4))
	require.True(t, add(b.ID, "447700900001", optout.All, optout.FromAPI, 5))

	list, total, err := f.s.ListOptOuts(f.ctx, a.ID, optout.Filter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 2}})
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Equal(t, []string{"447700900003", "447700900002"}, []string{list[0].Phone, list[1].Phone}, "latest first")
	requireSame(t, optout.OptOut{CompanyID: a.ID, Phone: "447700900002", Scope: optout.Chat, Source: optout.FromChat, CreatedAt: at(3)}, list[1])
	list, total, err = f.s.ListOptOuts(f.ctx, a.ID, optout.Filter{Phone: "447700900001", PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, optout.FromKeyword, list[0].Source, "the first opt-out is kept")

	phones := []string{"447700900001", "447700900002", "447700900003", "447700900004"}
	sms, err := f.s.OptedOut(f.ctx, a.ID, phones, messaging.ChannelSMS)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"447700900001": true, "447700900003": true}, sms)
	chat, err := f.s.OptedOut(f.ctx, a.ID, phones, messaging.ChannelChat)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"447700900001": true, "447700900002": true, "447700900003": true}, chat)
	other, err := f.s.OptedOut(f.ctx, b.ID, phones, messaging.ChannelSMS)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"447700900001": true}, other)

	removed, err := f.s.RemoveOptOut(f.ctx, a.ID, "447700900001", optout.All, optout.FromKeyword, at(6))
	require.NoError(t, err)
	require.True(t, removed)
	removed, err = f.s.RemoveOptOut(f.ctx, a.ID, "447700900001", optout.All, optout.FromKeyword, at(7))
	require.NoError(t, err)
	require.False(t, removed)
	sms, err = f.s.OptedOut(f.ctx, a.ID, phones, messaging.ChannelSMS)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"447700900003": true}, sms)

	ds, err := f.s.WaitingDeliveries(f.ctx, hook.ID, 10)
	require.NoError(t, err)
	var changes []webhook.OptOutData
	for _, d := range ds {
		require.Equal(t, webhook.OptOutChanged, d.Event.Type)
		var data webhook.OptOutData
		require.NoError(t, json.Unmarshal(d.Event.Data, &data))
		changes = append(changes, data)
	}
	require.Len(t, changes, 4, "A's three opt-outs and one removal; B's are B's")
	require.Equal(t, webhook.OptOutData{PhoneNumber: "447700900001", Channel: "All", OptedOut: false, Source: "keyword",
		ChangedAt: changes[3].ChangedAt}, changes[3])
	require.True(t, changes[0].OptedOut)
	require.Equal(t, ds[0].Event.Subject, ds[3].Event.Subject, "one number's changes share a subject: they arrive in order")
}

// testOptOutKeywords: an SMS whose text is an opt-out keyword opts its
// sender out of the company it went to, in the transaction that stores
// it; an opt-in keyword opts it back in; other texts change nothing, and
// a message no company's sender took opts out of nothing.
func testOptOutKeywords(f *fixture) {
	t := f.t
	a := f.company("A")
	f.sender(a.ID, "ACME", true)
	rec := func(phone, dest, text string, sec int) {
		t.Helper()
		m, err := f.s.RecordInboundPart(f.ctx, part(phone, dest, text, 0, 1, 1, sec), f.id())
		require.NoError(t, err)
		require.NotNil(t, m)
	}
	opted := func(phone string) bool {
		t.Helper()
		got, err := f.s.OptedOut(f.ctx, a.ID, []string{phone}, messaging.ChannelSMS)
		require.NoError(t, err)
		return got[phone]
	}
	rec("447700900001", "ACME", " Stop ", 1)
	require.True(t, opted("447700900001"))
	list, _, err := f.s.ListOptOuts(f.ctx, a.ID, optout.Filter{Phone: "447700900001", PageRequest: messaging.PageRequest{Page: 1, PageSize: 5}})
	require.NoError(t, err)
	require.Equal(t, optout.FromKeyword, list[0].Source)
	rec("447700900001", "ACME", "thanks", 2)
	require.True(t, opted("447700900001"), "another text changes nothing")
	rec("447700900001", "ACME", "START", 3)
	require.False(t, opted("447700900001"))
	rec("447700900002", "NOBODY", "STOP", 4)
	require.False(t, opted("447700900002"))

	// a company's own keywords replace the defaults
	_, own, err := f.s.Keywords(f.ctx, a.ID)
	require.NoError(t, err)
	require.False(t, own)
	require.NoError(t, f.s.SetKeywords(f.ctx, a.ID, optout.Keywords{Out: []string{"ARRET"}, In: []string{"REPRENDRE"}}))
	k, own, err := f.s.Keywords(f.ctx, a.ID)
	require.NoError(t, err)
	require.True(t, own)
	require.Equal(t, optout.Keywords{Out: []string{"ARRET"}, In: []string{"REPRENDRE"}}, k)
	rec("447700900003", "ACME", "STOP", 5)
	require.False(t, opted("447700900003"), "STOP is no longer one of A's words")
	rec("447700900003", "ACME", "arret", 6)
	require.True(t, opted("447700900003"))
	rec("447700900003", "ACME", "Reprendre", 7)
	require.False(t, opted("447700900003"))
	require.NoError(t, f.s.SetKeywords(f.ctx, a.ID, optout.Keywords{Out: []string{"FIN"}, In: []string{}}))
	k, _, err = f.s.Keywords(f.ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, optout.Keywords{Out: []string{"FIN"}, In: []string{}}, k, "set again")
}

// testOptOutFailsPending: opting a number out ends its Pending messages
// of the company Failed with details OPTED_OUT, in the same transaction
// (counted, with their message.status events): a bulk already accepted
// sends it nothing more. A message already claimed (handed to a provider)
// is left; a Chat opt-out leaves SMS; other numbers and companies are
// untouched.
func testOptOutFailsPending(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	hook := f.endpoint(a.ID, webhook.MessageStatus)
	c, msgs := f.bulk(a.ID, messaging.ChannelSMS, 3, at(0), messaging.CampaignInProgress)
	x := msgs[0].Phone
	again := f.newMessage(c, x, at(1)) // a second message to the same number
	f.admit(a.ID, again)
	inFlight := f.claim(messaging.ChannelSMS, at(2), at(600), 1) // msgs[0], the oldest, is Sending
	require.Len(t, inFlight, 1)
	require.Equal(t, msgs[0].ID, inFlight[0].ID)
	_, other := f.bulk(b.ID, messaging.ChannelSMS, 1, at(0), messaging.CampaignInProgress)
	_, chatMsgs := f.bulk(a.ID, messaging.ChannelChat, 1, at(0), messaging.CampaignInProgress)

	ok, err := f.s.AddOptOut(f.ctx, optout.OptOut{CompanyID: a.ID, Phone: x, Scope: optout.Chat, Source: optout.FromAPI, CreatedAt: at(3)})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, messaging.StatusPending, f.getMessage(a.ID, again.ID).Status, "a Chat opt-out leaves SMS")

	ok, err = f.s.AddOptOut(f.ctx, optout.OptOut{CompanyID: a.ID, Phone: x, Scope: optout.All, Source: optout.FromKeyword, CreatedAt: at(4)})
	require.NoError(t, err)
	require.True(t, ok)
	got := f.getMessage(a.ID, again.ID)
	require.Equal(t, messaging.StatusFailed, got.Status)
	require.Equal(t, "OPTED_OUT", got.Details)
	require.Equal(t, messaging.StatusSending, f.getMessage(a.ID, msgs[0].ID).Status, "already handed over: left")
	require.Equal(t, messaging.StatusPending, f.getMessage(a.ID, msgs[1].ID).Status)
	require.Equal(t, messaging.StatusPending, f.getMessage(b.ID, other[0].ID).Status)
	require.Equal(t, messaging.StatusPending, f.getMessage(a.ID, chatMsgs[0].ID).Status, "another number")
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 2, Sending: 1, Failed: 1}, messaging.StatusCounts{})
	require.Contains(t, f.statusEvents(hook.ID), again.ID.String()+" Failed")
	f.requireReconciled()
}
