package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/webhook"
)

// env returns a getenv over kv.
func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := loadConfig(env(nil))
	require.NoError(t, err)
	require.Equal(t, config{
		Addr: "127.0.0.1:8080", DatabaseURL: "sqlite://herald.db", MaxPending: 50_000,
		LogLevel: slog.LevelInfo, LogFormat: "text", SMPPWindow: 100, SMPPBinds: 1, ShutdownTimeout: 30 * time.Second,
		ReceiptTimeout: 48 * time.Hour,
	}, c)
}

func TestLoadConfigEverySetting(t *testing.T) {
	c, err := loadConfig(env(map[string]string{
		"HERALD_ADDR": "0.0.0.0:9000", "HERALD_DATABASE_URL": "postgres://u@db:5432/herald", "HERALD_DATABASE_MAX_CONNS": "16",
		"HERALD_ADMIN_TOKEN": "t", "HERALD_MAX_PENDING": "1000", "HERALD_LOG_LEVEL": "debug", "HERALD_LOG_FORMAT": "json",
		"HERALD_SMPP_ADDR": "smsc:2775", "HERALD_SMPP_SYSTEM_ID": "id", "HERALD_SMPP_PASSWORD": "pw",
		"HERALD_SMPP_WINDOW": "20", "HERALD_SMPP_BINDS": "4", "HERALD_SMPP_MAX_RATE": "150.5",
		"HERALD_SMPP_SUBMIT_ID_FORMAT": "hex", "HERALD_SMPP_RECEIPT_ID_FORMAT": "decimal",
		"HERALD_CHAT_URL": "https://chat.example", "HERALD_CHAT_TOKEN": "ct", "HERALD_CHAT_CALLBACK_SECRET": "s",
		"HERALD_SHUTDOWN_TIMEOUT": "5s", "HERALD_INSTANCE": "eu-1", "HERALD_CLAIM_LEASE": "30s",
		"HERALD_SMPP_VALIDITY": "6h", "HERALD_RECEIPT_TIMEOUT": "12h", "HERALD_RETENTION": "90d",
		"HERALD_WEBHOOK_ALLOW": "loopback,private",
	}))
	require.NoError(t, err)
	require.Equal(t, config{
		Addr: "0.0.0.0:9000", DatabaseURL: "postgres://u@db:5432/herald", DBMaxConns: 16, AdminToken: "t", MaxPending: 1000,
		LogLevel: slog.LevelDebug, LogFormat: "json",
		SMPPAddr: "smsc:2775", SMPPSystemID: "id", SMPPPassword: "pw", SMPPWindow: 20, SMPPBinds: 4, SMPPMaxRate: 150.5,
		SMPPSubmitIDs: smpp.IDHex, SMPPReceiptIDs: smpp.IDDecimal,
		ChatURL: "https://chat.example", ChatToken: "ct", ChatCallbackSecret: "s", ShutdownTimeout: 5 * time.Second,
		Instance: "eu-1", ClaimLease: 30 * time.Second, SMPPValidity: 6 * time.Hour, ReceiptTimeout: 12 * time.Hour,
		Retention: 90 * 24 * time.Hour, WebhookURLs: webhook.URLPolicy{AllowLoopbackHTTP: true, AllowPrivate: true},
	}, c)
}

