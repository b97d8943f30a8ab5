package sqlstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

func TestEventPackRoundTrip(t *testing.T) {
	ids := messaging.NewIDGenerator(nil)
	company := ids.New()
	at := time.Date(2026, time.December, 7, 10, 0, 0, 123456000, time.UTC)
	in := []webhook.Event{
		{ID: ids.New(), CompanyID: company, Type: webhook.MessageStatus, Subject: ids.New(), CreatedAt: at,
			Data: []byte(`{"status":"Sent","details":"a:1 2\n\"é\""}`)},
		{ID: ids.New(), CompanyID: company, Type: webhook.CampaignStatus, Subject: ids.New(), CreatedAt: at.Add(time.Second)},
		{ID: ids.New(), CompanyID: company, Type: webhook.SurveyAnswered, Subject: ids.New(), CreatedAt: time.UnixMicro(-5).UTC(),
			Data: []byte(`{}`)},
	}
	var pack []byte
	for i, e := range in {
		pack = appendPacked(pack, e, i == 0)
	}
	out, err := unpack(pack, company)
	require.NoError(t, err)
	require.Len(t, out, len(in))
	for i, p := range out {
		require.Equal(t, i == 0, p.render)
		require.Equal(t, in[i].ID, p.e.ID)
		require.Equal(t, in[i].Subject, p.e.Subject)
		require.Equal(t, in[i].Type, p.e.Type)
		require.Equal(t, company, p.e.CompanyID)
		require.True(t, in[i].CreatedAt.Equal(p.e.CreatedAt), "%v %v", in[i].CreatedAt, p.e.CreatedAt)
		require.Equal(t, string(in[i].Data), string(p.e.Data))
	}
	for _, bad := range [][]byte{pack[:len(pack)-1], pack[:40], append(append([]byte{}, pack...), 'x')} {
		_, err := unpack(bad, company)
		require.ErrorIs(t, err, errBadPack)
	}
}
