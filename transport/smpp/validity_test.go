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

// TestMessageValiditySent: a message's own validity (what is left of it)
// is sent when it is shorter than the configured one, or when none is
// configured.
func TestMessageValiditySent(t *testing.T) {
	srv := startSim(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	rs := newSink()
	with := newClient(t, srv.Addr(), rs.handle, func(c *smpp.Config) { c.ValidityPeriod = 6 * time.Hour })
	without := newClient(t, srv.Addr(), rs.handle)
	for to, send := range map[string]struct {
		c        *smpp.Client
		validity time.Duration
	}{
		"447700900301": {with, 5 * time.Minute},
		"447700900302": {with, 7 * time.Hour},
		"447700900303": {without, 90 * time.Second},
	} {
		_, err := send.c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: to, Text: "code 1234", Validity: send.validity})
		require.NoError(t, err)
	}
	require.Equal(t, "000000000500000R", srv.MessagesTo("447700900301")[0].Parts[0].ValidityPeriod)
	require.Equal(t, "000000060000000R", srv.MessagesTo("447700900302")[0].Parts[0].ValidityPeriod, "the configured one is shorter")
	require.Equal(t, "000000000130000R", srv.MessagesTo("447700900303")[0].Parts[0].ValidityPeriod)
}
