package storetest

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
)

// testMessageRoundTrip: every field of a message round-trips, through
// AdmitMessages and InsertMessages; another company's message is NotFound.
func testMessageRoundTrip(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	tx := f.transactional(a.ID, messaging.ChannelChat)
	chat := f.newMessage(tx, "447900000001", base.Add(123456*time.Microsecond))
	f.admit(a.ID, chat)

	sent, delivered, seen, expires := base.Add(time.Second+1*time.Microsecond), at(2), at(3), at(3600)
	full := &messaging.Message{
		ID: f.id(), CompanyID: a.ID, CampaignID: tx.ID, Channel: messaging.ChannelSMS, Phone: "447900000001",
		ExternalUserID: "user-ü-42", Content: "Fallback text with ünicode ✓", Config: fullConfig(),
		FallbackContent: "more text", FallbackFor: chat.ID, Status: messaging.StatusPending, Details: "UNDELIVERED",
		SMSErrorCode: "005", ProviderMessageID: "0A1B2C3D", Attempts: 3, DueAt: at(10), LeaseUntil: at(70),
		CreatedAt: base.Add(654321 * time.Microsecond), UpdatedAt: at(11), SentAt: &sent, DeliveredAt: &delivered, SeenAt: &seen,
		ExpiresAt: &expires,
	}
	want := *full
	want.Config = fullConfig()
	want.SentAt, want.DeliveredAt, want.SeenAt, want.ExpiresAt = ptr(sent), ptr(delivered), ptr(seen), ptr(expires)
	f.admit(a.ID, full)
	requireSame(t, want, f.getMessage(a.ID, full.ID))
	requireSame(t, *chat, f.getMessage(a.ID, chat.ID))

	// Callers never share memory with the store.
	full.Config.Items[0].Title = "changed after admit"
	*full.SentAt = at(99)
	got := f.getMessage(a.ID, full.ID)
	got.Config.Options[0].OptionText = "changed after get"
	*got.SeenAt = at(98)
	requireSame(t, want, f.getMessage(a.ID, full.ID))

	bulk := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 2, at(20)))
	minimal := f.newMessage(bulk, "447900000002", at(21))
	minimal.Content = ""
	withConfig := f.newMessage(bulk, "447900000003", at(21))
	withConfig.Config = &messaging.ChatConfig{ButtonText: "Track", ButtonURL: "https://example.com/t/42"}
	require.NoError(t, f.s.InsertMessages(f.ctx, []*messaging.Message{minimal, withConfig}))
	requireSame(t, *minimal, f.getMessage(a.ID, minimal.ID))
	requireSame(t, *withConfig, f.getMessage(a.ID, withConfig.ID))

	_, err := f.s.GetMessage(f.ctx, b.ID, full.ID)
	requireNotFound(t, err, "another company's message")
	_, err = f.s.GetMessage(f.ctx, a.ID, f.id())
	requireNotFound(t, err)
}

// testInsertMessagesBatch: a large batch is counted in its campaign and
// leaves the pending count where CreateCampaign put it.
func testInsertMessagesBatch(f *fixture) {
	t := f.t
	a := f.company("A")
	const n = 5000
	c := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, n, at(0)))
	require.Equal(t, n, f.pending(a.ID), "CreateCampaign reserves Planned")
	msgs := f.newMessages(c, n, at(1))
	for i, m := range msgs {
		m.ExternalUserID = string(rune('a' + i%26))
	}
	require.NoError(t, f.s.InsertMessages(f.ctx, msgs))
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: n}, messaging.StatusCounts{})
	require.Equal(t, n, f.pending(a.ID), "InsertMessages does not change the pending count")

	for _, i := range []int{0, n / 2, n - 1} {
		requireSame(t, *msgs[i], f.getMessage(a.ID, msgs[i].ID))
	}
	got, total, err := f.s.ListMessages(f.ctx, a.ID, messaging.MessageFilter{Phone: msgs[1234].Phone, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	requireSameList(t, []messaging.Message{*msgs[1234]}, got)

	f.transition(c, messaging.CampaignQueuing, messaging.CampaignReady, at(2))
	require.Equal(t, n, f.pending(a.ID), "every planned message was inserted: nothing to release")
	f.requireReconciled()
}

// testInsertMessagesAllOrNothing: a batch that cannot be written entirely
// writes nothing.
func testInsertMessagesAllOrNothing(f *fixture) {
	t := f.t
	a := f.company("A")
	c := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 20, at(0)))

	bad := f.newMessages(c, 10, at(1))
	orphan := messaging.Campaign{ID: f.id(), CompanyID: a.ID, Channel: messaging.ChannelSMS}
	bad[9] = f.newMessage(orphan, f.nextPhone(), at(1))
	require.Error(t, f.s.InsertMessages(f.ctx, bad), "a message of an unknown campaign")
	for _, m := range bad {
		_, err := f.s.GetMessage(f.ctx, a.ID, m.ID)
		requireNotFound(t, err, "nothing of a failed batch is written")
	}
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{}, messaging.StatusCounts{})

	first := f.newMessages(c, 3, at(2))
	require.NoError(t, f.s.InsertMessages(f.ctx, first))
	dup := f.newMessages(c, 4, at(3))
	dup[3] = first[1]
	require.Error(t, f.s.InsertMessages(f.ctx, dup), "a message id already stored")
	for _, m := range dup[:3] {
		_, err := f.s.GetMessage(f.ctx, a.ID, m.ID)
		requireNotFound(t, err, "nothing of a failed batch is written")
	}
	f.requireCounts(a.ID, c.ID, messaging.StatusCounts{Pending: 3}, messaging.StatusCounts{})
	require.Equal(t, 20, f.pending(a.ID))
	f.requireReconciled()
}

