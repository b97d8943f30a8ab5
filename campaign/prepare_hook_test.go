package campaign_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// requestKey marks the context of the request in TestOnPrepare.
type requestKey struct{}

// TestOnPrepare: the hook is called with the request's context as a bulk
// send's background preparation and a direct send's begin, and the
// function it returned once each ended, with its error.
func TestOnPrepare(t *testing.T) {
	f := newFixture(t)
	type call struct {
		request  any
		campaign messaging.ID
		hidden   bool
		messages int
		ended    bool
		err      error
	}
	var (
		mu    sync.Mutex
		calls []*call
	)
	svc := must(campaign.New(campaign.Config{Store: f.store,
		OnPrepare: func(ctx context.Context, c messaging.Campaign, messages int) func(error) {
			cl := &call{request: ctx.Value(requestKey{}), campaign: c.ID, hidden: c.Hidden, messages: messages}
			mu.Lock()
			calls = append(calls, cl)
			mu.Unlock()
			return func(err error) {
				mu.Lock()
				cl.ended, cl.err = true, err
				mu.Unlock()
			}
		}}))
	t.Cleanup(svc.Close)
	ctx := context.WithValue(t.Context(), requestKey{}, "the request")
	bulk, err := svc.SendBulk(ctx, f.company, campaign.BulkSend{Channel: messaging.ChannelSMS, TemplateID: f.smsTmpl,
		Recipients: []campaign.Recipient{{Phone: "+447700900001"}, {Phone: "+447700900002"}}, Placeholders: map[string]string{"name": "Ann"}})
	require.NoError(t, err)
	require.NoError(t, svc.Wait(ctx))
	direct, err := svc.SendDirectSMS(ctx, f.company, campaign.DirectSMS{Content: "Hi", SMSSenderID: f.sender,
		Recipients: []campaign.Recipient{{Phone: "+447700900003"}}})
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 2)
	require.Equal(t, call{request: "the request", campaign: bulk.Campaign.ID, messages: 2, ended: true}, *calls[0])
	require.Equal(t, call{request: "the request", campaign: direct.Campaign.ID, hidden: true, messages: 1, ended: true}, *calls[1])
}
