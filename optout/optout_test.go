package optout_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/optout"
	"github.com/heraldhq/herald/store/memstore"
)

func TestClassify(t *testing.T) {
	k := optout.DefaultKeywords()
	for text, want := range map[string]optout.Action{
		"STOP": optout.OptOutAction, " stop ": optout.OptOutAction, "Stop.": optout.OptOutAction, "unsubscribe!": optout.OptOutAction,
		"QUIT": optout.OptOutAction, "start": optout.OptInAction, "Yes": optout.OptInAction, "UNSTOP": optout.OptInAction,
		"please stop": optout.None, "STOP IT": optout.None, "": optout.None, "?": optout.None, "STOPP": optout.None,
	} {
		require.Equal(t, want, optout.Classify(text, k), "%q", text)
	}
	require.Equal(t, optout.OptOutAction, optout.Classify("arret", optout.Keywords{Out: []string{"ARRET"}}), "a company's own words")
	require.Equal(t, optout.None, optout.Classify("STOP", optout.Keywords{Out: []string{"ARRET"}}))
}

func TestScopeCovers(t *testing.T) {
	require.True(t, optout.All.Covers(messaging.ChannelSMS))
	require.True(t, optout.All.Covers(messaging.ChannelChat))
	require.True(t, optout.Chat.Covers(messaging.ChannelChat))
	require.False(t, optout.Chat.Covers(messaging.ChannelSMS))
}

func TestService(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	svc, err := optout.New(optout.Config{Store: st, Now: func() time.Time { return time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC) }})
	require.NoError(t, err)
	company := messaging.NewIDGenerator(nil).New()

	o, added, err := svc.Add(ctx, company, "+447700900001", "")
	require.NoError(t, err)
	require.True(t, added)
	require.Equal(t, optout.OptOut{CompanyID: company, Phone: "447700900001", Scope: optout.All, Source: optout.FromAPI,
		CreatedAt: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)}, o)
	_, added, err = svc.Add(ctx, company, "447700900001", "all")
	require.NoError(t, err)
	require.False(t, added)
	_, _, err = svc.Add(ctx, company, "12", "Email")
	require.True(t, messaging.IsCode(err, messaging.Invalid))
	require.Contains(t, err.(*messaging.Error).Fields, "phoneNumber")
	require.Contains(t, err.(*messaging.Error).Fields, "channel")

	list, total, err := svc.List(ctx, company, optout.Filter{Phone: "+447700900001"})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, "447700900001", list[0].Phone)

	require.NoError(t, svc.Remove(ctx, company, "447700900001", "All"))
	require.True(t, messaging.IsCode(svc.Remove(ctx, company, "447700900001", "All"), messaging.NotFound))
	require.True(t, messaging.IsCode(svc.Remove(ctx, company, "x", ""), messaging.Invalid))
	_, err = optout.New(optout.Config{})
	require.ErrorContains(t, err, "Store is required")
}

func TestSetKeywords(t *testing.T) {
	ctx := context.Background()
	svc, err := optout.New(optout.Config{Store: memstore.New()})
	require.NoError(t, err)
	company := messaging.NewIDGenerator(nil).New()
	k, err := svc.Keywords(ctx, company)
	require.NoError(t, err)
	require.Equal(t, optout.DefaultKeywords(), k)
	k, err = svc.SetKeywords(ctx, company, optout.Keywords{Out: []string{"arrêt", "ARRÊT", " fin "}, In: []string{}})
	require.NoError(t, err)
	require.Equal(t, optout.Keywords{Out: []string{"ARRÊT", "FIN"}, In: []string{}}, k)
	got, err := svc.Keywords(ctx, company)
	require.NoError(t, err)
	require.Equal(t, k, got)
	for _, bad := range []optout.Keywords{
		{Out: []string{"two words"}}, {Out: []string{""}}, {Out: []string{"STOP"}, In: []string{"stop"}},
		{Out: []string{"ABCDEFGHIJKLMNOPQRSTU"}}, {In: make([]string, optout.MaxKeywords+1)},
	} {
		_, err := svc.SetKeywords(ctx, company, bad)
		require.True(t, messaging.IsCode(err, messaging.Invalid), "%+v", bad)
	}
	got, err = svc.Keywords(ctx, company)
	require.NoError(t, err)
	require.Equal(t, k, got, "nothing stored from a refused list")
}