// newestFirst sorts messages by CreatedAt, then ID, both descending.
func newestFirst(ms []messaging.Message) {
	slices.SortFunc(ms, func(x, y messaging.Message) int {
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return bytes.Compare(y.ID[:], x.ID[:])
	})
}

// testListMessagesPagination: pages of a phone's messages, newest first
// (ties by id), with the total; other phones and companies are left out.
func testListMessagesPagination(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	const n = 45
	phone := "447911223344"
	c1 := f.createCampaign(f.newCampaign(a.ID, messaging.ChannelSMS, messaging.ModeBulk, messaging.CampaignQueuing, 2*n, at(0)))
	c2 := f.transactional(a.ID, messaging.ChannelChat)
	var want []messaging.Message
	var batch1, batch2 []*messaging.Message
	for i := range n {
		// 15 distinct creation times, three messages each, unrelated to
		// the order of the ids.
		created := at((i * 7) % 15)
		if i%2 == 0 {
			m := f.newMessage(c1, phone, created)
			batch1 = append(batch1, m)
			want = append(want, *m)
		} else {
			m := f.newMessage(c2, phone, created)
			batch2 = append(batch2, m)
			want = append(want, *m)
		}
		batch1 = append(batch1, f.newMessage(c1, f.nextPhone(), created)) // another phone
	}
	rng := rand.New(rand.NewPCG(5, 6))
	rng.Shuffle(len(batch1), func(i, j int) { batch1[i], batch1[j] = batch1[j], batch1[i] })
	require.NoError(t, f.s.InsertMessages(f.ctx, batch1))
	f.admit(a.ID, batch2...)
	other := f.transactional(b.ID, messaging.ChannelSMS)
	f.admit(b.ID, f.newMessage(other, phone, at(5)), f.newMessage(other, phone, at(50)))
	newestFirst(want)

	var all []messaging.Message
	for page, size := range []int{20, 20, 5, 0} {
		got, total, err := f.s.ListMessages(f.ctx, a.ID, messaging.MessageFilter{Phone: phone, PageRequest: messaging.PageRequest{Page: page + 1, PageSize: 20}})
		require.NoError(t, err)
		require.Equal(t, n, total, "total on page %d", page+1)
		require.Len(t, got, size, "page %d", page+1)
		all = append(all, got...)
	}
	requireSameList(t, want, all)
}

