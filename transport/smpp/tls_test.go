package smpp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/transport/smscsim"
	"github.com/stretchr/testify/require"
)

// TestTLS: with Config.TLS trusting the SMSC's CA, every session binds
// over TLS (the server name taken from Addr), texts go out and receipts
// come back through it; the caller's tls.Config is left as it was.
func TestTLS(t *testing.T) {
	srv := startSim(t, smscsim.Config{SystemID: "herald", Password: "secret"})
	cert, pool := selfSigned(t)
	px := startProxy(t, listenTLS(t, cert), srv.Addr())
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	rs := newSink()
	c := newClient(t, px.addr(), rs.handle, withBinds(2), func(cfg *smpp.Config) { cfg.TLS = tlsCfg })
	waitBindsUp(t, c, 2)

	res, err := c.Send(ctxTimeout(t, 5*time.Second), delivery.SMS{From: "Herald", To: "447700900000", Text: "over TLS"})
	require.NoError(t, err)
	require.Equal(t, "DELIVRD", rs.waitFor(t, res.PartIDs[0]).State)
	msgs := srv.MessagesTo("447700900000")
	require.Len(t, msgs, 1)
	require.Equal(t, "over TLS", msgs[0].Text)

	require.True(t, c.State().TLS)
	live := px.live()
	require.Len(t, live, 2)
	for _, pc := range live {
		tc, ok := pc.client.(*tls.Conn)
		require.True(t, ok)
		cs := tc.ConnectionState()
		require.True(t, cs.HandshakeComplete)
		require.GreaterOrEqual(t, cs.Version, uint16(tls.VersionTLS12))
	}
	require.Empty(t, tlsCfg.ServerName, "the Client works on a copy")
	require.Zero(t, c.Stats().BindFailures)
}

// TestTLSUntrustedCertificate: a Client that does not trust the SMSC's
// certificate never binds: the sessions keep retrying, the SMSC sees no
// bind, and the error tells why.
func TestTLSUntrustedCertificate(t *testing.T) {
	srv := startSim(t, smscsim.Config{})
	cert, _ := selfSigned(t)
	_, otherCA := selfSigned(t)
	px := startProxy(t, listenTLS(t, cert), srv.Addr())
	tests := []struct {
		name  string
		cfg   *tls.Config
		check func(t *testing.T, err error)
	}{
		{"another CA", &tls.Config{RootCAs: otherCA}, func(t *testing.T, err error) {
			var ua x509.UnknownAuthorityError
			require.ErrorAs(t, err, &ua)
		}},
		{"system roots", &tls.Config{}, func(t *testing.T, err error) {
			var ve *tls.CertificateVerificationError
			require.ErrorAs(t, err, &ve)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, px.addr(), nil, func(cfg *smpp.Config) { cfg.TLS = tt.cfg })
			require.Eventually(t, func() bool { return c.State().BindFailures >= 2 }, 5*time.Second, time.Millisecond, "binds are retried")
			err := c.State().LastBindError.Err
			require.ErrorContains(t, err, "TLS handshake")
			require.ErrorContains(t, err, "certificate")
			tt.check(t, err)
			require.ErrorIs(t, c.WaitReady(ctxTimeout(t, 20*time.Millisecond)), context.DeadlineExceeded)
			require.Zero(t, c.Stats().Binds)
			require.Zero(t, srv.Stats().Binds, "nothing reached the SMSC")
		})
	}
}
