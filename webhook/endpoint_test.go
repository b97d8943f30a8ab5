package webhook_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

func TestCheckURL(t *testing.T) {
	strict := webhook.URLPolicy{}
	dev := webhook.URLPolicy{AllowLoopbackHTTP: true}
	private := webhook.URLPolicy{AllowPrivate: true}
	tests := []struct {
		policy webhook.URLPolicy
		in     string
		want   string // "" when refused
	}{
		{strict, "https://hooks.example.com/herald?x=1", "https://hooks.example.com/herald?x=1"},
		{strict, "  HTTPS://hooks.example.com/h  ", "https://hooks.example.com/h"},
		{strict, "https://93.184.216.34:8443/h", "https://93.184.216.34:8443/h"},
		{strict, "https://[2001:4860:4860::8888]/h", "https://[2001:4860:4860::8888]/h"},
		{strict, "https://[64:ff9b::808:808]/h", "https://[64:ff9b::808:808]/h"},
		{strict, "http://hooks.example.com/h", ""},
		{strict, "ftp://hooks.example.com/h", ""},
		{strict, "https://user:pw@hooks.example.com/h", ""},
		{strict, "https://hooks.example.com/h#frag", ""},
		{strict, "hooks.example.com/h", ""},
		{strict, "", ""},
		{strict, "https://127.0.0.1/h", ""},
		{strict, "https://localhost/h", ""},
		{strict, "https://10.1.2.3/h", ""},
		{strict, "https://192.168.0.10/h", ""},
		{strict, "https://169.254.169.254/latest/meta-data", ""},
		{strict, "https://[::1]/h", ""},
		{strict, "https://[fe80::1]/h", ""},
		{strict, "https://[::ffff:10.0.0.1]/h", ""},
		{strict, "https://100.64.0.1/h", ""},
		{strict, "https://0.0.0.0/h", ""},
		// Special-purpose ranges found accepted before, IPv4 inside IPv6 included.
		{strict, "https://[64:ff9b::a00:1]/h", ""},
		{strict, "https://[64:ff9b::a9fe:a9fe]/h", ""},
		{strict, "https://[2002:a00:1::]/h", ""},
		{strict, "https://[::10.0.0.1]/h", ""},
		{strict, "https://[::ffff:0:a00:1]/h", ""},
		{strict, "https://[fec0::1]/h", ""},
		{strict, "https://255.255.255.255/h", ""},
		{strict, "https://0.1.2.3/h", ""},
		{strict, "https://240.0.0.1/h", ""},
		{strict, "https://198.18.0.1/h", ""},
		{strict, "https://203.0.113.7/h", ""},
		{strict, "https://[2001:db8::1]/h", ""},
		{strict, "https://[ff02::1]/h", ""},
		{strict, "https://224.0.0.251/h", ""},
		{dev, "http://[64:ff9b::7f00:1]/h", ""},
		{private, "https://169.254.169.254/latest/meta-data", ""},
		{private, "https://[64:ff9b::a00:1]/h", ""},
		{private, "https://[fd00::1]/h", "https://[fd00::1]/h"},
		{dev, "http://127.0.0.1:9000/h", "http://127.0.0.1:9000/h"},
		{dev, "http://localhost:9000/h", "http://localhost:9000/h"},
		{dev, "http://[::1]:9000/h", "http://[::1]:9000/h"},
		{dev, "http://10.1.2.3/h", ""},
		{dev, "https://10.1.2.3/h", ""},
		{dev, "http://hooks.example.com/h", ""},
		{private, "https://10.1.2.3/h", "https://10.1.2.3/h"},
		{private, "https://localhost/h", "https://localhost/h"},
		{private, "http://10.1.2.3/h", ""},
	}
	for _, tt := range tests {
		got, err := tt.policy.CheckURL(tt.in)
		if tt.want == "" {
			require.Error(t, err, "%q with %+v", tt.in, tt.policy)
			require.True(t, messaging.IsCode(err, messaging.Invalid))
			require.Contains(t, err.(*messaging.Error).Fields, "url")
			continue
		}
		require.NoError(t, err, "%q with %+v", tt.in, tt.policy)
		require.Equal(t, tt.want, got)
	}
	long := "https://hooks.example.com/" + string(make([]byte, webhook.MaxURLLength))
	_, err := strict.CheckURL(long)
	require.Error(t, err)
}

func TestPublic(t *testing.T) {
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "2001:4860:4860::8888", "64:ff9b::808:808"} {
		require.True(t, webhook.Public(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.100.1.1",
		"0.0.0.0", "::", "::1", "fe80::1", "fc00::1", "224.0.0.1", "::ffff:127.0.0.1", "203.0.113.7", "198.18.0.1",
		"240.0.0.1", "255.255.255.255", "0.1.2.3", "fec0::1", "64:ff9b::a00:1", "2002:a00:1::", "::10.0.0.1"} {
		require.False(t, webhook.Public(netip.MustParseAddr(a)), a)
	}
}

// The error says which range refused the address.
func TestCheckURLNamesTheRange(t *testing.T) {
	_, err := webhook.URLPolicy{}.CheckURL("https://[64:ff9b::a9fe:a9fe]/h")
	require.Error(t, err)
	msg := err.(*messaging.Error).Fields["url"]
	require.Contains(t, msg, "public internet address")
	require.Contains(t, msg, "169.254.169.254")
}

func TestCheckEvents(t *testing.T) {
	got, err := webhook.CheckEvents([]string{"survey.answered", "message.status", "survey.answered"})
	require.NoError(t, err)
	require.Equal(t, []webhook.EventType{webhook.MessageStatus, webhook.SurveyAnswered}, got)
	for _, bad := range [][]string{nil, {}, {"message.sent"}, {"message.status", "*"}} {
		_, err := webhook.CheckEvents(bad)
		require.True(t, messaging.IsCode(err, messaging.Invalid), "%q", bad)
	}
}

func TestEndpointSecretsDuringTheOverlap(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	e := webhook.Endpoint{Secret: "new", PreviousSecret: "old", PreviousUntil: now.Add(time.Hour)}
	require.Equal(t, []string{"new", "old"}, e.Secrets(now))
	require.Equal(t, []string{"new"}, e.Secrets(now.Add(time.Hour)))
	require.Equal(t, []string{"new"}, webhook.Endpoint{Secret: "new"}.Secrets(now))
}

func TestSubscribes(t *testing.T) {
	e := webhook.Endpoint{Events: []webhook.EventType{webhook.MessageStatus}}
	require.True(t, e.Subscribes(webhook.MessageStatus))
	require.False(t, e.Subscribes(webhook.CampaignStatus))
	now := time.Now()
	e.DisabledAt = &now
	require.False(t, e.Subscribes(webhook.MessageStatus), "a disabled endpoint takes nothing")
}