// testListMessagesFilters: by phone, by external user id, by both, by
// campaign, by status, and by inclusive bounds on CreatedAt.
func testListMessagesFilters(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	c := f.transactional(a.ID, messaging.ChannelSMS)
	const p1, p2 = "447900000101", "447900000102"
	mk := func(phone, user string, sec int) messaging.Message {
		m := f.newMessage(c, phone, at(sec))
		m.ExternalUserID = user
		f.admit(a.ID, m)
		return *m
	}
	m1 := mk(p1, "u1", 10)
	m2 := mk(p1, "u2", 20)
	m3 := mk(p1, "u1", 30)
	m4 := mk(p1, "", 40)
	m5 := mk(p2, "u1", 25)
	m6 := mk(p2, "", 35)
	c2 := f.transactional(a.ID, messaging.ChannelSMS)
	const p3 = "447900000103"
	m7 := f.newMessage(c2, p3, at(45))
	m8 := f.newMessage(c2, p3, at(50))
	m8.Status, m8.Details = messaging.StatusFailed, "OPTED_OUT"
	f.admit(a.ID, m7, m8)
	other := f.transactional(b.ID, messaging.ChannelSMS)
	om := f.newMessage(other, p1, at(30))
	om.ExternalUserID = "u1"
	f.admit(b.ID, om)

	tests := []struct {
		name   string
		filter messaging.MessageFilter
		want   []messaging.Message
	}{
		{"phone", messaging.MessageFilter{Phone: p1}, []messaging.Message{m4, m3, m2, m1}},
		{"other phone", messaging.MessageFilter{Phone: p2}, []messaging.Message{m6, m5}},
		{"external user", messaging.MessageFilter{ExternalUserID: "u1"}, []messaging.Message{m3, m5, m1}},
		{"phone and external user", messaging.MessageFilter{Phone: p1, ExternalUserID: "u1"}, []messaging.Message{m3, m1}},
		{"phone and another user", messaging.MessageFilter{Phone: p2, ExternalUserID: "u2"}, nil},
		{"inclusive bounds", messaging.MessageFilter{Phone: p1, From: at(20), To: at(30)}, []messaging.Message{m3, m2}},
		{"from only", messaging.MessageFilter{Phone: p1, From: at(30)}, []messaging.Message{m4, m3}},
		{"to only", messaging.MessageFilter{Phone: p1, To: at(10)}, []messaging.Message{m1}},
		{"bounds and user", messaging.MessageFilter{ExternalUserID: "u1", From: at(25), To: at(25)}, []messaging.Message{m5}},
		{"empty range", messaging.MessageFilter{Phone: p1, From: at(11), To: at(19)}, nil},
		{"unknown phone", messaging.MessageFilter{Phone: "447999999999"}, nil},
		{"campaign", messaging.MessageFilter{CampaignID: c2.ID}, []messaging.Message{*m8, *m7}},
		{"campaign and status", messaging.MessageFilter{CampaignID: c2.ID, Status: messaging.StatusPending}, []messaging.Message{*m7}},
		{"status", messaging.MessageFilter{Status: messaging.StatusFailed}, []messaging.Message{*m8}},
		{"first campaign", messaging.MessageFilter{CampaignID: c.ID, From: at(35)}, []messaging.Message{m6, m4}},
		{"campaign of another company", messaging.MessageFilter{CampaignID: other.ID}, nil},
	}
	for _, tt := range tests {
		tt.filter.PageRequest = messaging.PageRequest{Page: 1, PageSize: 20}
		got, total, err := f.s.ListMessages(f.ctx, a.ID, tt.filter)
		require.NoError(t, err, tt.name)
		require.Equal(t, len(tt.want), total, tt.name)
		requireSameList(t, tt.want, got, tt.name)
	}

	got, total, err := f.s.ListMessages(f.ctx, b.ID, messaging.MessageFilter{Phone: p1, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Equal(t, 1, total, "each company sees its own messages only")
	requireSameList(t, []messaging.Message{*om}, got)
}

// testCampaignMessagesAfter: a campaign's messages (its fallback SMS
// included), page after page in id order from a cursor, none of another
// campaign or company.
func testCampaignMessagesAfter(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	c, msgs := f.bulk(a.ID, messaging.ChannelChat, 5, at(0), messaging.CampaignInProgress)
	fb := f.fallbackFor(msgs[1], at(1))
	f.admit(a.ID, fb)
	f.bulk(a.ID, messaging.ChannelSMS, 3, at(0), messaging.CampaignInProgress)
	want := []messaging.ID{fb.ID}
	for _, m := range msgs {
		want = append(want, m.ID)
	}
	slices.SortFunc(want, func(x, y messaging.ID) int { return bytes.Compare(x[:], y[:]) })
	var got []messaging.ID
	after := messaging.NilID
	for {
		page, err := f.s.CampaignMessagesAfter(f.ctx, a.ID, c.ID, after, 4)
		require.NoError(t, err)
		for _, m := range page {
			require.Equal(t, c.ID, m.CampaignID)
			got = append(got, m.ID)
		}
		if len(page) < 4 {
			break
		}
		after = page[len(page)-1].ID
	}
	require.Equal(t, want, got)
	none, err := f.s.CampaignMessagesAfter(f.ctx, b.ID, c.ID, messaging.NilID, 10)
	require.NoError(t, err)
	require.Empty(t, none, "another company's campaign")
}
