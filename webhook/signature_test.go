package webhook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/webhook"
)

func TestSignAndVerify(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"e1","type":"message.status"}`)
	h := webhook.Sign(at, body, "whsec_current")
	require.True(t, strings.HasPrefix(h, "t=1800000000,v1="), h)
	require.NoError(t, webhook.Verify("whsec_current", h, body, at.Add(time.Minute), webhook.DefaultTolerance))

	// another secret, another body, another time: refused
	require.ErrorIs(t, webhook.Verify("whsec_other", h, body, at, 0), webhook.ErrBadSignature)
	require.ErrorIs(t, webhook.Verify("whsec_current", h, append(body, ' '), at, 0), webhook.ErrBadSignature)
	forged := strings.Replace(h, "t=1800000000", "t=1800000060", 1)
	require.ErrorIs(t, webhook.Verify("whsec_current", forged, body, at, 0), webhook.ErrBadSignature)
	require.ErrorIs(t, webhook.Verify("whsec_current", h, body, at.Add(6*time.Minute), webhook.DefaultTolerance), webhook.ErrTooOld)
	require.ErrorIs(t, webhook.Verify("whsec_current", h, body, at.Add(-6*time.Minute), webhook.DefaultTolerance), webhook.ErrTooOld)
	require.NoError(t, webhook.Verify("whsec_current", h, body, at.Add(time.Hour), 0), "no tolerance: any time")

	for _, bad := range []string{"", "t=1800000000", "v1=abcd", "t=x,v1=abcd", "garbage"} {
		require.ErrorIs(t, webhook.Verify("whsec_current", bad, body, at, 0), webhook.ErrNoSignature, "%q", bad)
	}
	require.ErrorIs(t, webhook.Verify("whsec_current", "t=1800000000,v1=zz", body, at, 0), webhook.ErrBadSignature)
}

// During a rotation both secrets sign: a receiver with either accepts the
// request.
func TestSignWithTwoSecrets(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	body := []byte(`{}`)
	h := webhook.Sign(at, body, "whsec_new", "whsec_old")
	require.Equal(t, 2, strings.Count(h, "v1="))
	require.NoError(t, webhook.Verify("whsec_new", h, body, at, webhook.DefaultTolerance))
	require.NoError(t, webhook.Verify("whsec_old", h, body, at, webhook.DefaultTolerance))
	require.ErrorIs(t, webhook.Verify("whsec_third", h, body, at, webhook.DefaultTolerance), webhook.ErrBadSignature)
}

func TestNewSecret(t *testing.T) {
	a, err := webhook.NewSecret()
	require.NoError(t, err)
	b, err := webhook.NewSecret()
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "whsec_"))
	require.Len(t, a, len("whsec_")+43) // 32 bytes in unpadded base64url
}
