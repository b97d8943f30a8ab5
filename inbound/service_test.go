package inbound_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/inbound"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
)

func TestNewNeedsAStore(t *testing.T) {
	_, err := inbound.New(inbound.Config{})
	require.ErrorContains(t, err, "Store is required")
}

func TestMask(t *testing.T) {
	require.Equal(t, "*********123", inbound.Mask("447700900123"))
	require.Equal(t, "**", inbound.Mask("12"))
}

// Receive stores numbers with digits only, reads a part numbered outside
// its count as a message of one part, and logs neither the text nor the
// whole number.
func TestReceive(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	acc, err := accounts.New(accounts.Config{Store: st})
	require.NoError(t, err)
	co, err := acc.CreateCompany(ctx, "Acme")
	require.NoError(t, err)
	sd, err := acc.RegisterSMSSender(ctx, co.ID, "ACME")
	require.NoError(t, err)
	require.NoError(t, acc.ApproveSMSSender(ctx, sd.ID))
	var logs bytes.Buffer
	svc, err := inbound.New(inbound.Config{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)

	now := time.Now()
	require.NoError(t, svc.Receive(ctx, delivery.InboundPart{From: "+447700900123", To: " ACME ", Text: "STOP please", Count: 1, Seq: 1, At: now}))
	require.NoError(t, svc.Receive(ctx, delivery.InboundPart{From: "447700900124", To: "ACME", Text: "odd", Ref: 3, Count: 2, Seq: 5, At: now}))
	got, total, err := svc.List(ctx, co.ID, messaging.InboundFilter{Phone: "+447700900123"})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, "447700900123", got[0].Phone)
	require.Equal(t, "ACME", got[0].To)
	got, total, err = svc.List(ctx, co.ID, messaging.InboundFilter{Phone: "447700900124"})
	require.NoError(t, err)
	require.Equal(t, 1, total, "a part numbered outside its count stands alone")
	require.Equal(t, "odd", got[0].Text)

	require.NotContains(t, logs.String(), "STOP")
	require.NotContains(t, logs.String(), "447700900123")
	require.Contains(t, logs.String(), "*********123")

	_, _, err = svc.List(ctx, co.ID, messaging.InboundFilter{Phone: "12ab"})
	require.True(t, messaging.IsCode(err, messaging.Invalid))
}
