package storetest

import (
	"encoding/json"
	"fmt"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// sender registers an approved (or not) sender of the company.
func (f *fixture) sender(companyID messaging.ID, senderID string, approved bool) {
	f.t.Helper()
	sd := messaging.SMSSender{CompanyID: companyID, SenderID: senderID, CreatedAt: base}
	require.NoError(f.t, f.s.CreateSMSSender(f.ctx, &sd))
	if approved {
		require.NoError(f.t, f.s.ApproveSMSSender(f.ctx, sd.ID))
	}
}

// part is an inbound part from phone to dest.
func part(phone, dest, text string, ref, count, seq, sec int) delivery.InboundPart {
	return delivery.InboundPart{From: phone, To: dest, Text: text, Ref: ref, Count: count, Seq: seq, At: at(sec)}
}

// testInbound: a message in one part is stored at once; one in several
// when its last part came, whatever the order, a part sent twice counted
// once; each is attributed to the company whose approved sender id is its
// destination (none when no approved sender has it), listed to that
// company latest first and by number, and reported by a message.inbound
// event to its subscribed endpoints.
func testInbound(f *fixture) {
	t := f.t
	a, b := f.company("A"), f.company("B")
	f.sender(a.ID, "ACME", true)
	f.sender(b.ID, "GLOBEX", false)
	hook := f.endpoint(a.ID, webhook.MessageInbound)

	rec := func(p delivery.InboundPart) *messaging.InboundMessage {
		t.Helper()
		m, err := f.s.RecordInboundPart(f.ctx, p, f.id())
		require.NoError(t, err)
		return m
	}
	one := rec(part("447700900001", "ACME", "STOP", 0, 1, 1, 1))
	require.NotNil(t, one)
	require.Equal(t, a.ID, one.CompanyID)
	require.Equal(t, "STOP", one.Text)
	require.Equal(t, 1, one.Parts)

	require.Nil(t, rec(part("447700900002", "ACME", "world", 7, 3, 3, 2)))
	require.Nil(t, rec(part("447700900002", "ACME", "Hello ", 7, 3, 1, 3)))
	require.Nil(t, rec(part("447700900002", "ACME", "Hello ", 7, 3, 1, 3)), "a part sent again")
	require.Nil(t, rec(part("447700900003", "ACME", "other ", 7, 3, 2, 3)), "another number's part with the same reference")
	long := rec(part("447700900002", "ACME", "big ", 7, 3, 2, 4))
	require.NotNil(t, long)
	require.Equal(t, "Hello big world", long.Text)
	require.Equal(t, 3, long.Parts)
	requireTime(t, "ReceivedAt", at(4), long.ReceivedAt, nil)

	orphan := rec(part("447700900004", "GLOBEX", "hi", 0, 1, 1, 5))
	require.NotNil(t, orphan)
	require.True(t, orphan.CompanyID.IsZero(), "GLOBEX is not approved: no company")

	list, total, err := f.s.ListInbound(f.ctx, a.ID, messaging.InboundFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []messaging.ID{long.ID, one.ID}, []messaging.ID{list[0].ID, list[1].ID}, "latest first")
	requireSame(t, *long, list[0])
	list, total, err = f.s.ListInbound(f.ctx, a.ID, messaging.InboundFilter{Phone: "447700900001", PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	requireSame(t, *one, list[0])
	list, total, err = f.s.ListInbound(f.ctx, b.ID, messaging.InboundFilter{PageRequest: messaging.PageRequest{Page: 1, PageSize: 10}})
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, list)

	ds, err := f.s.WaitingDeliveries(f.ctx, hook.ID, 10)
	require.NoError(t, err)
	require.Len(t, ds, 2)
	var texts []string
	for _, d := range ds {
		require.Equal(t, webhook.MessageInbound, d.Event.Type)
		var data webhook.InboundData
		require.NoError(t, json.Unmarshal(d.Event.Data, &data))
		texts = append(texts, fmt.Sprintf("%s %s %s", data.PhoneNumber, data.To, data.Text))
	}
	require.Equal(t, []string{"447700900001 ACME STOP", "447700900002 ACME Hello big world"}, texts)
}