func TestLoadConfigAcceptedValues(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, c config)
	}{
		{"sqlite path", map[string]string{"HERALD_DATABASE_URL": "sqlite:///var/lib/herald/herald.db"},
			func(t *testing.T, c config) { require.Equal(t, "sqlite:///var/lib/herald/herald.db", c.DatabaseURL) }},
		{"postgresql scheme", map[string]string{"HERALD_DATABASE_URL": "postgresql://u@db/herald"},
			func(t *testing.T, c config) { require.Equal(t, "postgresql://u@db/herald", c.DatabaseURL) }},
		{"any port", map[string]string{"HERALD_ADDR": ":0"},
			func(t *testing.T, c config) { require.Equal(t, ":0", c.Addr) }},
		{"spaces around numbers", map[string]string{"HERALD_MAX_PENDING": " 10 "},
			func(t *testing.T, c config) { require.Equal(t, 10, c.MaxPending) }},
		{"log level in capitals", map[string]string{"HERALD_LOG_LEVEL": "WARN"},
			func(t *testing.T, c config) { require.Equal(t, slog.LevelWarn, c.LogLevel) }},
		{"retention as a duration", map[string]string{"HERALD_RETENTION": "36h"},
			func(t *testing.T, c config) { require.Equal(t, 36*time.Hour, c.Retention) }},
		{"retention off by default", map[string]string{},
			func(t *testing.T, c config) { require.Zero(t, c.Retention) }},
		{"no rate limit", map[string]string{"HERALD_SMPP_MAX_RATE": "0"},
			func(t *testing.T, c config) { require.Zero(t, c.SMPPMaxRate) }},
		{"receipt timeout from a short validity", map[string]string{"HERALD_SMPP_VALIDITY": "10m"},
			func(t *testing.T, c config) { require.Equal(t, 20*time.Minute, c.ReceiptTimeout) }},
		{"receipt timeout from a validity of hours", map[string]string{"HERALD_SMPP_VALIDITY": "6h"},
			func(t *testing.T, c config) { require.Equal(t, 7*time.Hour, c.ReceiptTimeout) }},
		{"receipt timeout not past its default", map[string]string{"HERALD_SMPP_VALIDITY": "72h"},
			func(t *testing.T, c config) { require.Equal(t, 48*time.Hour, c.ReceiptTimeout) }},
		{"webhooks to loopback only", map[string]string{"HERALD_WEBHOOK_ALLOW": " Loopback "},
			func(t *testing.T, c config) {
				require.Equal(t, webhook.URLPolicy{AllowLoopbackHTTP: true}, c.WebhookURLs)
			}},
		{"webhooks to private networks only", map[string]string{"HERALD_WEBHOOK_ALLOW": "private"},
			func(t *testing.T, c config) { require.Equal(t, webhook.URLPolicy{AllowPrivate: true}, c.WebhookURLs) }},
		{"admin token kept as given", map[string]string{"HERALD_ADMIN_TOKEN": " secret "},
			func(t *testing.T, c config) { require.Equal(t, " secret ", c.AdminToken) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := loadConfig(env(tt.env))
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestLoadConfigRejects(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"address without port", map[string]string{"HERALD_ADDR": "localhost"}, `HERALD_ADDR="localhost": want host:port`},
		{"address with a port name", map[string]string{"HERALD_ADDR": "localhost:http"}, "HERALD_ADDR"},
		{"address with a port out of range", map[string]string{"HERALD_ADDR": "localhost:70000"}, "HERALD_ADDR"},
		{"unknown database", map[string]string{"HERALD_DATABASE_URL": "mysql://x"}, "HERALD_DATABASE_URL: want sqlite://path or postgres://"},
		{"database path without scheme", map[string]string{"HERALD_DATABASE_URL": "herald.db"}, "HERALD_DATABASE_URL"},
		{"pool size zero", map[string]string{"HERALD_DATABASE_MAX_CONNS": "0"}, "HERALD_DATABASE_MAX_CONNS"},
		{"max pending zero", map[string]string{"HERALD_MAX_PENDING": "0"}, `HERALD_MAX_PENDING="0": want a positive integer`},
		{"max pending negative", map[string]string{"HERALD_MAX_PENDING": "-3"}, "HERALD_MAX_PENDING"},
		{"max pending not a number", map[string]string{"HERALD_MAX_PENDING": "lots"}, "HERALD_MAX_PENDING"},
		{"max pending with a unit", map[string]string{"HERALD_MAX_PENDING": "50k"}, "HERALD_MAX_PENDING"},
		{"log level", map[string]string{"HERALD_LOG_LEVEL": "loud"}, "HERALD_LOG_LEVEL"},
		{"log format", map[string]string{"HERALD_LOG_FORMAT": "xml"}, "HERALD_LOG_FORMAT"},
		{"smpp address", map[string]string{"HERALD_SMPP_ADDR": "smsc"}, "HERALD_SMPP_ADDR"},
		{"smpp window negative", map[string]string{"HERALD_SMPP_WINDOW": "-1"}, "HERALD_SMPP_WINDOW"},
		{"smpp window fraction", map[string]string{"HERALD_SMPP_WINDOW": "1.5"}, "HERALD_SMPP_WINDOW"},
		{"smpp id format", map[string]string{"HERALD_SMPP_RECEIPT_ID_FORMAT": "octal"}, "HERALD_SMPP_RECEIPT_ID_FORMAT"},
		{"smpp rate negative", map[string]string{"HERALD_SMPP_MAX_RATE": "-5"}, "HERALD_SMPP_MAX_RATE"},
		{"smpp rate not a number", map[string]string{"HERALD_SMPP_MAX_RATE": "NaN"}, "HERALD_SMPP_MAX_RATE"},
		{"smpp rate infinite", map[string]string{"HERALD_SMPP_MAX_RATE": "+Inf"}, "HERALD_SMPP_MAX_RATE"},
		{"chat url without scheme", map[string]string{"HERALD_CHAT_URL": "chat.example", "HERALD_CHAT_CALLBACK_SECRET": "s"}, "HERALD_CHAT_URL"},
		{"chat without callback secret", map[string]string{"HERALD_CHAT_URL": "https://chat.example"}, "HERALD_CHAT_CALLBACK_SECRET is required"},
		{"chat without token", map[string]string{"HERALD_CHAT_URL": "https://chat.example", "HERALD_CHAT_CALLBACK_SECRET": "s"}, "HERALD_CHAT_TOKEN is required"},
		{"shutdown timeout without unit", map[string]string{"HERALD_SHUTDOWN_TIMEOUT": "30"}, "HERALD_SHUTDOWN_TIMEOUT"},
		{"shutdown timeout zero", map[string]string{"HERALD_SHUTDOWN_TIMEOUT": "0s"}, "HERALD_SHUTDOWN_TIMEOUT"},
		{"validity past 99 days", map[string]string{"HERALD_SMPP_VALIDITY": "2400h"}, "HERALD_SMPP_VALIDITY"},
		{"receipt timeout past the receipt retention", map[string]string{"HERALD_RECEIPT_TIMEOUT": "168h"}, "HERALD_RECEIPT_TIMEOUT"},
		{"receipt timeout not a duration", map[string]string{"HERALD_RECEIPT_TIMEOUT": "2d"}, "HERALD_RECEIPT_TIMEOUT"},
		{"claim lease under a second", map[string]string{"HERALD_CLAIM_LEASE": "500ms"}, "HERALD_CLAIM_LEASE"},
		{"claim lease without unit", map[string]string{"HERALD_CLAIM_LEASE": "10"}, "HERALD_CLAIM_LEASE"},
		{"retention under a minute", map[string]string{"HERALD_RETENTION": "30s"}, "HERALD_RETENTION"},
		{"retention of no days", map[string]string{"HERALD_RETENTION": "0d"}, "HERALD_RETENTION"},
		{"retention without unit", map[string]string{"HERALD_RETENTION": "90"}, "HERALD_RETENTION"},
		{"webhook allowance unknown", map[string]string{"HERALD_WEBHOOK_ALLOW": "loopback,everything"}, "HERALD_WEBHOOK_ALLOW"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(env(tt.env))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestInstanceName: HERALD_INSTANCE when set, else the host name and the
// configured address (the same after a restart), else none (a random name)
// when the address asks for any port.
func TestInstanceName(t *testing.T) {
	host := func() (string, error) { return "mx1", nil }
	tests := []struct {
		name string
		c    config
		want string
	}{
		{"set", config{Instance: "eu-1", Addr: "0.0.0.0:8080"}, "eu-1"},
		{"host and address", config{Addr: "0.0.0.0:8080"}, "mx1/0.0.0.0:8080"},
		{"any port", config{Addr: "127.0.0.1:0"}, ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.c.instanceName(host), tt.name)
	}
	require.Equal(t, "localhost/:8080", config{Addr: ":8080"}.instanceName(func() (string, error) { return "", errors.New("no name") }))
}

func TestLoadConfigReportsEveryBadValue(t *testing.T) {
	_, err := loadConfig(env(map[string]string{"HERALD_MAX_PENDING": "x", "HERALD_LOG_LEVEL": "loud", "HERALD_ADDR": "nowhere"}))
	require.ErrorContains(t, err, "HERALD_MAX_PENDING")
	require.ErrorContains(t, err, "HERALD_LOG_LEVEL")
	require.ErrorContains(t, err, "HERALD_ADDR")
}

func TestServeFlagsOverrideVariables(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want config
	}{
		{"flag over variable", []string{"--addr", "127.0.0.1:9999", "-database-url=sqlite://x.db"},
			map[string]string{"HERALD_ADDR": "127.0.0.1:7000", "HERALD_MAX_PENDING": "7"},
			config{Addr: "127.0.0.1:9999", DatabaseURL: "sqlite://x.db", MaxPending: 7}},
		{"variable without flag", nil,
			map[string]string{"HERALD_ADDR": "127.0.0.1:7000"},
			config{Addr: "127.0.0.1:7000", DatabaseURL: "sqlite://herald.db", MaxPending: 50_000}},
		{"flags alone", []string{"--max-pending", "12", "--log-format", "json"}, nil,
			config{Addr: "127.0.0.1:8080", DatabaseURL: "sqlite://herald.db", MaxPending: 12}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			for _, f := range serveFlags() {
				fs.String(f.name, "", f.env)
			}
			require.NoError(t, fs.Parse(tt.args))
			c, err := loadConfig(withFlags(fs, env(tt.env)))
			require.NoError(t, err)
			require.Equal(t, tt.want, config{Addr: c.Addr, DatabaseURL: c.DatabaseURL, MaxPending: c.MaxPending})
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		err  string
	}{
		{"no command", nil, nil, 2, "no command"},
		{"unknown command", []string{"launch"}, nil, 2, `unknown command "launch"`},
		{"unknown flag", []string{"serve", "--colour"}, nil, 2, "flag provided but not defined"},
		{"stray argument", []string{"serve", "now"}, nil, 2, `unexpected argument "now"`},
		{"bad variable", []string{"serve"}, map[string]string{"HERALD_MAX_PENDING": "lots"}, 1, "HERALD_MAX_PENDING"},
		{"bad flag value", []string{"serve", "--log-level", "loud"}, nil, 1, "HERALD_LOG_LEVEL"},
		{"simulate without a simulator", []string{"simulate"}, nil, 2, "simulate needs smsc or chat"},
		{"unknown simulator", []string{"simulate", "mms"}, nil, 2, `simulate "mms"`},
		{"help", []string{"help"}, nil, 0, ""},
		{"serve help", []string{"serve", "-h"}, nil, 0, ""},
		{"simulator help", []string{"simulate", "smsc", "-h"}, nil, 0, ""},
		{"unknown simulator flag", []string{"simulate", "chat", "-colour"}, nil, 2, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(t.Context(), tt.args, env(tt.env), io.Discard, &stderr)
			require.Equal(t, tt.code, code)
			if tt.err != "" {
				require.Contains(t, stderr.String(), tt.err)
			}
		})
	}
}

// TestPaceConcurrency: under HERALD_SMPP_MAX_RATE the SMS sends in flight
// are those the rate lets through in a quarter of the send deadline, at
// least one, at most the default.
func TestPaceConcurrency(t *testing.T) {
	for rate, want := range map[float64]int{0: 512, 1: 15, 5: 75, 0.01: 1, 34: 510, 1000: 512} {
		require.Equal(t, want, paceConcurrency(rate), "rate %v", rate)
	}
}

// TestSecretKeyConfig: HERALD_SECRET_KEY and HERALD_SECRET_KEY_PREVIOUS
// take keys in base64 or hex; a malformed one is refused without its value
// in the message, and previous keys need a current one.
func TestSecretKeyConfig(t *testing.T) {
	cur, err := secretbox.NewKey()
	require.NoError(t, err)
	prev := strings.Repeat("ab", 32)
	cfg, err := loadConfig(env(map[string]string{"HERALD_SECRET_KEY": cur, "HERALD_SECRET_KEY_PREVIOUS": prev + ", " + cur}))
	require.NoError(t, err)
	box, err := cfg.secretBox()
	require.NoError(t, err)
	k, err := secretbox.ParseKey(cur)
	require.NoError(t, err)
	p, err := secretbox.ParseKey(prev)
	require.NoError(t, err)
	require.Equal(t, k.ID(), box.KeyID())
	require.True(t, box.Has(p.ID()))

	cfg, err = loadConfig(env(nil))
	require.NoError(t, err)
	box, err = cfg.secretBox()
	require.NoError(t, err)
	require.Nil(t, box)

	_, err = loadConfig(env(map[string]string{"HERALD_SECRET_KEY": "correct-horse-battery-staple"}))
	require.ErrorContains(t, err, "HERALD_SECRET_KEY: want 32 random bytes")
	require.NotContains(t, err.Error(), "correct-horse")
	_, err = loadConfig(env(map[string]string{"HERALD_SECRET_KEY": cur, "HERALD_SECRET_KEY_PREVIOUS": prev + ",tr0ub4dor"}))
	require.ErrorContains(t, err, "HERALD_SECRET_KEY_PREVIOUS: key 2")
	require.NotContains(t, err.Error(), "tr0ub4dor")
	_, err = loadConfig(env(map[string]string{"HERALD_SECRET_KEY_PREVIOUS": prev}))
	require.ErrorContains(t, err, "without HERALD_SECRET_KEY")
}

// TestSecretsNewKey: herald secrets new-key prints a new key each time,
// one HERALD_SECRET_KEY takes.
func TestSecretsNewKey(t *testing.T) {
	var a, b, errOut bytes.Buffer
	require.Equal(t, 0, run(t.Context(), []string{"secrets", "new-key"}, env(nil), &a, &errOut), errOut.String())
	require.Equal(t, 0, run(t.Context(), []string{"secrets", "new-key"}, env(nil), &b, &errOut), errOut.String())
	require.NotEqual(t, a.String(), b.String())
	_, err := loadConfig(env(map[string]string{"HERALD_SECRET_KEY": a.String()}))
	require.NoError(t, err)
	require.Equal(t, 2, run(t.Context(), []string{"secrets", "shred"}, env(nil), &a, &errOut))
	require.Equal(t, 1, run(t.Context(), []string{"secrets", "rotate"}, env(nil), &a, &errOut))
	require.Contains(t, errOut.String(), "set HERALD_SECRET_KEY to the new key")
}
