package smpp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
)

func TestRelativeValidity(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                              "",
		-time.Second:                   "",
		time.Second:                    "000000000001000R",
		90 * time.Minute:               "000000013000000R",
		48 * time.Hour:                 "000002000000000R",
		36*time.Hour + 61*time.Second:  "000001120101000R",
		1500 * time.Millisecond:        "000000000002000R",
		time.Millisecond:               "000000000001000R",
		400 * 24 * time.Hour:           "000099000000000R",
		99*24*time.Hour + 23*time.Hour: "000099000000000R",
	} {
		require.Equal(t, want, smpp.RelativeValidity(d), "%v", d)
	}
}

// TestValidityPeriodSent: every part of a submit carries the configured
// validity period; without one, none (the SMSC's default).
func TestValidityPeriodSent(t *testing.T) {
	srv := startSim(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	rs := newSink()
	with := newClient(t, srv.Addr(), rs.handle, func(c *smpp.Config) { c.ValidityPeriod = 6 * time.Hour })
	without := newClient(t, srv.Addr(), rs.handle)
	long := strings.Repeat("v", 200) // two parts
	_, err := with.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900201", Text: long})
	require.NoError(t, err)
	_, err = without.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900202", Text: "short"})
	require.NoError(t, err)
	msgs := srv.MessagesTo("447700900201")
	require.Len(t, msgs, 1)
	require.Len(t, msgs[0].Parts, 2)
	for _, p := range msgs[0].Parts {
		require.Equal(t, "000000060000000R", p.ValidityPeriod)
	}
	msgs = srv.MessagesTo("447700900202")
	require.Len(t, msgs, 1)
	require.Empty(t, msgs[0].Parts[0].ValidityPeriod)
}
